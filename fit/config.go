package fit

import (
	"fmt"
	"math"
	"strings"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/loader"
	"github.com/faster-training/faster/train"
)

// Config is one training run: what `faster train`'s flags say, typed.
// Start from DefaultConfig (the flags' defaults). Problems are named by the
// flag that sets the field, for that is how users meet them.
type Config struct {
	Data       DataConfig
	Model      ModelConfig
	Optim      OptimConfig
	Eval       EvalConfig
	Parallel   ParallelConfig
	Checkpoint CheckpointConfig
	Epochs     int    // in total, counting resumed ones
	Batch      int    // the global batch (split over the ranks)
	Seed       uint64 // initial weights and shuffling
	Recipe     string // a recipe's name, as the summary reports it ("fast"; the fields are set already)
}

// DataConfig is where the images come from and how they are prepared.
type DataConfig struct {
	// Path is an IDX directory (held in memory), a packed dataset (its
	// train and test splits; a local directory or a storage URL) or an
	// ImageFolder tree; TestPath the test images of an ImageFolder.
	Path, TestPath string
	// Resolution is the side of packed or ImageFolder images (0: the
	// packed images' width, else 224).
	Resolution int
	// Schedule is the training side per epoch (progressive resizing; the
	// last for the remaining epochs); Progressive chooses it (70% of full
	// up to full at the last epoch). Neither: full size throughout.
	Schedule    []int
	Progressive bool
	// Classes is the model head's size (0: from the data); LabelOffset is
	// added to every stored label of packed data.
	Classes, LabelOffset int
	// Limit and TestLimit keep the first N images of IDX data (0: all).
	Limit, TestLimit int
	// BadData is the damaged-sample policy.
	BadData loader.BadDataPolicy
	// The train recipe's augmentations after the crop and flip, and the
	// erasing after normalising; EvalResize is the eval recipe's Resize
	// (0: the loader's default for the resolution).
	Augment    augment.ImageOp
	Erasing    *augment.RandomErasing
	EvalResize int
}

// ModelConfig is the model and what computes it.
type ModelConfig struct {
	Name        string // thinnet or resnet18
	Filters     []int  // stage widths (nil: the model's own)
	Backend     string // onednn or reference ("": onednn when built with cgo)
	Threads     int    // compute threads (0: the CPUs)
	NormThreads int    // BatchNorm's threads (0: Threads)
	Winograd    bool
	// MaxMemory bounds one training step's memory in bytes (0: half this
	// machine's or container's memory, shared by its ranks).
	MaxMemory int64
}

// OptimConfig is the optimiser, its learning-rate schedule and the loss.
type OptimConfig struct {
	LR, Momentum, WeightDecay float64
	// Schedule is constant, step (Warmup, StepEpochs, Gamma) or onecycle
	// (PctStart, DivFactor, FinalDivFactor; LR is the peak); "": step when
	// Warmup or StepEpochs is set, else constant.
	Schedule                            string
	Warmup, StepEpochs, Gamma           float64
	PctStart, DivFactor, FinalDivFactor float64
	LabelSmoothing                      float64
	Nesterov                            bool
	EMA                                 float64 // decay of the evaluated weights' average (0: off)
	EMAWarmup                           bool
}

// EvalConfig is how and when the test split is evaluated.
type EvalConfig struct {
	TTA            string  // none or flip
	Every          int     // also every N steps (0: after each epoch only)
	TargetAccuracy float64 // stop once reached (0: never)
	FixResBN       int     // after training, recompute BatchNorm from N batches at the test resolution (0: off)
}

// ParallelConfig is the study's speed-ups: strategy, precision, tuning.
type ParallelConfig struct {
	Strategy      string // single, dp or ddp
	Devices       int    // dp's devices (0: 2)
	SyncBN        bool
	AMP           bool
	AMPDtype      string // bf16 or fp16
	Autotune      bool
	TuneCache     string
	NoOverlap     bool
	ZeroGrad      bool
	BucketKB      int
	TimeAllReduce int // ddp: time N rounds of a step's all-reduces alone after training
	// LocalRanks is the number of ranks on this machine (torchrun's
	// LOCAL_WORLD_SIZE), which share its memory budget (0: 1).
	LocalRanks int
}

// CheckpointConfig is where the state is saved and how often.
type CheckpointConfig struct {
	Path  string // saved after each epoch; resumed from when it exists
	Every int    // also every N steps within an epoch
	// SameData resumes a checkpoint saved on data at another path (the
	// dataset moved) when the epoch's sample count is the same
	// (train.Trainer.DataMoved).
	SameData bool
}

