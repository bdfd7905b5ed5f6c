// Package loader builds the Faster Training study's ImageNet input pipelines on top of
// package pipeline: the train recipe (decode with random-resized-crop to
// the training resolution, random horizontal flip, normalise) and the eval
// recipe (resize the shorter edge to 256/224 of the resolution, centre crop,
// normalise), sharded for data-parallel ranks, with a per-epoch resolution
// schedule for training at a lower resolution than testing (FixRes).
//
// The loader knows no container format: shard.Open opens the path or URL
// (ImageFolder, LMDB, WebDataset, TFRecord shards, local or under a
// storage URL) as a source.Indexed or a source.Streaming dataset, and the
// recipes are built over those two interfaces only.
//
// Shape of the pipeline:
//
//	indexed:    positions ─permutation(seed, epoch)─stride(n,i)─► read (ParallelMap, io) ─► decode+augment (ParallelMap, Auto)
//	streaming:  files ─shard(n,i)─shuffle─► interleave(read records) ─► shuffle buffer ─► decode+augment
//	              ─► batch (pooled arena, or the caller's memory: float32 CHW or uint8 HWC) ─► prefetch
//
// A context carrying a pipeline.Allocator (pipeline.WithAllocator) makes the
// batch stage write its rows into the allocator's memory instead of its own
// arenas: package serve passes its shared-memory ring, so rows are decoded
// straight into the slot the consumer reads.
//
// Every sample's augmentation draws from its own RNG, seeded by (seed,
// epoch, sample id), so results do not depend on the number of workers or
// on which rank decodes the sample.
package loader

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/internal/sysmem"
	"github.com/faster-training/faster/pipeline"
	"github.com/faster-training/faster/shard"
	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/storage"
)

// Transform names a recipe.
type Transform string

// The recipes.
const (
	Train Transform = "train" // random-resized-crop, flip, normalise
	Eval  Transform = "eval"  // shorter edge to Resolution*256/224, centre crop, normalise
	None  Transform = "none"  // no decode: encoded bytes only (measures reading)
)

// Layout is the pixel layout of a batch's arena.
type Layout string

// The layouts.
const (
	F32CHW Layout = "f32-chw" // float32, channels first, normalised (what a model takes)
	U8HWC  Layout = "u8-hwc"  // uint8, interleaved (normalise on the accelerator)
)

