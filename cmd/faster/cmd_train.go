package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/faster-training/faster/collective"
	"github.com/faster-training/faster/internal/sysmem"
	"github.com/faster-training/faster/loader"
	"github.com/faster-training/faster/progress"
	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/train"
	_ "github.com/faster-training/faster/train/onednn" // registers "onednn" when built with cgo

	"github.com/faster-training/faster/internal/usage"
)

type trainOptions struct {
	badDataFlags
	data        string
	model       string
	filters     []int
	backend     string
	epochs      int
	batch       int
	lr          float64
	momentum    float64
	weightDecay float64
	warmup      float64
	stepEpochs  float64
	gamma       float64
	threads     int
	normThreads int
	maxMemory   sizeFlag
	winograd    bool
	seed        uint64
	limit       int
	testLimit   int
	checkpoint  string
	ckptEvery   int
	testData    string
	resolution  int
	classes     int
	labelOffset int
	json        bool

	// The train recipe's augmentations (augmentflags.go).
	augment augmentFlags

	// The fast recipe (train_recipe.go).
	recipe         string
	schedule       string
	pctStart       float64
	divFactor      float64
	finalDivFactor float64
	labelSmoothing float64
	nesterov       bool
	ema            float64
	emaWarmup      bool
	tta            string
	resSchedule    string
	evalEvery      int
	targetAccuracy float64

	fixresBN int // --fixres-bn (train_fixres.go)

	// The study's speed-ups (train_parallel.go).
	strategy  string // single, dp, ddp
	devices   int
	nproc     int
	nodes     nodeOptions // --nnodes, --node-rank, --master-addr, --master-port
	syncBN    bool
	amp       bool
	ampDtype  string
	autotune  bool
	tuneCache string // --tune-cache
	noOverlap bool
	zeroGrad  bool
	bucketKB  int
	timeout   time.Duration
	// timeoutSet: --collective-timeout was given (it overrides
	// FASTER_COLLECTIVE_TIMEOUT).
	timeoutSet bool
	timeAR     int      // --time-allreduce
	argv       []string // the flags as given, for the launcher's children
}

func init() {
	commands = append(commands, func(stdout, stderr io.Writer) *cobra.Command {
		var o trainOptions
		c := &cobra.Command{
			Use:   "train --data DIR",
			Short: "Train a model (ThinNet, ResNet-18) on an image dataset with the Go engine on oneDNN",
			Long: `Train trains a model on the CPU with faster's own engine (package train): oneDNN
primitives through cgo, or the slow pure-Go reference backend without cgo.
--data is a Fashion-MNIST/MNIST IDX directory (train-* and t10k-* files, held
in memory), or a packed dataset (its train and test splits) or ImageFolder tree
read through the input pipeline's train recipe (random-resized-crop, flip,
normalise) and eval recipe (resize, centre crop), decoded ahead of the step.
Each epoch is followed by an evaluation on the test split. A progress line
shows loss, images/s and ETA on a terminal. With --checkpoint FILE the
state is saved after every epoch (and on interrupt) and a rerun resumes
from it.

Exit status: 0 trained; 1 failed (bad data, backend error); 2 usage error;
130 interrupted (after saving the checkpoint, if any).`,
			Args: exactArgs(0),
			RunE: func(cmd *cobra.Command, args []string) error {
				if err := applyRecipe(cmd.Flags(), &o); err != nil {
					return err
				}
				if err := applyPET(cmd.Flags(), &o, os.LookupEnv); err != nil {
					return err
				}
				cmd.Flags().Visit(func(f *pflag.Flag) {
					if launcherFlags[f.Name] {
						return
					}
					v := f.Value.String()
					if sv, ok := f.Value.(pflag.SliceValue); ok {
						v = strings.Join(sv.GetSlice(), ",")
					}
					o.argv = append(o.argv, "--"+f.Name+"="+v)
				})
				o.timeoutSet = cmd.Flags().Changed("collective-timeout")
				return runTrain(cmd.Context(), o, stdout, stderr)
			},
		}
		f := c.Flags()
		f.StringVar(&o.data, "data", "", "dataset: an IDX directory, a packed dataset (faster pack) or an ImageFolder tree (required)")
		f.StringVar(&o.testData, "test-data", "", "test images for an ImageFolder --data (a packed dataset uses its test split)")
		f.IntVar(&o.resolution, "resolution", 0, "image side for packed or ImageFolder data (default: the packed images' width, else 224)")
		f.StringVar(&o.model, "model", "thinnet", "model: thinnet or resnet18")
		f.IntVar(&o.classes, "classes", 0, "classes of the model's head, for data that does not record them (default: from the data: its class folders, the manifest's classes, 10 for MNIST)")
		f.IntVar(&o.labelOffset, "label-offset", 0, "packed data: add N to every stored label (-1 for TensorFlow's ImageNet shards, whose labels count from 1)")
		f.IntSliceVar(&o.filters, "filters", nil, "ThinNet's stage widths, three 3×3 convolutions each (default 32,64,128: the study's); ResNet-18's four stage widths (default 64,128,256,512)")
		f.StringVar(&o.backend, "backend", "", "compute backend: onednn or reference (default: onednn when built with cgo)")
		f.IntVar(&o.epochs, "epochs", 1, "epochs to train (in total, counting resumed ones)")
		f.IntVar(&o.batch, "batch", 512, "batch size")
		f.Float64Var(&o.lr, "lr", 0.001, "base learning rate")
		f.Float64Var(&o.momentum, "momentum", 0.9, "SGD momentum")
		f.Float64Var(&o.weightDecay, "weight-decay", 0, "SGD weight decay")
		f.Float64Var(&o.warmup, "warmup", 0, "epochs of linear learning-rate warm-up")
		f.Float64Var(&o.stepEpochs, "step-epochs", 0, "multiply the rate by --gamma every this many epochs (0: never)")
		f.Float64Var(&o.gamma, "gamma", 0.1, "step-decay factor")
		f.IntVar(&o.threads, "threads", 0, "compute threads (default: number of CPUs)")
		f.Var(&o.maxMemory, "max-memory", "the most memory one training step may hold, models' activations and parameters (k, M, G suffixes; default: half this machine's or container's memory, shared by the ranks on it)")
		f.IntVar(&o.normThreads, "norm-threads", 0, "threads for BatchNorm (default: --threads; 1 can be faster on busy cores)")
		f.BoolVar(&o.winograd, "winograd", true, "onednn: Winograd F(4x4,3x3) for fp32 3x3 stride-1 convolutions of 16k channels (about twice as fast as direct; its curves stay within what rounding alone moves them, see train.BackendOptions.Winograd); --winograd=false: direct")
		f.Uint64Var(&o.seed, "seed", 1, "seed for initial weights and shuffling")
		f.IntVar(&o.limit, "limit", 0, "train on the first N training images only (0: all)")
		f.IntVar(&o.testLimit, "test-limit", 0, "evaluate on the first N test images only (0: all)")
		f.StringVar(&o.checkpoint, "checkpoint", "", "save state to FILE after each epoch; resume from it when it exists")
		f.IntVar(&o.ckptEvery, "checkpoint-every", 0, "with --checkpoint: also save every N steps within an epoch (a killed run resumes there)")
		o.registerBad(f)
		f.BoolVar(&o.json, "json", false, "print a JSON summary")
		addRecipeFlags(f, &o)
		o.augment.register(f)
		addFixResFlags(f, &o)
		addParallelFlags(f, &o)
		return c
	})
}

