package fit

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"slices"
	"strings"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/loader"
	"github.com/faster-training/faster/pipeline"
	"github.com/faster-training/faster/shard"
	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/storage"
	"github.com/faster-training/faster/train"
)

// Data is a run's training and test data, opened once for one rank: the
// one place that tells in-memory IDX images from data read through the
// input pipeline (packed shards, an ImageFolder tree). Either way the
// engine sees streams.
type Data struct {
	path        string
	rank, world int
	// IDX: the images in memory.
	mem, memTest *train.Images
	// Packed or ImageFolder: the loader's train and eval recipes, and the
	// FixRes calibration pipeline when asked for.
	train, test, calib *loaderStream
	names, testNames   []string // class names, when the data records them
	skipped            []loader.BadSample
	// decodeNote says why training images are decoded on the cpu when
	// data.device was left to follow a GPU model.device ("": they are not,
	// or it was asked).
	decodeNote string
}

// DataOptions are how OpenDataWith opens the data beyond the Config.
type DataOptions struct {
	// NewBatchDecoder opens the training pipeline's batch decoder when its
	// images are decoded on the model's device (loader.Options
	// .NewBatchDecoder); nil: the one registered for the device's kind
	// (package gpudecode registers nvJPEG's for cuda). Tests inject a
	// stand-in (loader.CPUBatchDecoder with Mapped).
	NewBatchDecoder func(loader.DecoderConfig) (loader.BatchDecoder, error)
}

// DecodeDevice is where the training images are decoded: "cpu", or the
// GPU the model trains on ("cuda:0"), whose batches go to the engine in
// device memory (train.DeviceRows); IDX data is "cpu" (in memory).
func (d *Data) DecodeDevice() string {
	if d.train != nil {
		if bd := d.train.l.BatchDecoder(); bd != nil {
			return bd.Device()
		}
	}
	return "cpu"
}

// gpuDecode is where the training images are decoded on a GPU: dev
// ("cuda:0"; "" for the cpu), the share of each batch decoded on the CPU
// beside it, the stage's opener (nil: the registered one) and the layout
// of its rows; cpu is the training batches' layout where they are
// decoded on the cpu instead.
type gpuDecode struct {
	dev    string
	share  float64
	open   func(loader.DecoderConfig) (loader.BatchDecoder, error)
	layout loader.Layout
	cpu    loader.Layout
}

// trainLayout is the layout the training images' batches reach the
// model in: data.layout when set; left out, u8-hwc for a GPU model fed by
// the CPU decoder (a quarter of the bytes to copy, normalised on the GPU
// in the loader's arithmetic: train.ByteBatch.Torch) unless
// RandomErasing, which works on the float tensor, is in the recipe;
// f32-chw otherwise (a GPU stage's rows are normalised where they are
// decoded). The test images and FixRes's calibration batches follow it
// (no erasing there, never a stage).
func (c *Config) trainLayout(erasing, stage bool) loader.Layout {
	if l := c.Data.Layout; l != "" {
		return l
	}
	if model, _ := ParseDevice(c.Model.Device); isCUDA(model) && !erasing && !stage {
		return loader.U8HWC
	}
	return loader.F32CHW
}

// InputLayout is the layout of the loader's training batches: u8-hwc
// when their bytes are normalised by the model's backend, f32-chw when
// the loader normalised them; "" for IDX data (in memory, no loader).
func (d *Data) InputLayout() loader.Layout {
	if d.train != nil {
		return d.train.l.Format(0).Layout
	}
	return ""
}

// DecodeShared is the training images the GPU stage gave the CPU as its
// share (data.cpu_share) since the data opened.
func (d *Data) DecodeShared() int64 {
	if d.train != nil {
		return d.train.l.SharedRows()
	}
	return 0
}

// DecodeFallbacks is the training images the GPU decoder handed to the
// CPU decoder (progressive or CMYK JPEGs, PNGs) since the data opened.
func (d *Data) DecodeFallbacks() int64 {
	if d.train != nil {
		return d.train.l.Fallbacks()
	}
	return 0
}

// decodeOn is where cfg's training images are to be decoded: "" for
// the cpu, else the model's GPU ("cuda:0"); auto when data.device was
// left out (a GPU model then decodes on its GPU where the loader can,
// and falls back to the cpu otherwise). Validate has checked both names.
func decodeOn(cfg *Config) (dev string, auto bool) {
	model, _ := ParseDevice(cfg.Model.Device)
	switch cfg.Data.Device {
	case "":
		if isCUDA(model) {
			return model, true
		}
		return "", false
	case "cpu":
		return "", false
	}
	return model, false
}