// Options configure a Loader. The zero value of each field picks the
// default shown.
type Options struct {
	Transform  Transform // Train
	Resolution int       // output side in pixels; 224
	// Schedule, if set, gives the resolution per epoch (epoch i uses
	// Schedule[min(i, len-1)]), overriding Resolution: FixRes-style
	// training at low resolution first.
	Schedule  []int
	Batch     int    // 256
	Workers   int    // decode workers; 0 = pipeline.Auto within GOMAXPROCS
	NumShards int    // data-parallel world size; 1
	ShardIdx  int    // this rank; 0
	Seed      uint64 // shuffle and augmentation seed
	// Shuffle says whether each epoch reads the samples in a new random
	// order (files, buffer, or global permutation, drawn from Seed and the
	// epoch). The default, ShuffleAuto, shuffles training data whatever the
	// transform (Train and None) and keeps the order of Eval.
	Shuffle       ShuffleMode
	ShuffleBuffer int    // records in the shuffle buffer after reading shards; 2048
	Layout        Layout // F32CHW
	// Drop gives every rank the whole batches of the smallest rank's
	// samples (no repeats) instead of padding the ranks to the largest
	// rank's count by repeating samples and keeping a last partial batch
	// (see StepsPerEpoch).
	Drop bool
	// Exact serves every sample of the epoch exactly once across the
	// ranks: rank r its own part (positions r, r+N, … of the order), with
	// no repeats and no padding, its last batch partial. The ranks' epochs
	// then differ by up to one sample (one batch), and a rank may have
	// none: for evaluation loops that combine their metric once, after the
	// epoch (an all-reduce at the end), never per step. With Drop the
	// rank's last partial batch is dropped instead (DataLoader's
	// drop_last). StepsPerEpoch is this rank's.
	Exact    bool
	Prefetch int    // batches prefetched; 2
	Split    string // which split of a packed dataset; "train"
	// Paths, if set, are more paths of the dataset at Open's path, read
	// with it as one dataset: shard files or globs (a shell's expansion
	// of dir/train-* gives every shard as a path of its own), never a
	// directory or URL (shard.OpenOptions.Paths).
	Paths []string
	// GlobalShuffle, for shards with .idx indexes, shuffles all records of
	// all shards as one permutation per epoch and reads each with a random
	// access, instead of shuffling the file order, interleaving files and
	// shuffling within a buffer (tf.data's way, the default).
	GlobalShuffle bool
	Mean, Std     [3]float32
	// The recipes' parameters, as torchvision's transforms take them (a
	// Compose handed to the Python client maps onto these): the train
	// recipe's RandomResizedCrop scale and ratio ranges (zero: (0.08, 1)
	// and (3/4, 4/3)) and RandomHorizontalFlip's probability (NoFlip for
	// none; FlipProb 0: 1/2); the eval recipe's Resize, the shorter edge
	// before the centre crop (0: Resolution·256/224).
	CropScale, CropRatio [2]float64
	NoFlip               bool
	FlipProb             float64
	Resize               int
	// Interpolation is both recipes' resampling, by torchvision's
	// InterpolationMode names: "bilinear" (the default, ""), "bicubic" or
	// "nearest", each as Pillow computes it (torchvision on PIL images);
	// see augment.Filter. Nearest decodes at full size.
	Interpolation string
	// FullDecode decodes every picture at full size. By default the train
	// recipe decodes a JPEG whose random crop is at least twice the output
	// at 1/2, 1/4 or 1/8 scale in the DCT (much faster), which is close to
	// torchvision's pixels but not equal (a few levels, more on edges);
	// with FullDecode the pixels are PIL's (torchvision's PIL path), bit
	// for bit where the JPEG decoders agree. The eval recipe (a
	// deterministic Resize + CenterCrop) decodes at full size by default.
	FullDecode bool
	// FastEvalDecode opts the eval recipe into the DCT-scaled decode (a
	// JPEG whose shorter edge is at least twice the resize): cheaper, but
	// not torchvision's pixels (tens of levels on edges of photographs).
	// FullDecode overrides it.
	FastEvalDecode bool
	// Augment, if set, runs in the train recipe after the crop and flip, on
	// the uint8 picture, with the sample's random source (the epoch and
	// the sample decide its draws): torchvision's TrivialAugmentWide,
	// RandAugment, AutoAugment, AugMix, ColorJitter, … from package
	// augment, or an augment.Sequence of them. Erasing, if set, is
	// torchvision's RandomErasing on the normalised tensor (F32CHW only),
	// drawn after Augment. Neither is reachable from --recipe or
	// faster.Loader's Compose mapping yet.
	Augment augment.ImageOp
	Erasing *augment.RandomErasing
	// Recipe, if set, is the whole transform instead of Transform's fixed
	// recipe and its parameters (the crop, flip, resize, interpolation,
	// Mean, Std, Augment and Erasing fields): torchvision's ops in the
	// order given (augment.Recipe), each sample out at the recipe's fixed
	// size. A recipe starting with RandomResizedCrop (and the flip after
	// it) decodes as the train recipe does (DCT-scaled unless
	// FullDecode); one starting with Resize(int) + CenterCrop as the eval
	// recipe; any other decodes at full size and runs its ops in order.
	// Transform then only picks the shuffle default (Eval: in order).
	Recipe augment.Recipe
	// Channels is the batches' channel count: 0 is the data's (1 for
	// one-channel data, source.Channeler) or the recipe's (1 after
	// Grayscale(1), 3 after Grayscale(3)), else 3; 1 or 3 forces it.
	Channels int
	// BadData is the policy for damaged samples: stop at the first (the
	// zero value) or skip and quarantine them within a budget.
	BadData BadDataPolicy
	// Quarantine, if set, is called with each skipped bad sample, from the
	// goroutine iterating the epoch.
	Quarantine func(BadSample)
	// MaxBatchMemory is the most bytes the batches in flight may take
	// (Prefetch+2 batches of Batch rows at the largest resolution);
	// Open refuses options above it up front instead of running out of
	// memory. 0 = half the machine's memory, or its container's (internal/sysmem).
	MaxBatchMemory int64
	// CacheDir, if set, keeps the shards (and indexes) of a dataset read
	// from a storage URL (s3://, gs://, http(s)://) on local disk in that
	// directory, under CacheSize bytes (storage.DefaultCacheSize when 0),
	// evicting whole files least recently used first, so that the next
	// epoch, or the next run, reads them locally (see storage.Cache).
	// Ranks may share the directory. Local datasets ignore it.
	CacheDir  string
	CacheSize int64
	// Manifest, if set, is the manifest of a packed dataset at a storage
	// URL, read already (shard.LoadManifestAt): it is not fetched again.
	Manifest *shard.Manifest
	// Resume, if set, continues the epoch it names from that position (see
	// State): this rank serves its stride of the samples not yet served.
	// Needs an indexed source (ImageFolder, LMDB, WebDataset, or shards
	// with GlobalShuffle).
	Resume *State
	// LabelOffset is added to every label the data stores (shard records,
	// LMDB Datums, WebDataset .cls): -1 for shards written by
	// TensorFlow's ImageNet scripts, whose image/class/label counts from
	// 1. The class names shift with it (Classes). An ImageFolder's labels
	// are its folder indices and take no offset.
	LabelOffset int
	// Profile, if set, times the recipe's phases per sample (see
	// Profile.Report); nil costs nothing.
	Profile *Profile
	// Classes, if set, is the number of classes: a label outside [0,
	// Classes) after the offset is a damaged sample. 0: the number of
	// classes the data records, where it records them (else only negative
	// labels are damaged).
	Classes int
	// Unlabeled reads data that has no labels: a WebDataset sample
	// without a .cls or .json label is served as label 0, where by default
	// it is damaged (never class 0 for lack of its label).
	Unlabeled bool
	// Repeats, if above 0, is torchvision's RASampler (repeated
	// augmentation, the classification reference's --ra-sampler with
	// --ra-reps): each sample repeated Repeats times in the epoch's order,
	// each copy augmented anew, every rank serving RASampler's count
	// (floor(n//256·256/world)); see sampler.go. Indexed data only.
	Repeats int
	// Sampler SamplerIndices makes each epoch's order the caller's: this
	// rank's dataset positions, in order, given by SetOrder before the
	// epoch (a Python sampler=, sent over `faster serve`'s socket), batched
	// as usual (Drop drops the last partial batch), never padded. Indexed
	// data only.
	Sampler string
	// Device is where batches are decoded: "" or "cpu" (the CPU path),
	// "cuda" or "cuda:N": the batch-decode stage of that GPU (nvJPEG, see
	// stage.go; registered by package gpudecode), whose batches
	// are iterated with IterStaged.
	Device string
	// CPUShare is the share of each batch (0 to 1; 0: none) a GPU stage
	// hands to the CPU path beside the images it cannot take: the GPU's
	// decode and the CPU's run side by side, so where the GPU alone does
	// not keep up with the accelerator the cores add their rate (issue
	// 38's "the CPU path, the GPU path or both together"). Which rows go
	// depends on the row's place in its batch alone (row i when
	// ⌊(i+1)·share⌋ > ⌊i·share⌋: spread evenly), so a batch is decoded the
	// same way whenever it is served. A stage's option: refused on the
	// CPU path.
	CPUShare float64
	// NewBatchDecoder, if set, opens the batch-decode stage's decoder
	// instead of the one registered for Device (a CPUBatchDecoder, in
	// tests); the loader then runs the stage whatever Device says.
	NewBatchDecoder func(DecoderConfig) (BatchDecoder, error)
}