// DefaultConfig is `faster train`'s defaults.
func DefaultConfig() Config {
	return Config{
		Model:    ModelConfig{Name: "thinnet", Winograd: true},
		Optim:    OptimConfig{LR: 0.001, Momentum: 0.9, Gamma: 0.1, PctStart: 0.3, DivFactor: 25, FinalDivFactor: 1e4},
		Eval:     EvalConfig{TTA: "none"},
		Parallel: ParallelConfig{Strategy: "single", AMPDtype: "bf16", TuneCache: train.DefaultTuneCachePath(), BucketKB: train.DefaultBucketBytes >> 10},
		Epochs:   1,
		Batch:    512,
		Seed:     1,
	}
}

// ConfigError is a run that cannot start as configured: every problem
// found, each naming its flag. It is a usage error to the CLI.
type ConfigError struct{ Problems []string }

func (e *ConfigError) Error() string { return strings.Join(e.Problems, "; ") }

func configErrorf(format string, a ...any) error {
	return &ConfigError{[]string{fmt.Sprintf(format, a...)}}
}

// Validate checks c, reporting every problem at once (a *ConfigError),
// and fills the defaults that depend on other fields (dp's devices).
func (c *Config) Validate() error {
	if p := c.Problems(); len(p) > 0 {
		return &ConfigError{p}
	}
	return nil
}

// Problems lists what Validate reports, for a caller that has its own to
// add (the CLI's flags) and fills the same defaults.
func (c *Config) Problems() []string {
	var problems []string
	add := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	d, m := &c.Data, &c.Model
	if d.Path == "" {
		add("--data is required")
	}
	if m.Name != "thinnet" && m.Name != "resnet18" {
		add("--model %q: want thinnet or resnet18", m.Name)
	}
	for _, f := range []struct {
		name     string
		v, least int
	}{{"epochs", c.Epochs, 1}, {"batch", c.Batch, 1}, {"threads", m.Threads, 0}, {"norm-threads", m.NormThreads, 0}, {"limit", d.Limit, 0}, {"test-limit", d.TestLimit, 0}} {
		if f.v < f.least {
			add("--%s %d: must be at least %d", f.name, f.v, f.least)
		}
	}
	if d.Resolution < 0 || d.Resolution > loader.MaxResolution {
		add("--resolution %d: want 1 to %d (the decoder's limit of %d pixels per image), or 0 for the data's own", d.Resolution, loader.MaxResolution, loader.MaxResolution*loader.MaxResolution)
	}
	problems = append(problems, c.optimProblems()...)
	problems = append(problems, c.recipeProblems()...)
	if c.Eval.FixResBN < 0 {
		add("--fixres-bn %d: want a number of batches (0: off)", c.Eval.FixResBN)
	}
	if d.Classes < 0 {
		add("--classes must be positive")
	}
	if d.LabelOffset < -loader.MaxLabelOffset || d.LabelOffset > loader.MaxLabelOffset {
		add("--label-offset %d: at most %d either way (the largest label a container stores)", d.LabelOffset, loader.MaxLabelOffset)
	}
	if c.Checkpoint.Every < 0 || (c.Checkpoint.Every > 0 && c.Checkpoint.Path == "") {
		add("--checkpoint-every takes a positive step count, with --checkpoint")
	}
	if c.Checkpoint.SameData && c.Checkpoint.Path == "" {
		add("--same-data goes with --checkpoint (it resumes one saved on data that moved)")
	}
	for _, f := range m.Filters {
		if f < 1 || (m.Name == "resnet18" && len(m.Filters) != 4) {
			add("--filters takes positive widths: ThinNet's stages, or ResNet-18's four")
			break
		}
	}
	if m.MaxMemory < 0 {
		add("--max-memory must not be negative")
	}
	return append(problems, c.parallelProblems()...)
}

// optimProblems reports the floating-point settings that are not finite
// (NaN and Inf parse as numbers, and a NaN rate would "train" to NaN
// weights) or outside their range, as torch.optim.SGD refuses a negative
// rate, momentum or weight decay, and beyond float32's (each message says
// which bound).
func (c *Config) optimProblems() []string {
	var problems []string
	o := c.Optim
	for _, h := range []struct {
		flag     string
		v        float64
		positive bool // else not negative
	}{
		{"lr", o.LR, true}, {"momentum", o.Momentum, false}, {"weight-decay", o.WeightDecay, false},
		{"warmup", o.Warmup, false}, {"step-epochs", o.StepEpochs, false}, {"gamma", o.Gamma, true},
	} {
		switch {
		case math.IsNaN(h.v):
			problems = append(problems, fmt.Sprintf("--%s %g: not a number", h.flag, h.v))
		case math.IsInf(h.v, 0):
			problems = append(problems, fmt.Sprintf("--%s %g: must be finite", h.flag, h.v))
		case h.positive && h.v <= 0:
			problems = append(problems, fmt.Sprintf("--%s %g: must be positive", h.flag, h.v))
		case h.v < 0:
			problems = append(problems, fmt.Sprintf("--%s %g: must not be negative", h.flag, h.v))
		case h.v > math.MaxFloat32: // training runs in float32
			problems = append(problems, fmt.Sprintf("--%s %g: at most %.2g (float32's largest)", h.flag, h.v, math.MaxFloat32))
		}
	}
	return problems
}