// OpenData opens cfg.Data for rank of world ranks (0 of 1 without ddp):
// an IDX directory into memory (normalised as torchvision's examples
// normalise Fashion-MNIST and MNIST), anything else through the loader's
// train and eval recipes at cfg.Data.Resolution. Settings that do not
// apply to the data found are a *ConfigError.
func OpenData(ctx context.Context, cfg *Config, rank, world int) (*Data, error) {
	return OpenDataWith(ctx, cfg, rank, world, DataOptions{})
}

// OpenDataWith is OpenData with options. The training images are decoded
// where data.device says: left out, on the GPU of a GPU model.device when
// the loader can (encoded images under the train recipe without
// augment ops), else on the cpu, saying why in the run's notes; the test
// and calibration images on the cpu.
func OpenDataWith(ctx context.Context, cfg *Config, rank, world int, opts DataOptions) (*Data, error) {
	dc := cfg.Data
	d := &Data{path: dc.Path, rank: rank, world: world}
	lo, err := cfg.loaderSpec(max(cfg.Batch/world, 1), rank, world).Options()
	if err != nil {
		var se *loader.SpecError
		if errors.As(err, &se) {
			ce := &ConfigError{}
			for _, p := range se.Problems {
				ce.Problems = append(ce.Problems, augment.Problem{Field: "data." + p.Field, Msg: p.Msg})
			}
			return nil, ce
		}
		return nil, err
	}
	lo.Batch = cfg.Batch / world
	if dc.Resolution == 0 {
		// The data's own side (openStreams): the eval resize a named
		// recipe derives from the resolution is not known yet.
		lo.Resolution, lo.Resize = 0, dc.Recipe.Resize
	}
	if isIDX(dc.Path) {
		if dc.LabelOffset != 0 {
			return nil, configErrorf("data.label_offset", "applies to packed data, not IDX")
		}
		if lo.Augment != nil || lo.Erasing != nil {
			return nil, configErrorf("data.recipe", "augment_recipe, auto_augment, affine_*, rotate_degrees, color_jitter, grayscale_prob, blur_* and erasing_prob apply to packed or ImageFolder data, not IDX")
		}
		var bad []loader.BadSample
		d.mem, d.names, bad, err = loadImages(dc.Path, "train", dc.Limit, lo.BadData)
		d.skipped = append(d.skipped, bad...)
		if err != nil {
			return d, err
		}
		d.memTest, d.testNames, bad, err = loadImages(dc.Path, "test", dc.TestLimit, lo.BadData)
		d.skipped = append(d.skipped, bad...)
		return d, err
	}
	if dc.Limit > 0 || dc.TestLimit > 0 {
		return nil, configErrorf("data.limit", "limit and test_limit apply to IDX data only")
	}
	// The test and calibration pipelines: the cpu. The CPU share is the
	// GPU stage's, on the training images.
	lo.Device, lo.NewBatchDecoder, lo.CPUShare = "", nil, 0
	lo.Layout = cfg.trainLayout(false, false) // the test pipeline's; openStreams sets the train and calibration ones'
	dev, auto := decodeOn(cfg)
	gpu := gpuDecode{dev: dev, share: dc.CPUShare, open: opts.NewBatchDecoder,
		layout: cfg.trainLayout(lo.Erasing != nil, true), cpu: cfg.trainLayout(lo.Erasing != nil, false)}
	if d.train, d.test, err = openStreams(ctx, dc.Path, dc.TestPath, dc.Resolution, lo, dc.Schedule, dc.Progressive, cfg.Epochs, gpu); err != nil {
		if !auto {
			return nil, err
		}
		// A GPU model's images on its GPU where they can be: not, here.
		var err2 error
		if d.train, d.test, err2 = openStreams(ctx, dc.Path, dc.TestPath, dc.Resolution, lo, dc.Schedule, dc.Progressive, cfg.Epochs, gpuDecode{cpu: gpu.cpu}); err2 != nil {
			return nil, err2
		}
		d.decodeNote = fmt.Sprintf("training images decoded on the cpu, not %s: %v", dev, err)
	}
	if cfg.Eval.FixResBN > 0 {
		lo.Manifest = d.train.manifest
		if d.calib, err = openCalibration(ctx, dc.Path, d.test.full, lo); err != nil {
			d.Close()
			return nil, err
		}
	}
	d.names, d.testNames = d.train.l.Classes(), d.test.l.Classes()
	return d, nil
}