func (o *Options) ensureDefaults() error {
	if o.Transform == "" {
		o.Transform = Train
	}
	switch o.Transform {
	case Train, Eval, None:
	default:
		return fmt.Errorf("transform %q: want train, eval or none", o.Transform)
	}
	if o.Resolution == 0 {
		o.Resolution = 224
	}
	if o.Batch == 0 {
		o.Batch = 256
	}
	if o.NumShards == 0 {
		o.NumShards = 1
	}
	if o.ShuffleBuffer == 0 {
		o.ShuffleBuffer = 2048
	}
	if o.Layout == "" {
		o.Layout = F32CHW
	}
	if o.Prefetch == 0 {
		o.Prefetch = 2
	}
	if o.Split == "" {
		o.Split = "train"
	}
	if o.Mean == ([3]float32{}) && o.Std == ([3]float32{}) {
		o.Mean, o.Std = augment.ImageNetMean, augment.ImageNetStd
	}
	var errs []error
	if o.Resolution < 1 || o.Batch < 1 || o.Workers < 0 || o.Prefetch < 0 {
		errs = append(errs, fmt.Errorf("resolution %d, batch %d, workers %d, prefetch %d: must be positive", o.Resolution, o.Batch, o.Workers, o.Prefetch))
	}
	if o.NumShards < 1 || o.ShardIdx < 0 || o.ShardIdx >= o.NumShards {
		errs = append(errs, fmt.Errorf("shard index %d of %d shards", o.ShardIdx, o.NumShards))
	}
	if o.BadData.MaxBad < 0 || o.BadData.MaxBadFraction < 0 || o.BadData.MaxBadFraction > 1 {
		errs = append(errs, fmt.Errorf("bad-data budget %d / %g: want counts >= 0 and a fraction in [0, 1]", o.BadData.MaxBad, o.BadData.MaxBadFraction))
	}
	if o.Shuffle < ShuffleAuto || o.Shuffle > ShuffleOff {
		errs = append(errs, fmt.Errorf("shuffle mode %d", o.Shuffle))
	}
	errs = append(errs, o.checkRecipe()...)
	if len(o.Recipe) > 0 {
		if ps := o.Recipe.Problems(); len(ps) > 0 {
			errs = append(errs, augment.Problems(ps))
		} else if c, err := o.Recipe.Compile(); err == nil && !c.OwnSize {
			// The row's size for the memory check: the recipe's output
			// (a recipe keeping each picture's size is checked again
			// once the data's size is known: initRecipe).
			o.Resolution = max(c.Width, c.Height)
		}
		switch {
		case o.Transform == None:
			errs = append(errs, fmt.Errorf("transform none with a recipe: the recipe is the transform (want train or eval)"))
		case len(o.Schedule) > 0:
			errs = append(errs, fmt.Errorf("resolution schedule %v with a recipe: the recipe fixes the size", o.Schedule))
		}
	}
	if o.Channels != 0 && o.Channels != 1 && o.Channels != 3 {
		errs = append(errs, fmt.Errorf("channels %d: want 1 or 3 (0: the data's)", o.Channels))
	}
	if _, err := o.filter(); err != nil {
		errs = append(errs, err)
	}
	if o.Workers > MaxWorkers {
		// Each worker is a goroutine with its own decode buffers: a
		// mistyped count would take the machine's memory.
		errs = append(errs, fmt.Errorf("workers %d: at most %d (0 = as many as the CPUs allow)", o.Workers, MaxWorkers))
	}
	if o.Resize != 0 && o.Resize < o.Resolution {
		errs = append(errs, fmt.Errorf("resize %d below the crop %d: torchvision would pad the crop; want resize >= resolution", o.Resize, o.Resolution))
	}
	if o.Classes < 0 {
		errs = append(errs, fmt.Errorf("classes %d: must not be negative", o.Classes))
	}
	if o.Erasing != nil && o.Layout == U8HWC {
		errs = append(errs, fmt.Errorf("RandomErasing works on the normalised tensor: layout %s normalises elsewhere", U8HWC))
	}
	if o.Layout != F32CHW && o.Layout != U8HWC {
		errs = append(errs, fmt.Errorf("layout %q: want %s or %s", o.Layout, F32CHW, U8HWC))
	}
	for _, r := range o.Schedule {
		if r < 1 {
			errs = append(errs, fmt.Errorf("resolution schedule %v", o.Schedule))
			break
		}
	}
	if _, _, err := ParseDevice(o.Device); err != nil {
		errs = append(errs, err)
	} else {
		errs = append(errs, o.stageProblems()...)
	}
	if !(o.CPUShare >= 0 && o.CPUShare <= 1) {
		errs = append(errs, fmt.Errorf("cpu share %v: want 0 to 1", o.CPUShare))
	} else if o.CPUShare > 0 && !o.staged() {
		errs = append(errs, fmt.Errorf("cpu share %v: a share of a GPU stage's batches, and device %q is the CPU path", o.CPUShare, o.Device))
	}
	if len(errs) == 0 {
		errs = append(errs, o.checkMemory())
	}
	return errors.Join(errs...)
}