// metric is a float64 that JSON writes as null when it is not finite
// (encoding/json refuses NaN and ±Inf): a loss may be.
type metric float64

func (m metric) MarshalJSON() ([]byte, error) {
	if f := float64(m); math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(m))
}

// MarshalJSON writes the losses, which may not be finite, as metrics.
func (e epochSummary) MarshalJSON() ([]byte, error) {
	type plain epochSummary
	return json.Marshal(struct {
		plain
		TrainLoss metric `json:"train_loss"`
		TestLoss  metric `json:"test_loss"`
	}{plain(e), metric(e.TrainLoss), metric(e.TestLoss)})
}

// MarshalJSON writes the test loss, which may not be finite, as a metric.
func (s trainSummary) MarshalJSON() ([]byte, error) {
	type plain trainSummary
	return json.Marshal(struct {
		plain
		TestLoss metric `json:"test_loss"`
	}{plain(s), metric(s.TestLoss)})
}

type epochSummary struct {
	Epoch        int     `json:"epoch"`
	TrainLoss    float64 `json:"train_loss"`
	TrainAcc     float64 `json:"train_accuracy"`
	TestLoss     float64 `json:"test_loss"`
	TestAccuracy float64 `json:"test_accuracy"`
	TestTop5     float64 `json:"test_top5"`
	Images       int     `json:"images"`
	Seconds      float64 `json:"seconds"`
	ImagesPerSec float64 `json:"images_per_sec"`
	Resolution   int     `json:"resolution,omitempty"` // the training side (progressive resizing)
}

// curvePoint is one evaluation of the test split during training.
type curvePoint struct {
	Step         int     `json:"step"`    // global steps trained
	Epoch        float64 `json:"epoch"`   // the same in epochs
	Seconds      float64 `json:"seconds"` // training seconds so far, evaluation excluded
	TestAccuracy float64 `json:"test_accuracy"`
	TestLoss     metric  `json:"test_loss"`
}

func ptr[T any](v T) *T { return &v }