// Close closes the pipelines.
func (d *Data) Close() error {
	for _, s := range []*loaderStream{d.train, d.test, d.calib} {
		if s != nil {
			s.l.Close()
		}
	}
	return nil
}

// Bad lists the damaged samples skipped so far (under a skip policy):
// those left out of IDX data as it loaded, and those the pipelines
// skipped, in the order they were met.
func (d *Data) Bad() []loader.BadSample {
	list := slices.Clone(d.skipped)
	for _, s := range []*loaderStream{d.train, d.test} {
		if s != nil {
			list = append(list, s.l.Bad()...)
		}
	}
	return list
}

// sizes returns the input's channels and side (the model is built for
// the first epoch's), the
// training and test images over all ranks and the samples the
// checkpoint records.
func (d *Data) sizes() (inC, side, trainLen, testLen, samples int) {
	if d.mem != nil {
		return d.mem.C, d.mem.H, d.mem.Len(), d.memTest.Len(), d.mem.Len()
	}
	inC, side, _ = d.train.Shape() // the first epoch's side, under a resolution schedule
	return inC, side, d.train.Len() * d.world, d.test.Len() * d.world, d.train.l.DatasetLen()
}

// idxStats are the per-pixel mean and standard deviation (of v/255) of
// the training images of Fashion-MNIST and of MNIST, as torchvision's
// examples normalise them.
var idxStats = map[bool][2]float32{true: {0.2860, 0.3530}, false: {0.1307, 0.3081}}

// loadImages reads one split of an IDX directory into memory, normalised
// with the statistics of the dataset it is (Fashion-MNIST when its class
// names are, else MNIST), and returns its class names. A damaged image (its
// label outside the classes) stops it under the stop policy, naming the
// labels file and the label's offset; under skip it is left out and
// returned in bad, within the policy's budget.
func loadImages(dir, split string, limit int, policy loader.BadDataPolicy) (_ *train.Images, classes []string, bad []loader.BadSample, _ error) {
	src, err := source.OpenIDX(dir, split)
	if err != nil {
		return nil, nil, nil, err
	}
	h, w := src.Size()
	items := src.Items()
	if limit > 0 && limit < len(items) {
		items = items[:limit]
	}
	st := idxStats[slices.Equal(src.Classes(), source.FashionMNISTClasses)]
	d := &train.Images{C: 1, H: h, W: w, Mean: st[0], Std: st[1], Labels: make([]int, 0, len(items)), Pixels: make([]byte, 0, len(items)*h*w)}
	var first error
	for i, it := range items {
		if err := src.Damage(i); err != nil {
			if !policy.Skip {
				return nil, nil, nil, err
			}
			bad = append(bad, source.DamageOf(err, dir, -1, it.Key))
			if first == nil {
				first = err
			}
			continue
		}
		d.Labels = append(d.Labels, it.Label)
		d.Pixels = append(d.Pixels, src.Pixels(i)...)
	}
	switch k := len(bad); {
	case k > 0 && len(d.Labels) == 0:
		return nil, nil, bad, fmt.Errorf("%s split %s: every one of its %d images is bad (nothing to train on); the first: %w", dir, split, k, first)
	case policy.MaxBad > 0 && k > policy.MaxBad || policy.MaxBadFraction > 0 && float64(k) > policy.MaxBadFraction*float64(len(items)):
		return nil, nil, bad, fmt.Errorf("%w: %d of the %d images of %s split %s exceed the budget (max %d, fraction %g); the first: %w",
			loader.ErrTooManyBad, k, len(items), dir, split, policy.MaxBad, policy.MaxBadFraction, first)
	}
	return d, src.Classes(), bad, nil
}

// loaderStream feeds the trainer from an input pipeline: the loader's
// train or eval recipe decodes and augments ahead of the training step.
type loaderStream struct {
	l      *loader.Loader
	res    int   // of the epoch being trained (SetEpoch)
	full   int   // the resolution without a schedule
	sched  []int // the loader's resolution schedule, if any
	labels []int
	// manifest is the packed dataset's manifest, read once (nil: none).
	manifest *shard.Manifest
}