// MaxWorkers bounds Options.Workers.
const MaxWorkers = 1024

// MaxResolution bounds Options.Resolution and its schedule: the side of a
// square image at the decoder's pixel limit (imgcodec.DefaultMaxPixels).
// It is checked before any size is multiplied out, so that no product
// overflows.
const MaxResolution = 1 << 14

func init() {
	if MaxResolution*MaxResolution != imgcodec.DefaultMaxPixels {
		panic("loader: MaxResolution is not the side of imgcodec.DefaultMaxPixels")
	}
}

// ShuffleMode is Options.Shuffle.
type ShuffleMode int

// The shuffle modes.
const (
	ShuffleAuto ShuffleMode = iota // shuffle unless the transform is Eval
	ShuffleOn                      // shuffle, whatever the transform
	ShuffleOff                     // keep the source order
)

// checkMemory refuses a resolution above the decoder's pixel limit and
// batches in flight above the memory budget.
func (o *Options) checkMemory() error {
	res := o.Resolution
	for _, r := range o.Schedule {
		res = max(res, r)
	}
	if res > MaxResolution {
		// Compared before squaring: 2^32 squared is 0 in 64 bits.
		return fmt.Errorf("resolution %d: at most %d (the decoder's limit of %d pixels per image)", res, MaxResolution, int64(imgcodec.DefaultMaxPixels))
	}
	if o.Transform == None {
		return nil
	}
	row := int64(res) * int64(res) * 3
	if o.Layout == F32CHW {
		row *= 4
	}
	budget, what := o.MaxBatchMemory, "the memory budget"
	if budget == 0 {
		budget, what = sysmem.Total()/2, "half the machine's memory"
	}
	batches := int64(o.Prefetch + 2)
	if need := row * int64(o.Batch) * batches; need/batches/int64(o.Batch) != row || need > budget {
		return fmt.Errorf("resolution %d, batch %d: the %d batches in flight need %.1f GB, above %s (%.1f GB); lower the batch or the resolution",
			res, o.Batch, batches, float64(row)*float64(o.Batch)*float64(batches)/1e9, what, float64(budget)/1e9)
	}
	// Each decode worker may hold one image's decoding at its limit
	// (imgcodec.DefaultMaxBytes: the output and the decoder's working
	// buffers) at the same time.
	workers := int64(o.Workers)
	if workers == 0 {
		workers = int64(runtime.GOMAXPROCS(0))
	}
	batchBytes := row * int64(o.Batch) * batches
	if decode := workers * imgcodec.DefaultMaxBytes; batchBytes+decode > budget {
		return fmt.Errorf("resolution %d, batch %d, %d workers: the %d batches in flight (%.1f GB) and each worker's decode at its limit (%d MiB each, %.1f GB) need %.1f GB, above %s (%.1f GB); lower the workers, the batch or the resolution",
			res, o.Batch, workers, batches, float64(batchBytes)/1e9, imgcodec.DefaultMaxBytes>>20, float64(decode)/1e9,
			float64(batchBytes+decode)/1e9, what, float64(budget)/1e9)
	}
	return nil
}