type trainSummary struct {
	Model        string             `json:"model"`
	Backend      string             `json:"backend"`
	Strategy     string             `json:"strategy"`
	Devices      int                `json:"devices"`    // devices per process (dp)
	WorldSize    int                `json:"world_size"` // processes (ddp)
	SyncBN       bool               `json:"sync_bn"`
	Precision    string             `json:"precision"`                  // fp32, bf16, fp16
	NativeAMP    bool               `json:"native_precision,omitempty"` // reduced precision on native instructions
	Autotune     []train.TuneChoice `json:"autotune,omitempty"`
	TuneSeconds  float64            `json:"tune_seconds,omitempty"` // of Seconds, spent autotuning
	Overlap      bool               `json:"overlap"`
	ZeroGrad     string             `json:"zero_grad"` // set_to_none or zero
	SkippedSteps int                `json:"skipped_steps,omitempty"`
	// AlreadyDone: the checkpoint had trained --epochs already; nothing
	// was trained and the test figures are its evaluation.
	AlreadyDone bool    `json:"already_complete,omitempty"`
	Threads     int     `json:"threads"`
	NormThreads int     `json:"norm_threads,omitempty"`
	Winograd    bool    `json:"winograd,omitempty"`
	Batch       int     `json:"batch"`
	LR          float64 `json:"lr"`
	Epochs      int     `json:"epochs"`
	Classes     int     `json:"classes"`
	TrainImages int     `json:"train_images"`
	TestImages  int     `json:"test_images"`
	Images      int     `json:"images"`  // images trained in this run
	Seconds     float64 `json:"seconds"` // training time of this run (excluding evaluation)
	// CPUSeconds is the process's CPU time (user and system, all threads)
	// over the same stretches as Seconds.
	CPUSeconds   float64 `json:"cpu_seconds"`
	ImagesPerSec float64 `json:"images_per_sec"`
	TestAccuracy float64 `json:"test_accuracy"`
	TestTop5     float64 `json:"test_top5"`
	TestLoss     float64 `json:"test_loss"`
	WallSeconds  float64 `json:"wall_seconds"`
	// WeightsSHA256 digests the final parameters and buffers (float32
	// little-endian, in state_dict order): equal digests, equal models.
	WeightsSHA256 string         `json:"weights_sha256"`
	PerEpoch      []epochSummary `json:"per_epoch"`

	// The recipe (train_recipe.go).
	Recipe         string  `json:"recipe,omitempty"`
	Schedule       string  `json:"schedule"`
	LabelSmoothing float64 `json:"label_smoothing"`
	Nesterov       bool    `json:"nesterov"`
	EMA            float64 `json:"ema"`
	EMAWarmup      bool    `json:"ema_warmup,omitempty"`
	TTA            string  `json:"tta"`
	Resolutions    []int   `json:"resolution_schedule,omitempty"`
	// Curve lists every evaluation (each --eval-every steps and each
	// epoch's end); EvalSeconds is their time, outside Seconds.
	Curve          []curvePoint `json:"curve"`
	EvalSeconds    float64      `json:"eval_seconds"`
	TargetAccuracy float64      `json:"target_accuracy,omitempty"`
	// SecondsToTarget is the training time until an evaluation first
	// reached TargetAccuracy (null: never), at StepsToTarget steps.
	SecondsToTarget *float64 `json:"seconds_to_target"`
	StepsToTarget   int      `json:"steps_to_target,omitempty"`
	// FixResBN reports --fixres-bn's recalibration and the test figures
	// before it (the test_* fields above are those after it).
	FixResBN *fixresSummary `json:"fixres_bn,omitempty"`
	// DDP is rank 0's gradient communication (--strategy ddp).
	DDP *ddpSummary `json:"ddp,omitempty"`
}