// SetEpoch makes Shape that of epoch e (0-based) under the resolution
// schedule.
func (s *loaderStream) SetEpoch(e int) { s.res = resolutionAt(s.sched, e, s.full) }

var _ train.Stream = (*loaderStream)(nil)

func (s *loaderStream) Shape() (c, h, w int) {
	c, _, _ = s.l.Shape(0) // one-channel data, Grayscale(1): 1
	return c, s.res, s.res
}

func (s *loaderStream) Len() int { return s.l.Len() }

// Steps is the loader's StepsPerEpoch: the same on every rank, from every
// shard's record count (not this rank's share), so no rank ends its epoch
// while the others wait in an all-reduce.
func (s *loaderStream) Steps() int { return s.l.StepsPerEpoch() }

// Epoch yields epoch e's batches from batch skip on: f32-chw rows as
// the trainer's floats, u8-hwc rows as its bytes (train.ByteBatch, in
// the loader's arithmetic: Torch), normalised by the model's backend.
func (s *loaderStream) Epoch(ctx context.Context, e, skip int) iter.Seq2[train.Batch, error] {
	if s.l.BatchDecoder() != nil {
		return s.epochStaged(ctx, e, skip)
	}
	f := s.l.Format(e)
	per := f.C * f.H * f.W // values a row
	return func(yield func(train.Batch, error) bool) {
		i := 0
		for b, err := range s.l.IterEpoch(ctx, e) {
			if err != nil {
				yield(train.Batch{}, err)
				return
			}
			if i++; i <= skip || b.Valid == 0 {
				b.Release()
				continue
			}
			s.labels = s.labels[:0]
			for j := range b.Valid {
				s.labels = append(s.labels, b.Items[j].Label)
			}
			tb := train.Batch{Y: s.labels}
			if f.Layout == loader.U8HWC {
				tb.Bytes = train.ByteBatch{Pixels: b.Data[:b.Valid*per], N: b.Valid, H: f.H, W: f.W, C: f.C,
					Mean: f.Mean[:], Std: f.Std[:], Torch: true}
			} else {
				tb.X = pipeline.Float32s(b.Data)[:b.Valid*per]
			}
			ok := yield(tb, nil)
			b.Release()
			if !ok {
				return
			}
		}
	}
}

// epochStaged is Epoch through the loader's batch-decode stage: a batch
// in device memory goes to the trainer as train.DeviceRows (the engine
// reads it there and gives the buffer back with Done), one in host memory
// (a CPU stand-in) as floats, given back after the step.
func (s *loaderStream) epochStaged(ctx context.Context, e, skip int) iter.Seq2[train.Batch, error] {
	return func(yield func(train.Batch, error) bool) {
		i := 0
		for sb, err := range s.l.IterStaged(ctx, e) {
			if err != nil {
				yield(train.Batch{}, err)
				return
			}
			if i++; i <= skip || sb.Valid == 0 {
				sb.Release()
				continue
			}
			s.labels = s.labels[:0]
			for j := range sb.Valid {
				s.labels = append(s.labels, sb.Items[j].Label)
			}
			f := sb.Format
			var b train.Batch
			if host := sb.Host(); host != nil {
				if f.Layout != loader.F32CHW {
					sb.Release()
					yield(train.Batch{}, fmt.Errorf("fit: staged host rows of layout %s: training takes %s", f.Layout, loader.F32CHW))
					return
				}
				b = train.Batch{X: pipeline.Float32s(host)[:sb.Valid*f.C*f.H*f.W], Y: s.labels}
			} else if db, ok := sb.Buffer.(loader.DeviceBatchBuffer); ok {
				b = train.Batch{Y: s.labels, Rows: &train.DeviceRows{Device: db.Device(), Ptr: db.Ptr(), N: sb.Valid,
					C: f.C, H: f.H, W: f.W, RowBytes: f.RowBytes, U8: f.Layout == loader.U8HWC,
					Mean: f.Mean[:], Std: f.Std[:], Torch: true, Done: sb.Release}}
			} else {
				sb.Release()
				yield(train.Batch{}, fmt.Errorf("fit: the %s batch decoder's buffer %T is neither host memory nor addressable device memory", s.l.BatchDecoder().Device(), sb.Buffer))
				return
			}
			ok := yield(b, nil)
			if b.Rows == nil {
				sb.Release()
			}
			if !ok {
				return
			}
		}
	}
}