// Sample is an encoded sample as read from storage.
type Sample struct {
	Key   string // path relative to the dataset (ImageFolder) or image/filename (shards)
	Label int
	Data  []byte
	ID    uint64 // stable across epochs and ranks; seeds the sample's RNG

	pos  int        // position in this rank's epoch order (indexed sources), else -1
	rep  bool       // a padding repeat of a sample served earlier this epoch (see padded)
	path string     // file (or LMDB) the sample came from, for the quarantine list
	off  int64      // its byte offset there, -1 if none
	bad  *BadSample // set when the sample is damaged and the policy skips it
	// synset is a TensorFlow ImageNet record's image/class/synset, to
	// name the class in a label error.
	synset string
	buf    *source.Buffer // the pooled memory Data lies in, released once decoded; nil if none
}

// Item is what a batch row holds besides its pixels.
type Item struct {
	Key   string
	Label int
	Bytes int // encoded size read from storage

	img *imgcodec.Image // decoded pixels, released when copied into the arena
	pos int             // position in this rank's epoch order, -1 if none
	rep bool            // repeats a sample served earlier this epoch
	bad *BadSample
	// erase is the sample's RandomErasing, applied after normalising.
	erase augment.ErasePlan
	// job is the sample's work for the batch-decode stage (stage.go), nil
	// on the CPU path and once decoded.
	job *DecodeJob
}

// Batch is a batch of samples: Data holds Valid rows of RowBytes, laid out
// per Options.Layout; Items[:Valid] their keys and labels. Call Release
// when done with it.
type Batch = pipeline.Minibatch[Item]

// Loader is a re-iterable input pipeline: each Iter is one epoch.
type Loader struct {
	opts   Options
	fp     func() string // Fingerprint, computed once
	kind   string        // "imagefolder" or "shards"
	n      int           // samples in the whole dataset
	local  int           // samples this rank sees per epoch
	per    []int         // samples each rank holds per epoch; nil when unknown
	open   func(res int, resumed bool) (pipeline.Dataset[*Batch], statser)
	mu     sync.Mutex
	byRes  map[dsKey]pipeline.Dataset[*Batch]
	stats  map[dsKey]statser
	last   statser
	epoch  atomic.Int64
	labels []string
	// classes bounds the labels: [0, classes) after the offset (0: only
	// labels below 0 are out of range).
	classes int
	ds      source.Dataset // the dataset, as shard.Open opened it
	// rc is Options.Recipe compiled for the data; channels the batches'.
	rc       *augment.Compiled
	channels int
	// firstSize names the sample whose size a recipe keeping each
	// picture's size serves (rc.OwnSize, the size taken from the data's
	// first sample): every other picture must have it. "" when the
	// source knows its size (source.Sizer) or the recipe fixes one.
	firstSize string
	q         quarantine

	// zeroSeen: a stored label 0 was met (labels.go: the hint at 1-based
	// labels).
	zeroSeen atomic.Bool

	// Indexed sources: the epoch order and the exact position (State).
	indexed bool
	resume  ordering // samples left in the resumed epoch, in order (nil: no resume)
	// padOffset is how many positions this rank served of the resumed
	// epoch before, with the same world size (padded repeats continue it).
	padOffset int
	// Streamed sources resume by skipping the skip samples this rank had
	// read of the epoch (of which skipRows rows were served; 0: skip).
	skip, skipRows int
	stMu           sync.Mutex
	stEpoch        int
	stCons         int // positions of this rank's order consumed in stEpoch
	stLen          int // this rank's own positions in stEpoch (repeats aside)
	stDone         bool
	stAny          bool
	cur            atomic.Int64 // epoch running, for the bad-data budget
	// custom is the order SetOrder gave for the next epoch (Sampler
	// SamplerIndices), taken by it; guarded by mu.
	custom ordering

	// The batch-decode stage (stage.go): its decoder, its ring of buffers
	// (allocated by the first epoch, freed by Close; guarded by mu), and
	// the rows it handed to the CPU decoder.
	bd       BatchDecoder
	ring     *ring
	closed   bool
	fallback atomic.Int64
	shared   atomic.Int64                           // rows the stage gave the CPU as its share (SharedRows)
	fill     func() func(row []byte, it Item) error // filler(), made once
}

type dsKey struct {
	res     int
	resumed bool
}

// Close releases the files the loader's dataset keeps open.
// With a batch-decode stage it frees the stage's buffers (every batch of
// it must be released by then) and closes its decoder.
func (l *Loader) Close() error {
	var errs []error
	l.mu.Lock()
	if l.bd != nil && !l.closed {
		if l.ring != nil {
			if out := len(l.ring.all) - l.ring.idle(); out > 0 {
				errs = append(errs, fmt.Errorf("loader: closed with %d staged batch(es) not released: their buffers are freed", out))
			}
			errs = append(errs, l.ring.freeAll(l.bd))
			l.ring = nil
		}
		errs = append(errs, l.bd.Close())
	}
	l.closed = true
	l.mu.Unlock()
	if l.ds != nil {
		errs = append(errs, l.ds.Close())
	}
	return errors.Join(errs...)
}