// recipeProblems validates the recipe's settings.
func (c *Config) recipeProblems() []string {
	var problems []string
	o, e := c.Optim, c.Eval
	switch o.Schedule {
	case "", "constant", "step", "onecycle":
	default:
		problems = append(problems, fmt.Sprintf("--schedule %q: want constant, step or onecycle", o.Schedule))
	}
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	if bad(o.PctStart) || o.PctStart <= 0 || o.PctStart >= 1 {
		problems = append(problems, fmt.Sprintf("--pct-start %g: want a fraction in (0, 1)", o.PctStart))
	}
	if bad(o.DivFactor) || o.DivFactor <= 0 || bad(o.FinalDivFactor) || o.FinalDivFactor <= 0 {
		problems = append(problems, "--div-factor and --final-div-factor must be positive finite numbers")
	}
	if bad(o.LabelSmoothing) || o.LabelSmoothing < 0 || o.LabelSmoothing > 1 {
		problems = append(problems, fmt.Sprintf("--label-smoothing %g: want a value in [0, 1]", o.LabelSmoothing))
	}
	if o.Nesterov && o.Momentum <= 0 {
		problems = append(problems, "--nesterov needs a positive --momentum (as torch.optim.SGD)")
	}
	if bad(o.EMA) || o.EMA < 0 || o.EMA >= 1 {
		problems = append(problems, fmt.Sprintf("--ema %g: want a decay in [0, 1)", o.EMA))
	}
	if e.TTA != "none" && e.TTA != "flip" {
		problems = append(problems, fmt.Sprintf("--tta %q: want none or flip", e.TTA))
	}
	for _, v := range c.Data.Schedule {
		if v < 8 || v > 4096 {
			problems = append(problems, fmt.Sprintf("--resolution-schedule %v: want sides between 8 and 4096", c.Data.Schedule))
			break
		}
	}
	if c.Data.Progressive && len(c.Data.Schedule) > 0 {
		problems = append(problems, "a resolution schedule is either given or progressive (auto), not both")
	}
	if e.Every < 0 {
		problems = append(problems, "--eval-every must not be negative")
	}
	if bad(e.TargetAccuracy) || e.TargetAccuracy < 0 || e.TargetAccuracy > 1 {
		problems = append(problems, fmt.Sprintf("--target-accuracy %g: want a fraction in [0, 1], e.g. 0.92", e.TargetAccuracy))
	}
	return problems
}

// parallelProblems validates the strategy settings and fills their
// defaults.
func (c *Config) parallelProblems() []string {
	var problems []string
	p := &c.Parallel
	switch p.Strategy {
	case "single", "ddp":
		if p.Devices > 1 {
			problems = append(problems, fmt.Sprintf("--devices %d needs --strategy dp (ddp runs one device per process)", p.Devices))
		}
		p.Devices = 1
	case "dp":
		if p.Devices == 0 {
			p.Devices = 2
		}
		if p.Devices < 1 {
			problems = append(problems, "--devices must be positive")
		}
	default:
		problems = append(problems, fmt.Sprintf("--strategy %q: want single, dp or ddp", p.Strategy))
	}
	if _, err := train.ParsePrecision(p.AMPDtype); err != nil || p.AMPDtype == "fp32" {
		problems = append(problems, fmt.Sprintf("--amp-dtype %q: want bf16 or fp16", p.AMPDtype))
	}
	if p.BucketKB < 1 {
		problems = append(problems, "--bucket-kb must be positive")
	}
	if p.TimeAllReduce < 0 || (p.TimeAllReduce > 0 && p.Strategy != "ddp") {
		problems = append(problems, "--time-allreduce N (N ≥ 1) goes with --strategy ddp")
	}
	if p.Strategy == "dp" && c.Batch < p.Devices {
		problems = append(problems, fmt.Sprintf("--batch %d is smaller than --devices %d", c.Batch, p.Devices))
	}
	return problems
}

// augmented reports whether the data config asks for augmentations beyond
// the train recipe's crop and flip (which IDX data cannot take).
func (d *DataConfig) augmented() bool { return d.Augment != nil || d.Erasing != nil }