// isIDX reports whether data is an MNIST-style IDX directory.
func isIDX(data string) bool {
	k, err := source.Detect(data)
	return err == nil && k == "idx"
}

// IsIDX reports whether path is an MNIST-style IDX directory, the data
// OpenData holds in memory.
func IsIDX(path string) bool { return isIDX(path) }

// openStreams opens the train and test pipelines of a packed dataset (its
// train and test splits; a local directory or a storage URL such as
// s3://bucket/prefix) or of an ImageFolder tree (with testData for the
// test images), at resolution res (0: the packed images' width, else 224).
// base gives the options both share: the local batch, the seed (of the
// train pipeline), this rank's share (ShardIdx of NumShards), the labels'
// offset and class count. sched is the train pipeline's resolution
// schedule (nil: none), or progressive (ProgressiveSchedule from res over
// epochs); the test pipeline stays at res.
//
// dev is where the training images are decoded ("": the cpu; "cuda:0":
// a batch-decode stage on that GPU, opened by newDecoder when not nil).
func openStreams(ctx context.Context, data, testData string, res int, base loader.Options, sched []int, progressive bool, epochs int, gpu gpuDecode) (trainS, testS *loaderStream, err error) {
	if !strings.ContainsAny(data, "*?[") && !storage.IsURL(data) { // a glob of shards is the loader's to match
		if _, err := os.Stat(data); err != nil {
			return nil, nil, err
		}
	}
	// The manifest is read once: the width, the train and test pipelines
	// (and the calibration one: base) take it from here.
	packed, evalSplit := false, "test"
	if m, err := shard.LoadManifestAt(ctx, data); err == nil && len(m.Splits) > 0 {
		packed, base.Manifest = true, m
		if res == 0 {
			res = shard.PackedWidthOf(ctx, data, m, "train", base.ShardIdx)
		}
		if testData == "" {
			testData = data
		}
	} else if sp := shard.EvalSplit(data); sp != "" {
		// TensorFlow's ImageNet shards: train-* and validation-* side by side.
		packed, evalSplit = true, sp
		if testData == "" {
			testData = data
		}
	}
	if res == 0 {
		res = shard.ImageSide(data) // CIFAR's 32
	}
	if res == 0 {
		res = 224
	}
	if testData == "" {
		return nil, nil, configErrorf("data.test_path", "is required: %s is not a packed dataset with a test split", data)
	}
	if progressive {
		sched = ProgressiveSchedule(res, epochs)
	}
	to := base
	to.Transform, to.Resolution, to.Drop, to.Split, to.Schedule, to.Layout = loader.Train, res, true, "train", sched, gpu.cpu
	if gpu.dev != "" {
		to.Device, to.NewBatchDecoder, to.CPUShare, to.Layout = gpu.dev, gpu.open, gpu.share, gpu.layout
	}
	tl, err := loader.OpenContext(ctx, data, to)
	if err != nil {
		return nil, nil, err
	}
	split := "train"
	if packed && testData == data {
		split = evalSplit
	}
	eo := base
	eo.Transform, eo.Resolution, eo.Split, eo.Seed = loader.Eval, res, split, 0
	eo.Erasing = nil // the train recipe's alone: its test images may travel as bytes
	if testData != data {
		eo.Manifest = nil // another dataset's
	}
	el, err := loader.OpenContext(ctx, testData, eo)
	if err != nil {
		tl.Close()
		return nil, nil, fmt.Errorf("test data: %w", err)
	}
	return &loaderStream{l: tl, res: resolutionAt(sched, 0, res), full: res, sched: sched, manifest: base.Manifest}, &loaderStream{l: el, res: res, full: res}, nil
}

// openCalibration opens the training images of data under the eval
// recipe at the test resolution res, shuffled, in whole batches of this
// rank's share (base as for openStreams): FixRes's recalibration batches.
func openCalibration(ctx context.Context, data string, res int, base loader.Options) (*loaderStream, error) {
	co := base
	co.Transform, co.Resolution, co.Split, co.Shuffle, co.Drop = loader.Eval, res, "train", loader.ShuffleOn, true
	co.Erasing = nil // the train recipe's alone: the calibration images may travel as bytes
	l, err := loader.OpenContext(ctx, data, co)
	if err != nil {
		return nil, fmt.Errorf("fixres_bn: %w", err)
	}
	return &loaderStream{l: l, res: res, full: res}, nil
}