// CacheStats returns the counters of the loader's shard cache, or nil
// without one (Options.CacheDir).
func (l *Loader) CacheStats() *storage.CacheStats {
	if c, ok := l.ds.(interface{ CacheStats() *storage.CacheStats }); ok {
		return c.CacheStats()
	}
	return nil
}

type statser interface{ Stats() pipeline.Stats }

// Open builds a loader over path: an ImageFolder root, a packed dataset
// directory (with manifest.json; TFRecord or WebDataset shards), a
// TFRecord file or glob, a WebDataset tar file or directory of them, a
// Caffe LMDB, or shards under an s3://, gs:// or http(s):// URL (see
// shard.Open). It is OpenContext with context.Background().
func Open(path string, opts Options) (*Loader, error) {
	return OpenContext(context.Background(), path, opts)
}

// OpenContext is Open whose opening work (listing an object store,
// reading indexes and a manifest, counting records) stops when ctx ends,
// returning ctx's error: a Ctrl-C during an S3 listing ends it at once.
// ctx is not kept: the epochs take their own (Iter, IterEpoch).
func OpenContext(ctx context.Context, path string, opts Options) (*Loader, error) {
	if err := opts.ensureDefaults(); err != nil {
		return nil, err
	}
	l := &Loader{opts: opts, byRes: map[dsKey]pipeline.Dataset[*Batch]{}, stats: map[dsKey]statser{}}
	l.fp = sync.OnceValue(func() string { return fingerprintOf(l.ds) })
	l.fill = sync.OnceValue(l.filler)
	l.q.notify = opts.Quarantine
	err := l.init(ctx, path)
	if err == nil {
		err = l.initLabels()
	}
	if err == nil {
		err = l.initSampler()
	}
	if err == nil {
		err = l.openStage()
	}
	if err != nil {
		l.Close()
		return nil, err
	}
	if opts.Resume != nil {
		if err := l.initResume(*opts.Resume); err != nil {
			l.Close()
			return nil, err
		}
	}
	return l, nil
}

// init opens the dataset at path (shard.Open: the one place that knows
// the container formats) and builds the recipe over its kind.
func (l *Loader) init(ctx context.Context, path string) error {
	o := l.opts
	oo := shard.OpenOptions{Split: o.Split, Manifest: o.Manifest, CacheDir: o.CacheDir, CacheSize: o.CacheSize, GlobalShuffle: o.GlobalShuffle, Ranks: o.NumShards, Paths: o.Paths, Unlabeled: o.Unlabeled}
	if o.BadData.Skip {
		// Damage found while opening (a shard disagreeing with its index or
		// the manifest, a tar region that cannot be listed) is quarantined
		// as epoch 0's.
		oo.Skip = func(d source.Damage, of int) error {
			return l.q.add(d, 0, o.BadData, of)
		}
	}
	ds, err := shard.Open(ctx, path, oo)
	if err != nil {
		return err
	}
	l.ds = ds
	if err := l.initRecipe(ctx, path); err != nil {
		return err
	}
	switch ds := ds.(type) {
	case source.Indexed:
		return l.initIndexed(l.copies(ds))
	case source.Streaming:
		return l.initStreaming(ds)
	}
	return fmt.Errorf("%s: %s dataset is neither indexed nor streaming", path, ds.Kind())
}

// Root returns the folder of class folders an ImageFolder dataset lists
// (for a split layout, root/<split>), or "" for other kinds.
func (l *Loader) Root() string {
	if r, ok := l.ds.(interface{ Root() string }); ok {
		return r.Root()
	}
	return ""
}

// Kind returns "imagefolder", "shards", "lmdb" or "wds".
func (l *Loader) Kind() string { return l.kind }

// Len returns the number of distinct samples this rank reads per epoch
// (exact when the record counts are known: always for ImageFolder, LMDB,
// WebDataset, and for shards with .idx indexes or a manifest). With padding
// (Drop false) the rank serves SamplesPerEpoch() rows, repeats included.
func (l *Loader) Len() int { return l.local }

// StepsPerEpoch returns the number of batches every rank yields in a full
// epoch: the one definition of an epoch's length that the trainer, `faster
// serve` and the Python client's len() use. It is computed from the record
// counts of every rank (the index or manifest of every shard, not this
// rank's share), so it is the same number on every rank. With Drop it is
// the whole batches of the smallest rank's samples; without, every rank
// serves as many samples as the largest rank, a shorter one repeating its
// epoch's first samples (as PyTorch's DistributedSampler(drop_last=False)
// does), in ceil(samples / batch) batches whose sizes are the same on every
// rank (all full but the last). It is -1 when the record counts are not
// known (shards with neither .idx indexes nor a manifest, one rank only).
// The epoch that Options.Resume continues has what is left of it instead.
func (l *Loader) StepsPerEpoch() int {
	if l.per == nil {
		return -1
	}
	return l.steps(l.epochRows(l.per))
}