// ddpSummary is the gradient communication of a ddp rank's steps.
type ddpSummary struct {
	Steps       int   `json:"steps"`
	BucketBytes []int `json:"bucket_bytes"` // of a step, in the order they are sent
	// AllReducePerStep is the buckets' all-reduce time per step (running
	// beside the backward pass); ExposedPerStep the time per step the rank
	// waited for them once its backward pass had ended (the part not
	// hidden behind it).
	AllReducePerStep float64 `json:"allreduce_seconds_per_step"`
	ExposedPerStep   float64 `json:"exposed_wait_seconds_per_step"`
	// AlonePerStep is the time of a step's all-reduces with no compute
	// (the same buckets, --time-allreduce rounds after training).
	AlonePerStep *float64 `json:"allreduce_alone_seconds_per_step,omitempty"`
	AloneRounds  int      `json:"allreduce_alone_rounds,omitempty"`
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

func runTrain(ctx context.Context, o trainOptions, stdout, stderr io.Writer) (retErr error) {
	var problems []string
	if o.data == "" {
		problems = append(problems, "--data is required")
	}
	if o.model != "thinnet" && o.model != "resnet18" {
		problems = append(problems, fmt.Sprintf("--model %q: want thinnet or resnet18", o.model))
	}
	for _, f := range []struct {
		name     string
		v, least int
	}{{"epochs", o.epochs, 1}, {"batch", o.batch, 1}, {"threads", o.threads, 0}, {"norm-threads", o.normThreads, 0}, {"limit", o.limit, 0}, {"test-limit", o.testLimit, 0}} {
		if f.v < f.least {
			problems = append(problems, fmt.Sprintf("--%s %d: must be at least %d", f.name, f.v, f.least))
		}
	}
	if o.resolution < 0 || o.resolution > loader.MaxResolution {
		problems = append(problems, fmt.Sprintf("--resolution %d: want 1 to %d (the decoder's limit of %d pixels per image), or 0 for the data's own", o.resolution, loader.MaxResolution, loader.MaxResolution*loader.MaxResolution))
	}

	problems = append(problems, checkHyper(o)...)
	problems = append(problems, checkRecipe(o)...)
	problems = append(problems, checkFixRes(o)...)
	if err := o.augment.resolve(); err != nil {
		problems = append(problems, err.Error())
	}
	if o.classes < 0 {
		problems = append(problems, "--classes must be positive")
	}
	if o.labelOffset < -loader.MaxLabelOffset || o.labelOffset > loader.MaxLabelOffset {
		problems = append(problems, fmt.Sprintf("--label-offset %d: at most %d either way (the largest label a container stores)", o.labelOffset, loader.MaxLabelOffset))
	}
	if o.ckptEvery < 0 || (o.ckptEvery > 0 && o.checkpoint == "") {
		problems = append(problems, "--checkpoint-every takes a positive step count, with --checkpoint")
	}
	for _, f := range o.filters {
		if f < 1 || (o.model == "resnet18" && len(o.filters) != 4) {
			problems = append(problems, "--filters takes positive widths: ThinNet's stages, or ResNet-18's four")
			break
		}
	}
	problems = append(problems, checkParallel(&o)...)
	if len(problems) > 0 {
		return usagef("%s", joinLines(problems))
	}
	if o.strategy == "ddp" && o.nproc > 0 && os.Getenv(launchEnv) == "" {
		return runLaunch(ctx, o, stdout, stderr)
	}
	// One rank of distributed training joins its group first: the data
	// each rank reads depends on its rank.
	var comm collective.Comm
	rank, world, localRanks := 0, 1, 1
	if o.strategy == "ddp" {
		cfg, err := collective.FromEnv()
		if err != nil {
			return usagef("--strategy ddp: %v (or use --nproc N to start N processes here)", err)
		}
		// --collective-timeout when given, else FASTER_COLLECTIVE_TIMEOUT
		// (FromEnv's, as every rank of the collective package reads it),
		// else the flag's default.
		if o.timeoutSet || cfg.Timeout == 0 {
			cfg.Timeout = o.timeout
		}
		o.threads = rankThreads(o.threads, cfg)
		localRanks = max(cfg.LocalSize, 1)
		if comm, err = collective.Open("gloo", cfg); err != nil {
			return err
		}
		defer comm.Close()
		rank, world = comm.Rank(), comm.Size()
		if rank > 0 {
			stdout = io.Discard // rank 0 reports
		}
	}
	if o.batch%world != 0 {
		return usagef("--batch %d does not split over %d processes", o.batch, world)
	}
	if o.checkpoint != "" && rank == 0 {
		// Rank 0 writes the checkpoint: a second run saving to it fails
		// here, before any work (as a second pack into one destination).
		// A folder it cannot write to is a usage error, before the lock
		// (which would create its file there) and the first epoch.
		if err := checkOutputDir(o.checkpoint); err != nil {
			return usagef("--checkpoint %s: %v", o.checkpoint, err)
		}
		unlock, err := train.LockCheckpoint(o.checkpoint)
		if err != nil {
			return err
		}
		defer unlock()
	}
	// Two kinds of data: IDX images held in memory (train.Dataset), or an
	// input pipeline over packed shards or an ImageFolder (train.Stream).
	resSched, _ := parseResSchedule(o.resSchedule) // checked above
	var (
		trainSet, testSet       *train.Images
		trainStream, testStream *loaderStream
		calib                   train.Stream // --fixres-bn's batches
		names, testNames        []string     // class names, when the data records them
		err                     error
	)
	// The damaged-sample policy, and the quarantine list written however
	// the run ends (a list that cannot be written fails the run): what
	// loading IDX data skipped, or what the pipelines skip.
	policy, err := o.policy()
	if err != nil {
		return err
	}
	writeQ, abortQ, err := o.forRank(rank, world).openQuarantine()
	if err != nil {
		return err
	}
	defer abortQ()
	var skipped []loader.BadSample
	defer func() {
		list := skipped
		for _, st := range []*loaderStream{trainStream, testStream} {
			if st != nil {
				list = append(list, st.l.Bad()...)
			}
		}
		if len(list) > 0 {
			fmt.Fprintf(stderr, "faster: train: rank %d skipped %d bad samples\n", rank, len(list))
		}
		retErr = errors.Join(retErr, writeQ(list))
	}()
	if isIDX(o.data) {
		if o.labelOffset != 0 {
			return usagef("--label-offset applies to packed data, not IDX")
		}
		if o.augment.any() {
			return usagef("--augment-recipe, --auto-augment, --affine-*, --rotate-degrees, --color-jitter, --grayscale-prob, --blur-* and --erasing-prob apply to packed or ImageFolder data, not IDX")
		}
		var bad []loader.BadSample
		trainSet, names, bad, err = loadImages(o.data, "train", o.limit, policy)
		skipped = append(skipped, bad...)
		if err != nil {
			return err
		}
		testSet, testNames, bad, err = loadImages(o.data, "test", o.testLimit, policy)
		skipped = append(skipped, bad...)
		if err != nil {
			return err
		}
	} else {
		if o.limit > 0 || o.testLimit > 0 {
			return usagef("--limit and --test-limit apply to IDX data only")
		}
		lo := loader.Options{Batch: o.batch / world, Seed: o.seed, NumShards: world, ShardIdx: rank, LabelOffset: o.labelOffset, Classes: o.classes, BadData: policy}
		lo.Resolution = o.resolution // for the recipe's eval Resize; openStreams sets it again
		o.augment.apply(&lo)
		if trainStream, testStream, err = openStreams(o.data, o.testData, o.resolution, lo, resSched, o.epochs); err != nil {
			return err
		}
		defer trainStream.l.Close()
		defer testStream.l.Close()
		if o.fixresBN > 0 {
			cs, err := openCalibration(o.data, testStream.full, lo)
			if err != nil {
				return err
			}
			defer cs.l.Close()
			calib = cs
		}
		names, testNames = trainStream.l.Classes(), testStream.l.Classes()
	}
	classes, err := trainClasses(o, names, testNames)
	if err != nil {
		return err
	}
	inC, inH, trainLen, testLen := 0, 0, 0, 0
	if trainSet != nil {
		inC, inH, trainLen, testLen = trainSet.C, trainSet.H, trainSet.Len(), testSet.Len()
	} else {
		inC, inH, _ = trainStream.Shape()
		trainLen, testLen = trainStream.Len()*world, testStream.Len()*world
		if trainLen == 0 {
			return fmt.Errorf("--data %s: the number of records is unknown (shards without an .idx index beside each): index them, e.g. with DALI's tfrecord2idx", o.data)
		}
	}
	if trainLen < o.batch {
		return usagef("--batch %d is larger than the %d training images", o.batch, trainLen)
	}
	if trainSet != nil && slices.Equal(resSched, []int{0}) {
		resSched = progressiveSchedule(inH, o.epochs)
	} else if trainStream != nil {
		resSched = trainStream.sched
	}
	steps := trainLen / o.batch
	if trainStream != nil {
		steps = trainStream.Steps() // the same on every rank
	}
	if err := checkSchedule(o, steps); err != nil {
		return err
	}
	prec, _ := train.ParsePrecision("fp32")
	if o.amp {
		prec, _ = train.ParsePrecision(o.ampDtype)
	}
	threads := capWorkers(stderr, "--threads", o.threads, runtime.NumCPU())
	if threads == 0 {
		threads = runtime.NumCPU()
	}
	bopts := train.BackendOptions{Threads: max(1, threads/o.devices), NormThreads: o.normThreads, Precision: prec, Autotune: o.autotune, Winograd: o.winograd}
	if o.autotune {
		bopts.TuneCache = o.tuneCache
	}
	newNet := func() (train.Backend, *train.Sequential, error) {
		var (
			b   train.Backend
			err error
		)
		if o.backend == "" {
			b, err = train.Default(bopts)
		} else {
			b, err = train.Open(o.backend, bopts)
			if errors.Is(err, train.ErrNoBackend) {
				return nil, nil, usagef("--backend: %v", err)
			}
		}
		if err != nil {
			return nil, nil, err
		}
		net, err := newModel(b, o.model, o.filters, inC, inH, classes, o.seed)
		if err != nil {
			b.Close()
			return nil, nil, err
		}
		return b, net, nil
	}
	// The step's memory is checked on the model's shapes (train.Shapes),
	// before any of it is allocated.
	side := inH // the largest side of the run: a schedule's last, the test side, a FixRes pass's
	if trainStream != nil {
		side = max(side, trainStream.full, testStream.full)
	}
	shapes, err := newModel(train.Shapes(), o.model, o.filters, inC, inH, classes, o.seed)
	if err != nil {
		return err
	}
	err = checkStepMemory(shapes, o, inC, side, world, localRanks)
	shapes.Close()
	if err != nil {
		return err
	}
	b, net, err := newNet()
	if err != nil {
		return err
	}
	defer b.Close()
	defer net.Close()
	opt := &train.SGD{Momentum: float32(o.momentum), WeightDecay: float32(o.weightDecay), Nesterov: o.nesterov}
	tr := train.NewTrainer(b, net, opt, newSchedule(o, steps), o.batch, o.seed)
	defer tr.Close()
	tr.Classes = classes
	tr.LabelSmoothing, tr.EvalFlip = o.labelSmoothing, o.tta == "flip"
	if o.ema > 0 {
		tr.EMA = &train.EMA{Decay: o.ema, Warmup: o.emaWarmup} // before loading: a checkpoint holds its average
	}
	if o.amp && prec == train.Float16 {
		tr.Scaler = train.NewGradScaler() // before loading: a checkpoint holds its state
	}
	tr.Data = train.DataID{Name: dataName(o.data), Samples: trainLen}
	if trainStream != nil {
		tr.Data.Samples = trainStream.l.DatasetLen() // trainLen is a rank's share times the ranks: may differ by rank
	}
	if o.checkpoint != "" {
		if err := tr.LoadCheckpoint(o.checkpoint); err == nil {
			if tr.Epoch < o.epochs {
				fmt.Fprintf(stderr, "resuming from %s at epoch %d step %d\n", o.checkpoint, tr.Epoch+1, tr.Step)
			}
		} else if errors.Is(err, train.ErrData) {
			return fmt.Errorf("%w: resume on the data it was saved on, or train into another --checkpoint", err)
		} else if errors.Is(err, train.ErrClasses) {
			return fmt.Errorf("%w: --data %s has %d classes; train it into another --checkpoint", err, o.data, classes)
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	closeReplicas, err := setupParallel(o, tr, comm, newNet)
	defer func() { tr.Close(); closeReplicas() }() // the trainer lets go of the replicas first
	if err != nil {
		return err
	}
	tr.NoOverlap, tr.ZeroGrad = o.noOverlap, o.zeroGrad
	if o.fixresBN > 0 && trainSet != nil {
		calib = &datasetStream{d: trainSet, tr: tr, rank: rank, local: o.batch / world}
	}

	sum := trainSummary{Model: o.model, Backend: b.Name(), Strategy: o.strategy, Devices: o.devices, WorldSize: world, SyncBN: o.syncBN && o.strategy != "single",
		Precision: prec.String(), Overlap: !o.noOverlap, ZeroGrad: "set_to_none", Threads: b.Threads(), NormThreads: o.normThreads, Winograd: o.winograd, Batch: o.batch, LR: o.lr,
		Epochs: o.epochs, Classes: classes, TrainImages: trainLen, TestImages: testLen, PerEpoch: []epochSummary{},
		Recipe: o.recipe, Schedule: scheduleName(o), LabelSmoothing: o.labelSmoothing, Nesterov: o.nesterov, EMA: o.ema, EMAWarmup: o.emaWarmup, TTA: o.tta,
		Resolutions: resSched, Curve: []curvePoint{}, TargetAccuracy: o.targetAccuracy}
	if o.zeroGrad {
		sum.ZeroGrad = "zero"
	}
	if pr, ok := b.(train.PrecisionReporter); ok {
		_, sum.NativeAMP = pr.Precision()
	}
	lineOut := stderr
	if rank > 0 {
		lineOut = io.Discard
	}
	wall := time.Now()
	evaluate := func() (train.Metrics, error) {
		if testSet != nil {
			return tr.Evaluate(ctx, testSet, o.batch)
		}
		return tr.EvaluateStream(ctx, testStream, 0)
	}
	if tr.Epoch >= o.epochs {
		// Nothing to train: say so, and evaluate what the checkpoint holds.
		fmt.Fprintf(lineOut, "training is already complete: %s has trained %d epoch(s), --epochs is %d; evaluating it\n", o.checkpoint, tr.Epoch, o.epochs)
		m, err := evaluate()
		if err != nil {
			return err
		}
		sum.AlreadyDone, sum.Epochs, sum.WeightsSHA256 = true, tr.Epoch, weightsDigest(net)
		sum.TestAccuracy, sum.TestTop5, sum.TestLoss = m.Top1, m.Top5, m.Loss
		if o.fixresBN > 0 {
			if err := fixres(ctx, o, tr, calib, evaluate, &sum, stdout); err != nil {
				return err
			}
			m = train.Metrics{Loss: sum.TestLoss, Top1: sum.TestAccuracy, Top5: sum.TestTop5, Samples: m.Samples}
		}
		sum.WallSeconds = time.Since(wall).Seconds()
		if o.json {
			return writeJSON(stdout, sum)
		}
		fmt.Fprintf(stdout, "already trained %d epoch(s) (%s): test loss %.4f acc %.2f%% top-5 %.2f%% on %d images\n",
			tr.Epoch, o.checkpoint, m.Loss, 100*m.Top1, 100*m.Top5, m.Samples)
		return nil
	}
	// Each epoch trains in stretches of --eval-every steps (TrainEpoch
	// stops at ErrStop and resumes where it stopped); an evaluation ends
	// each stretch and the epoch. The clock (sum.Seconds) counts training
	// only, so the curve's seconds and the time to the target exclude
	// evaluation.
	reached := false
	var lastEval train.Metrics
	evalAt := -1 // the global step of lastEval
	point := func(m train.Metrics) {
		g := tr.Epoch*steps + tr.Step
		lastEval, evalAt = m, g
		sum.EvalSeconds += m.Seconds
		sum.Curve = append(sum.Curve, curvePoint{Step: g, Epoch: float64(g) / float64(steps), Seconds: sum.Seconds, TestAccuracy: m.Top1, TestLoss: metric(m.Loss)})
		if o.targetAccuracy > 0 && !reached && m.Top1 >= o.targetAccuracy {
			reached = true
			sum.SecondsToTarget, sum.StepsToTarget = ptr(sum.Seconds), g
		}
	}
	for tr.Epoch < o.epochs && !reached {
		epoch := tr.Epoch + 1
		var data train.Dataset = trainSet
		side := resolutionAt(resSched, tr.Epoch, inH)
		if trainSet != nil && side != inH {
			data = train.NewResized(trainSet, side, side)
		}
		if trainStream != nil {
			trainStream.SetEpoch(tr.Epoch)
		}
		line := newTrainLine(lineOut, fmt.Sprintf("epoch %d/%d", epoch, o.epochs), int64((steps-tr.Step)*o.batch))
		onStep := func(r train.StepResult) error {
			line.step(r.Loss, r.Images)
			// Mid-epoch checkpoints (the epoch's last step is saved below,
			// after the epoch ends). Rank 0 writes; the ranks are in step.
			if o.checkpoint != "" && o.ckptEvery > 0 && rank == 0 && r.Step%o.ckptEvery == 0 && r.Step < r.Steps {
				if err := tr.SaveCheckpoint(o.checkpoint); err != nil {
					return err
				}
			}
			if o.evalEvery > 0 && ((r.Epoch-1)*steps+r.Step)%o.evalEvery == 0 {
				return train.ErrStop
			}
			return nil
		}
		var total train.EpochResult // the epoch's stretches together
		correct := 0.0
		for tr.Epoch < epoch && !reached {
			var res train.EpochResult
			cpu0 := usage.CPU()
			if trainStream == nil {
				res, err = tr.TrainEpoch(ctx, data, onStep)
			} else {
				res, err = tr.TrainStream(ctx, trainStream, onStep)
			}
			sum.CPUSeconds += (usage.CPU() - cpu0).Seconds()
			sum.Images += res.Images
			sum.Seconds += res.Seconds
			total.Images += res.Images
			total.Seconds += res.Seconds
			total.Loss += res.Loss * float64(res.Images)
			correct += res.Accuracy * float64(res.Images)
			if err != nil {
				line.done()
				if o.checkpoint != "" && ctx.Err() != nil && rank == 0 {
					if serr := tr.SaveCheckpoint(o.checkpoint); serr == nil {
						fmt.Fprintf(stderr, "saved %s at epoch %d step %d\n", o.checkpoint, tr.Epoch+1, tr.Step)
					}
				}
				return err
			}
			if tr.Epoch < epoch && tr.Step < steps { // stopped for an evaluation mid-epoch
				m, err := evaluate()
				if err != nil {
					line.done()
					return err
				}
				point(m)
			}
		}
		line.done()
		if total.Images > 0 {
			total.Loss /= float64(total.Images)
			total.Accuracy = correct / float64(total.Images)
		}
		if o.checkpoint != "" && rank == 0 {
			if err := tr.SaveCheckpoint(o.checkpoint); err != nil {
				return err
			}
		}
		m := lastEval
		if !reached && evalAt != tr.Epoch*steps { // not evaluated at this step yet
			if m, err = evaluate(); err != nil {
				return err
			}
			point(m)
		}
		es := epochSummary{Epoch: epoch, TrainLoss: total.Loss, TrainAcc: total.Accuracy, TestLoss: m.Loss, TestAccuracy: m.Top1, Resolution: side,
			TestTop5: m.Top5, Images: total.Images, Seconds: total.Seconds, ImagesPerSec: float64(total.Images) / max(total.Seconds, 1e-9)}
		sum.PerEpoch = append(sum.PerEpoch, es)
		sum.TestAccuracy, sum.TestTop5, sum.TestLoss = m.Top1, m.Top5, m.Loss
		if !o.json {
			fmt.Fprintf(stdout, "epoch %d/%d: train loss %.4f acc %.2f%%, test loss %.4f acc %.2f%% top-5 %.2f%%, %d images in %.1f s (%.1f images/s)\n",
				epoch, o.epochs, total.Loss, 100*total.Accuracy, m.Loss, 100*m.Top1, 100*m.Top5, total.Images, total.Seconds, es.ImagesPerSec)
		}
	}
	if reached && !o.json {
		fmt.Fprintf(stdout, "reached test accuracy %.2f%% (target %.2f%%) after %d steps, %.1f s of training (evaluation excluded)\n",
			100*lastEval.Top1, 100*o.targetAccuracy, sum.StepsToTarget, *sum.SecondsToTarget)
	}
	if comm != nil {
		if sum.DDP, err = commSummary(tr, comm, o.timeAR); err != nil {
			return err
		}
	}
	sum.WeightsSHA256 = weightsDigest(net) // the trained weights, before --fixres-bn
	if o.fixresBN > 0 {
		if err := fixres(ctx, o, tr, calib, evaluate, &sum, stdout); err != nil {
			return err
		}
	}
	sum.WallSeconds = time.Since(wall).Seconds()
	if sum.Seconds > 0 {
		sum.ImagesPerSec = float64(sum.Images) / sum.Seconds
	}
	if tu, ok := b.(train.Tuner); ok {
		sum.Autotune = tu.TuneChoices()
		for _, c := range sum.Autotune {
			sum.TuneSeconds += c.Seconds
		}
	}
	if tr.Scaler != nil {
		sum.SkippedSteps = tr.Scaler.Skipped
	}
	if o.json {
		return writeJSON(stdout, sum)
	}
	reportTuning(stdout, sum.Autotune)
	fmt.Fprintf(stdout, "trained %s on %s (%s, %d threads per device, batch %d, %s%s): %d images in %.1f s, %.1f images/s; test accuracy %.2f%%\n",
		o.model, b.Name(), describeStrategy(sum), b.Threads(), o.batch, sum.Precision, nativeNote(sum), sum.Images, sum.Seconds, sum.ImagesPerSec, 100*sum.TestAccuracy)
	return nil
}

// commSummary reports the trainer's gradient communication and, with
// rounds > 0, times that many rounds of a step's all-reduces alone (every
// rank takes part; the gradients are summed over again, after training).
func commSummary(tr *train.Trainer, comm collective.Comm, rounds int) (*ddpSummary, error) {
	cs := tr.CommStats()
	s := &ddpSummary{Steps: cs.Steps, BucketBytes: cs.Buckets}
	if cs.Steps > 0 {
		s.AllReducePerStep = cs.AllReduce.Seconds() / float64(cs.Steps)
		s.ExposedPerStep = cs.Exposed.Seconds() / float64(cs.Steps)
	}
	if rounds <= 0 {
		return s, nil
	}
	if err := comm.Barrier(); err != nil {
		return nil, err
	}
	start := time.Now()
	for range rounds {
		if err := tr.AllReduceGrads(); err != nil {
			return nil, err
		}
	}
	s.AlonePerStep, s.AloneRounds = ptr(time.Since(start).Seconds()/float64(rounds)), rounds
	return s, nil
}

// checkHyper reports the floating-point flags that are not finite (NaN and
// Inf parse as numbers, and a NaN rate would "train" to NaN weights) or
// outside their range, as torch.optim.SGD refuses a negative rate,
// momentum or weight decay.
func checkHyper(o trainOptions) []string {
	var problems []string
	for _, h := range []struct {
		flag     string
		v        float64
		positive bool // else not negative
	}{
		{"lr", o.lr, true}, {"momentum", o.momentum, false}, {"weight-decay", o.weightDecay, false},
		{"warmup", o.warmup, false}, {"step-epochs", o.stepEpochs, false}, {"gamma", o.gamma, true},
	} {
		switch {
		case math.IsNaN(h.v) || math.IsInf(h.v, 0) || math.Abs(h.v) > math.MaxFloat32:
			problems = append(problems, fmt.Sprintf("--%s %g: must be a finite number", h.flag, h.v))
		case h.positive && h.v <= 0:
			problems = append(problems, fmt.Sprintf("--%s %g: must be positive", h.flag, h.v))
		case h.v < 0:
			problems = append(problems, fmt.Sprintf("--%s %g: must not be negative", h.flag, h.v))
		}
	}
	return problems
}

// weightsDigest is the SHA-256 of net's parameters and buffers, each value
// as float32 little-endian, in order.
func weightsDigest(net train.Layer) string {
	h := sha256.New()
	var b []byte
	for _, p := range append(net.Params(), net.Buffers()...) {
		b = b[:0]
		for _, v := range p.Value {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// newModel builds the model on b for images of inC channels and side inH
// with a head of classes outputs.
func newModel(b train.Backend, model string, filters []int, inC, inH, classes int, seed uint64) (*train.Sequential, error) {
	if model == "resnet18" {
		// The small-input stem for MNIST-sized images, the ImageNet one above 64 pixels.
		return train.NewResNet18(b, train.ResNetConfig{InChannels: inC, Classes: classes, SmallInput: inH <= 64, Widths: filters}, seed)
	}
	cfg := train.ThinNetConfig{InChannels: inC, Classes: classes, Filters: filters}
	for range filters {
		cfg.Blocks = append(cfg.Blocks, 2)
	}
	return train.NewThinNet(b, cfg, seed)
}

// trainClasses is the number of classes the model's head gets: the
// number the training data records (names; an LMDB or WebDataset records
// its largest label), or --classes, which may be larger (outputs no label
// uses) and is needed for data that records none. The test data's classes
// (testNames) must begin with the training data's — a test tree missing
// the last class is fine, one missing another would shift the labels.
func trainClasses(o trainOptions, names, testNames []string) (int, error) {
	if len(names) > 0 && len(testNames) > 0 && !slices.Equal(testNames, names[:min(len(names), len(testNames))]) {
		return 0, fmt.Errorf("the test data's %d classes (%s) are not those of the training data's %d (%s): their labels would not agree",
			len(testNames), abbrev(testNames), len(names), abbrev(names))
	}
	n := max(len(names), len(testNames))
	switch {
	case o.classes > maxClasses:
		return 0, usagef("--classes %d: more than %d", o.classes, maxClasses)
	case n > maxClasses:
		return 0, fmt.Errorf("--data %s has %d classes, more than %d (a label read from damaged data?)", o.data, n, maxClasses)
	case o.classes > 0 && o.classes < n:
		return 0, usagef("--classes %d: the data has %d classes", o.classes, n)
	case o.classes > 0:
		return o.classes, nil
	case n > 0:
		return n, nil
	}
	return 0, usagef("--data %s does not record its classes (no class folders or manifest classes): give --classes N", o.data)
}

// dataName is --data as a checkpoint records it (train.DataID): a URL as
// given, a path made absolute with its symlinks resolved, so that runs
// from other folders or through a link name the same data alike.
func dataName(data string) string {
	if strings.Contains(data, "://") {
		return data
	}
	p, err := filepath.Abs(data)
	if err != nil {
		return data
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return p
}

// maxClasses bounds the model's head (ThinNet's 512×classes weights, with
// their gradients and momentum, take 6 GB at the bound): a class count
// above it comes from a mistake or from damaged labels.
const maxClasses = 1 << 20

// abbrev lists the first few of names.
func abbrev(names []string) string {
	if len(names) > 4 {
		return strings.Join(names[:4], ", ") + ", …"
	}
	return strings.Join(names, ", ")
}

func joinLines(s []string) string {
	out := s[0]
	for _, l := range s[1:] {
		out += "; " + l
	}
	return out
}

// trainLine draws the progress bar with the running loss appended. The
// progress.Bar only counts (it is given no writer); this line draws it,
// on a terminal only, from its own goroutine, stopped by done.
type trainLine struct {
	bar  *progress.Bar
	out  io.Writer
	loss atomic.Uint64 // float64 bits of the smoothed loss
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

func newTrainLine(out io.Writer, label string, total int64) *trainLine {
	l := &trainLine{bar: progress.New(nil, label, total, "images"), out: out, stop: make(chan struct{})}
	if progress.IsTerminal(out) {
		l.wg.Add(1)
		go l.loop()
	}
	return l
}

func (l *trainLine) step(loss float64, images int) {
	old := l.lossValue()
	if l.bar.Items() > 0 {
		loss = 0.9*old + 0.1*loss
	}
	l.loss.Store(math.Float64bits(loss))
	l.bar.Add(int64(images), 0)
}

func (l *trainLine) lossValue() float64 { return math.Float64frombits(l.loss.Load()) }

func (l *trainLine) loop() {
	defer l.wg.Done()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			fmt.Fprintf(l.out, "\r\033[K%s  loss %.4f\n", l.bar.Line(), l.lossValue())
			return
		case <-t.C:
			fmt.Fprintf(l.out, "\r\033[K%s  loss %.4f", l.bar.Line(), l.lossValue())
		}
	}
}

func (l *trainLine) done() {
	l.once.Do(func() {
		close(l.stop)
		l.wg.Wait()
		l.bar.Done()
	})
}

// checkStepMemory refuses, before anything is allocated, a model and
// batch whose training step would not fit: the activations and parameters
// of o.batch/world images of inC×side×side (the largest side of the run)
// against --max-memory, by default half the memory of this machine (or
// its container) shared by the localRanks ranks on it. The loader budgets
// its batches in flight in the same way (loader.Options.MaxBatchMemory).
func checkStepMemory(net train.Layer, o trainOptions, inC, side, world, localRanks int) error {
	n := o.batch / world
	m, err := train.EstimateMemory(net, n, inC, side, side)
	if err != nil {
		return usagef("--model %s at %d×%d×%d, batch %d: %v", o.model, inC, side, side, n, err)
	}
	budget, what := int64(o.maxMemory), "--max-memory"
	if budget == 0 {
		budget, what = sysmem.Total()/2/int64(localRanks), "half this machine's memory"
		if localRanks > 1 {
			what += fmt.Sprintf(" shared by its %d ranks", localRanks)
		}
	}
	if m.Total() > budget {
		return usagef("--model %s at %d×%d, batch %d per rank: a training step holds %.1f GB (activations %.1f GB, parameters with gradients and momentum %.1f GB), above %s (%.1f GB); lower --batch or --resolution, or raise --max-memory",
			o.model, side, side, n, float64(m.Total())/1e9, float64(m.Activations)/1e9, float64(m.Params)/1e9, what, float64(budget)/1e9)
	}
	return nil
}