// SamplesPerEpoch returns the rows every rank serves in a full epoch,
// repeats included (see StepsPerEpoch), or -1 when unknown.
func (l *Loader) SamplesPerEpoch() int {
	if l.per == nil {
		return -1
	}
	return l.epochRows(l.per)
}

// epochRows is the number of rows every rank serves in an epoch whose ranks
// hold counts[r] samples.
func (l *Loader) epochRows(counts []int) int {
	if l.opts.Sampler == SamplerIndices {
		return -1 // the caller's order, as long as it is
	}
	if len(counts) == 0 {
		return 0
	}
	if l.opts.Exact {
		return counts[l.opts.ShardIdx]
	}
	if l.opts.Drop {
		return slices.Min(counts) / l.opts.Batch * l.opts.Batch
	}
	return slices.Max(counts)
}

// steps is the number of batches of rows rows.
func (l *Loader) steps(rows int) int {
	if l.opts.Drop {
		return rows / l.opts.Batch
	}
	return (rows + l.opts.Batch - 1) / l.opts.Batch
}

// DatasetLen returns the number of samples in the dataset, over all ranks
// (0 when a stream's counts are unknown).
func (l *Loader) DatasetLen() int { return l.n }

// PerRank returns how many samples each rank holds per epoch, or nil when
// unknown.
func (l *Loader) PerRank() []int { return slices.Clone(l.per) }

// Indexed reports whether the dataset is read by position (see State).
func (l *Loader) Indexed() bool { return l.indexed }

// Shuffles reports whether epochs read the samples in a new random order.
func (l *Loader) Shuffles() bool { return l.shuffles() }

// Classes returns the class names, if known.
func (l *Loader) Classes() []string { return l.labels }

// Resolution returns the resolution of epoch e.
func (l *Loader) Resolution(e int) int {
	if s := l.opts.Schedule; len(s) > 0 {
		return s[min(e, len(s)-1)]
	}
	return l.opts.Resolution
}

// Iter runs the next epoch (epochs count from 0 per Loader).
func (l *Loader) Iter(ctx context.Context) iter.Seq2[*Batch, error] {
	e := int(l.epoch.Add(1) - 1)
	return l.IterEpoch(ctx, e)
}

// IterEpoch runs epoch e: its shuffles and augmentations are those of
// epoch e whatever ran before. A loader with a batch-decode stage
// (Options.Device cuda) serves its epochs through IterStaged: here it
// yields ErrStaged.
func (l *Loader) IterEpoch(ctx context.Context, e int) iter.Seq2[*Batch, error] {
	if l.bd != nil {
		return func(yield func(*Batch, error) bool) { yield(nil, ErrStaged) }
	}
	return l.iterEpoch(ctx, e, false)
}

// iterEpoch is IterEpoch; with a batch-decode stage its batches hold
// decode jobs, not pixels (IterStaged decodes them). staged leaves the
// position (advance, the epoch's end) to IterStaged, whose consumer is
// behind this iteration by the batches decoded ahead.
func (l *Loader) iterEpoch(ctx context.Context, e int, staged bool) iter.Seq2[*Batch, error] {
	if err := l.orderReady(e); err != nil {
		return func(yield func(*Batch, error) bool) { yield(nil, err) }
	}
	key := dsKey{res: l.Resolution(e), resumed: l.resumes(e)}
	l.mu.Lock()
	ds, ok := l.byRes[key]
	if !ok {
		var st statser
		ds, st = l.open(key.res, key.resumed)
		l.byRes[key], l.stats[key] = ds, st
	}
	l.last = l.stats[key]
	l.mu.Unlock()
	ctx = pipeline.WithEpoch(ctx, int64(e))
	var plan ordering
	own := l.local
	if l.indexed {
		plan = l.plan(e)
		own = ownLen(plan)
		ctx = context.WithValue(ctx, planKey{}, plan)
	} else {
		ctx = context.WithValue(ctx, streamKey{}, new(int))
	}
	return func(yield func(*Batch, error) bool) {
		l.cur.Store(int64(e))
		l.stMu.Lock()
		l.stEpoch, l.stCons, l.stLen, l.stDone, l.stAny = e, 0, own, false, true
		l.stMu.Unlock()
		failed, served := false, false
		for b, err := range ds.Iter(ctx) {
			err = l.explainEmpty(e, err)
			if err == nil && b != nil {
				if !staged {
					l.advance(b)
				}
				served = true
			} else if err != nil {
				failed = true
			}
			if !yield(b, err) {
				return
			}
		}
		if !failed && !served && ctx.Err() == nil {
			// Nothing padded the epoch (a stream of unknown counts, or
			// Exact): an epoch of only bad samples fails all the same.
			if err := l.explainEmpty(e, pipeline.ErrNothingToRepeat); l.q.inEpoch(e) > 0 {
				yield(nil, err)
				return
			}
		}
		if !failed && ctx.Err() == nil && !staged {
			l.markDone()
		}
	}
}

// markDone records that the running epoch was served to its end.
func (l *Loader) markDone() {
	l.stMu.Lock()
	l.stCons, l.stDone = l.stLen, true
	l.stMu.Unlock()
}

// explainEmpty names what emptied epoch e when every sample was bad (the
// padding that evens out ranks has nothing to repeat): the skipped
// samples, the first of the epoch's named.
func (l *Loader) explainEmpty(e int, err error) error {
	if !errors.Is(err, pipeline.ErrNothingToRepeat) {
		return err
	}
	first, n := l.q.firstIn(e)
	if n == 0 {
		return fmt.Errorf("this rank's part of the epoch is empty: %w", err)
	}
	return fmt.Errorf("every sample of this rank's epoch was bad and skipped (%d listed; the first: %s, offset %d: %s): nothing to serve: %w", n, first.Path, first.Offset, first.Reason, err)
}

// Stats returns the per-stage statistics and verdict of the pipeline that
// ran last.
func (l *Loader) Stats() pipeline.Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		return pipeline.Stats{}
	}
	return l.last.Stats()
}

func epochOf(ctx context.Context) int { return int(pipeline.EpochFrom(ctx)) }

// RowBytes returns the size of one batch row at resolution res (with a
// recipe, the recipe's size).
func (l *Loader) RowBytes(res int) int {
	if l.opts.Transform == None {
		return 0
	}
	c, h, w := l.shape(res)
	if l.opts.Layout == U8HWC {
		return c * h * w
	}
	return c * h * w * 4
}

// Shape is one row's channels, height and width in epoch e (the batch's
// layout orders them: C×H×W for f32-chw, H×W×C for u8-hwc).
func (l *Loader) Shape(e int) (c, h, w int) { return l.shape(l.Resolution(e)) }

func (l *Loader) shape(res int) (c, h, w int) {
	c = max(l.channels, 1)
	if l.rc != nil {
		return c, l.rc.Height, l.rc.Width
	}
	return c, res, res
}

// initRecipe compiles Options.Recipe for the data's channels and settles
// the batches' channel count.
func (l *Loader) initRecipe(ctx context.Context, path string) error {
	o := l.opts
	in := 3
	if ch, ok := l.ds.(source.Channeler); ok && ch.Channels() == 1 {
		in = 1
	}
	l.channels = in
	if len(o.Recipe) > 0 {
		c, err := o.Recipe.CompileFor(in)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if c.OwnSize {
			if c, err = l.ownSize(ctx, path, in); err != nil {
				return err
			}
		}
		l.rc, l.channels = c, c.Channels
		if o.Layout == U8HWC && (c.Normalized || c.Erasing != nil) {
			return fmt.Errorf("recipe: Normalize and RandomErasing work on the float tensor: layout %s serves uint8 pixels (want %s)", U8HWC, F32CHW)
		}
	}
	if o.Channels != 0 {
		l.channels = o.Channels
	}
	return nil
}

// Ceiling is what a loader could deliver if its consumer never made it
// wait: the rate of its limiting stage, run at the parallelism it had.
type Ceiling struct {
	ImagesPerSec float64 `json:"images_per_s"` // 0 when nothing has run
	Stage        string  `json:"stage"`        // the limiting stage
	Bottleneck   string  `json:"bottleneck"`   // "io" or "decode" (CPU work)
}

// CeilingOf returns the ceiling the statistics st of this loader's
// pipeline show: for each stage that does work, the items it handled
// divided by the time it was busy per worker (Wall × BusyFraction), the
// batch stage's batches counted as rows; the lowest is the ceiling.
func (l *Loader) CeilingOf(st pipeline.Stats) Ceiling {
	var c Ceiling
	for _, s := range st.Stages {
		if s.Role == pipeline.RoleNone || s.Wall <= 0 || s.BusyFraction <= 0 || s.Items == 0 {
			continue
		}
		items := float64(s.Items)
		if s.Kind == "batch" {
			items *= float64(l.opts.Batch)
		}
		rate := items / (s.Wall.Seconds() * s.BusyFraction)
		if c.Stage == "" || rate < c.ImagesPerSec {
			c.ImagesPerSec, c.Stage = rate, s.Name
			c.Bottleneck = pipeline.BottleneckDecode
			if s.Role == pipeline.RoleIO {
				c.Bottleneck = pipeline.BottleneckIO
			}
		}
	}
	return c
}

// filter is the resampling filter Interpolation names.
func (o *Options) filter() (augment.Filter, error) {
	switch o.Interpolation {
	case "", "bilinear":
		return augment.Triangle, nil
	case "bicubic":
		return augment.Bicubic, nil
	case "nearest":
		return augment.Nearest, nil
	}
	return 0, fmt.Errorf("interpolation %q: want bilinear, bicubic or nearest", o.Interpolation)
}
