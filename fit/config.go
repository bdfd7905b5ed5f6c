package fit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/loader"
	"github.com/faster-training/faster/train"
)

// Config is one training run: what `faster train`'s flags say, typed, and
// what `faster train --config FILE` reads (its JSON, snake_case; fields
// left out keep DefaultConfig's values). Start from DefaultConfig.
// Problems are named by the field's JSON path (data.path, optim.lr), as a
// file says them; the CLI names the flag that sets the field.
type Config struct {
	Data       DataConfig       `json:"data"`
	Model      ModelConfig      `json:"model"`
	Optim      OptimConfig      `json:"optim"`
	Eval       EvalConfig       `json:"eval"`
	Parallel   ParallelConfig   `json:"parallel"`
	Checkpoint CheckpointConfig `json:"checkpoint"`
	Epochs     int              `json:"epochs"` // in total, counting resumed ones
	Batch      int              `json:"batch"`  // the global batch (split over the ranks)
	Seed       uint64           `json:"seed"`   // initial weights and shuffling
	// LogEvery is the steps between reads of the training loss
	// (train.Trainer.LossEvery: a device backend is synchronised once per
	// read; the progress line shows the last loss read). 0: every step on
	// the cpu, every DeviceLogEvery steps on another device.
	LogEvery int `json:"log_every,omitempty"`
	// Recipe is a recipe's name, as the summary reports it ("fast"; the
	// fields are set already: FastRecipe).
	Recipe string `json:"recipe,omitempty"`
}

// DataConfig is where the images come from and how they are prepared:
// the loader's description (loader.Spec: path, resolution, classes,
// label_offset, the bad-data policy, the recipe's parameters, the cache,
// …; its JSON fields inline), which the run reads through the loader's
// train and eval recipes. The run sets the spec's batch (Config.Batch
// split over the ranks), seed (Config.Seed), world_size, rank and
// transform: in a file they are left out.
type DataConfig struct {
	// Spec's Path is an IDX directory (held in memory), a packed dataset
	// (its train and test splits; a local directory or a storage URL) or
	// an ImageFolder tree; its Resolution the side of packed or
	// ImageFolder images (0: the packed images' width, else 224).
	loader.Spec
	// TestPath is the test images of an ImageFolder.
	TestPath string `json:"test_path,omitempty"`
	// Schedule is the training side per epoch (progressive resizing; the
	// last for the remaining epochs); Progressive chooses it (70% of full
	// up to full at the last epoch). Neither: full size throughout.
	Schedule    []int `json:"resolution_schedule,omitempty"`
	Progressive bool  `json:"progressive,omitempty"`
	// Limit and TestLimit keep the first N images of IDX data (0: all).
	Limit     int `json:"limit,omitempty"`
	TestLimit int `json:"test_limit,omitempty"`
}

// ModelConfig is the model and what computes it.
type ModelConfig struct {
	Name    string `json:"name"`              // thinnet or resnet18
	Filters []int  `json:"filters,omitempty"` // stage widths (nil: the model's own)
	Backend string `json:"backend,omitempty"` // onednn, reference or cuda ("": cuda on a cuda device, else onednn when built with cgo)
	// Device is where the backend runs: cpu ("" too), cuda (the first
	// GPU) or cuda:N. A cuda device picks backend cuda unless Backend
	// names another, which must then run there (train.ErrDevice).
	Device      string `json:"device,omitempty"`
	Threads     int    `json:"threads"`      // compute threads (0: the CPUs)
	NormThreads int    `json:"norm_threads"` // BatchNorm's threads (0: Threads)
	Winograd    bool   `json:"winograd"`
	// MaxMemory bounds one training step's memory in bytes (0: half this
	// machine's or container's memory, shared by its ranks).
	MaxMemory int64 `json:"max_memory"`
}

// OptimConfig is the optimiser, its learning-rate schedule and the loss.
type OptimConfig struct {
	LR          float64 `json:"lr"`
	Momentum    float64 `json:"momentum"`
	WeightDecay float64 `json:"weight_decay"`
	// Schedule is constant, step (Warmup, StepEpochs, Gamma) or onecycle
	// (PctStart, DivFactor, FinalDivFactor; LR is the peak); "": step when
	// Warmup or StepEpochs is set, else constant.
	Schedule       string  `json:"schedule"`
	Warmup         float64 `json:"warmup"`
	StepEpochs     float64 `json:"step_epochs"`
	Gamma          float64 `json:"gamma"`
	PctStart       float64 `json:"pct_start"`
	DivFactor      float64 `json:"div_factor"`
	FinalDivFactor float64 `json:"final_div_factor"`
	LabelSmoothing float64 `json:"label_smoothing"`
	Nesterov       bool    `json:"nesterov"`
	EMA            float64 `json:"ema"` // decay of the evaluated weights' average (0: off)
	EMAWarmup      bool    `json:"ema_warmup"`
}

// EvalConfig is how and when the test split is evaluated.
type EvalConfig struct {
	TTA            string  `json:"tta"`             // none or flip
	Every          int     `json:"every"`           // also every N steps (0: after each epoch only)
	TargetAccuracy float64 `json:"target_accuracy"` // stop once reached (0: never)
	FixResBN       int     `json:"fixres_bn"`       // after training, recompute BatchNorm from N batches at the test resolution (0: off)
}

// ParallelConfig is the study's speed-ups: strategy, precision, tuning.
type ParallelConfig struct {
	Strategy  string `json:"strategy"` // single, dp or ddp
	Devices   int    `json:"devices"`  // dp's devices (0: 2)
	SyncBN    bool   `json:"sync_bn"`
	AMP       bool   `json:"amp"`
	AMPDtype  string `json:"amp_dtype"` // bf16 or fp16
	Autotune  bool   `json:"autotune"`
	TuneCache string `json:"tune_cache"`
	NoOverlap bool   `json:"no_overlap"`
	ZeroGrad  bool   `json:"zero_grad"`
	// CUDAGraph runs each training step as a captured graph, replayed
	// (train.Trainer.CaptureStep): only on a backend that implements
	// train.StepCapturer (cuda), with strategy single.
	CUDAGraph bool `json:"cuda_graph,omitempty"`
	// ChannelsLast runs a GPU backend's 16-bit convolutions channels-last
	// (train.BackendOptions.ChannelsLast; PyTorch's channels_last memory
	// format): with amp, on the cuda backend; elsewhere it changes nothing.
	ChannelsLast bool `json:"channels_last,omitempty"`
	// Profile times each call the last epoch's steps queue on the first
	// device (train.StepProfiler: cuda's CUDA events) and puts where the
	// device's time went in the summary; that epoch's steps run eagerly,
	// slower by the events' cost.
	Profile       bool `json:"profile,omitempty"`
	BucketKB      int  `json:"bucket_kb"`
	TimeAllReduce int  `json:"time_allreduce"` // ddp: time N rounds of a step's all-reduces alone after training
	// LocalRanks is the number of ranks on this machine (torchrun's
	// LOCAL_WORLD_SIZE), which share its memory budget (0: 1).
	LocalRanks int `json:"local_ranks,omitempty"`
}

// CheckpointConfig is where the state is saved and how often.
type CheckpointConfig struct {
	Path  string `json:"path,omitempty"` // saved after each epoch; resumed from when it exists
	Every int    `json:"every"`          // also every N steps within an epoch
	// SameData resumes a checkpoint saved on data at another path (the
	// dataset moved) when the epoch's sample count is the same
	// (train.Trainer.DataMoved).
	SameData bool `json:"same_data"`
}

// DefaultConfig is `faster train`'s defaults. Its data part is the
// loader's defaults (loader.Defaults) less what the run sets (batch, seed,
// world_size, rank, transform) and with resolution 0 (the data's).
func DefaultConfig() Config {
	d := loader.Defaults()
	d.Batch, d.WorldSize, d.Transform, d.Resolution = 0, 0, "", 0
	// Left out, data.device follows model.device: a GPU model's training
	// images are decoded on its GPU where the loader can (decodeOn).
	d.Device = ""
	// Left out, data.layout follows the model's device too: u8-hwc to a
	// GPU model fed by the CPU decoder, f32-chw otherwise (trainLayout).
	d.Layout = ""
	return Config{
		Data:     DataConfig{Spec: d},
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
// found, each named by its field's JSON path (data.path, optim.lr). It is
// a usage error to the CLI, which names the flag of each field.
type ConfigError struct{ Problems []augment.Problem }

func (e *ConfigError) Error() string { return augment.Problems(e.Problems).Error() }

// configErrorf is a ConfigError of one problem of field.
func configErrorf(field, format string, a ...any) error {
	return &ConfigError{[]augment.Problem{{Field: field, Msg: fmt.Sprintf(format, a...)}}}
}

// Validate checks c, reporting every problem at once (a *ConfigError),
// and fills the defaults that depend on other fields (dp's devices).
func (c *Config) Validate() error {
	if p := c.Problems(); len(p) > 0 {
		return &ConfigError{p}
	}
	return nil
}

// problemList collects problems.
type problemList []augment.Problem

func (l *problemList) add(field, format string, a ...any) {
	*l = append(*l, augment.Problem{Field: field, Msg: fmt.Sprintf(format, a...)})
}

// Problems lists what Validate reports, for a caller that has its own to
// add (the CLI's flags) and fills the same defaults.
func (c *Config) Problems() []augment.Problem {
	var ps problemList
	d, m := &c.Data, &c.Model
	if d.Path == "" {
		ps.add("data.path", "is required")
	}
	if m.Name != "thinnet" && m.Name != "resnet18" {
		ps.add("model.name", "%q: want thinnet or resnet18", m.Name)
	}
	for _, f := range []struct {
		name     string
		v, least int
	}{{"epochs", c.Epochs, 1}, {"batch", c.Batch, 1}, {"model.threads", m.Threads, 0}, {"model.norm_threads", m.NormThreads, 0},
		{"data.limit", d.Limit, 0}, {"data.test_limit", d.TestLimit, 0}} {
		if f.v < f.least {
			ps.add(f.name, "%d: must be at least %d", f.v, f.least)
		}
	}
	if d.Resolution < 0 || d.Resolution > loader.MaxResolution {
		ps.add("data.resolution", "%d: want 1 to %d (the decoder's limit of %d pixels per image), or 0 for the data's own", d.Resolution, loader.MaxResolution, loader.MaxResolution*loader.MaxResolution)
	}
	ps = append(ps, c.optimProblems()...)
	ps = append(ps, c.recipeProblems()...)
	ps = append(ps, c.dataProblems()...)
	if c.Eval.FixResBN < 0 {
		ps.add("eval.fixres_bn", "%d: want a number of batches (0: off)", c.Eval.FixResBN)
	}
	if c.Checkpoint.Every < 0 || (c.Checkpoint.Every > 0 && c.Checkpoint.Path == "") {
		ps.add("checkpoint.every", "takes a positive step count, with a checkpoint path")
	}
	if c.Checkpoint.SameData && c.Checkpoint.Path == "" {
		ps.add("checkpoint.same_data", "goes with a checkpoint path (it resumes one saved on data that moved)")
	}
	for _, f := range m.Filters {
		if f < 1 || (m.Name == "resnet18" && len(m.Filters) != 4) {
			ps.add("model.filters", "takes positive widths: ThinNet's stages, or ResNet-18's four")
			break
		}
	}
	if m.MaxMemory < 0 {
		ps.add("model.max_memory", "must not be negative")
	}
	if _, err := ParseDevice(m.Device); err != nil {
		ps.add("model.device", "%v", err)
	}
	if c.LogEvery < 0 {
		ps.add("log_every", "%d: must be at least 0", c.LogEvery)
	}
	return append(ps, c.parallelProblems()...)
}

// dataProblems checks the loader's description as the run uses it (the
// spec with the run's batch, seed and ranks; loader.Spec.Validate), each
// problem named data.<field>, and the fields the run sets itself.
func (c *Config) dataProblems() []augment.Problem {
	var ps problemList
	d := c.Data.Spec
	if d.Batch != 0 || d.WorldSize != 0 || d.Rank != 0 || d.Transform != "" || d.Seed != 0 {
		ps.add("data", "batch, seed, world_size, rank and transform are the run's (batch, seed, the ranks, train and eval): leave them out")
	}
	if len(d.Augment) > 0 {
		ps.add("data.augment", "training runs the fixed recipes (data.recipe), not an op list")
	}
	if d.Device != "" && d.Device != "cpu" {
		dd, err := ParseDevice(d.Device)
		md, _ := ParseDevice(c.Model.Device)
		if err == nil && dd != md {
			ps.add("data.device", "%s: training images are decoded on the GPU the model trains on (model.device %s), or on the cpu: leave it out (it follows model.device), or say cpu or %s", d.Device, md, md)
		}
	}
	if d.CPUShare > 0 {
		if dev, _ := decodeOn(c); dev == "" {
			ps.add("data.cpu_share", "%v: a share of the batches decoded on the model's GPU; the training images are decoded on the cpu here (model.device %q, data.device %q)", d.CPUShare, c.Model.Device, d.Device)
		}
	}
	s := c.loaderSpec(max(c.Batch, 1), 0, 1)
	for _, p := range s.Problems() {
		switch p.Field {
		case "batch", "seed", "world_size", "rank", "transform":
			continue // the run's, checked above
		case "resolution":
			continue // 0 is the data's: checked above
		}
		ps = append(ps, augment.Problem{Field: "data." + p.Field, Msg: p.Msg})
	}
	return ps
}

// loaderSpec is the data's loader.Spec for rank of world ranks: the run's
// batch (split over the ranks), seed and the train transform; the
// resolution 224 when the data says it (0), for the checks.
func (c *Config) loaderSpec(batch int, rank, world int) loader.Spec {
	s := c.Data.Spec
	s.Batch, s.Seed, s.WorldSize, s.Rank, s.Transform = batch, c.Seed, world, rank, loader.Train
	if s.Resolution == 0 {
		s.Resolution = 224
	}
	if s.Layout == "" {
		s.Layout = loader.F32CHW
	}
	if s.Split == "" {
		s.Split = "train"
	}
	return s
}

// optimProblems reports the floating-point settings that are not finite
// (NaN and Inf parse as numbers, and a NaN rate would "train" to NaN
// weights) or outside their range, as torch.optim.SGD refuses a negative
// rate, momentum or weight decay, and beyond float32's (each message says
// which bound).
func (c *Config) optimProblems() []augment.Problem {
	var ps problemList
	o := c.Optim
	for _, h := range []struct {
		field    string
		v        float64
		positive bool // else not negative
	}{
		{"optim.lr", o.LR, true}, {"optim.momentum", o.Momentum, false}, {"optim.weight_decay", o.WeightDecay, false},
		{"optim.warmup", o.Warmup, false}, {"optim.step_epochs", o.StepEpochs, false}, {"optim.gamma", o.Gamma, true},
	} {
		switch {
		case math.IsNaN(h.v):
			ps.add(h.field, "%g: not a number", h.v)
		case math.IsInf(h.v, 0):
			ps.add(h.field, "%g: must be finite", h.v)
		case h.positive && h.v <= 0:
			ps.add(h.field, "%g: must be positive", h.v)
		case h.v < 0:
			ps.add(h.field, "%g: must not be negative", h.v)
		case h.v > math.MaxFloat32: // training runs in float32
			ps.add(h.field, "%g: at most %.2g (float32's largest)", h.v, math.MaxFloat32)
		}
	}
	return ps
}

// recipeProblems validates the recipe's settings.
func (c *Config) recipeProblems() []augment.Problem {
	var ps problemList
	o, e := c.Optim, c.Eval
	switch o.Schedule {
	case "", "constant", "step", "onecycle":
	default:
		ps.add("optim.schedule", "%q: want constant, step or onecycle", o.Schedule)
	}
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	if bad(o.PctStart) || o.PctStart <= 0 || o.PctStart >= 1 {
		ps.add("optim.pct_start", "%g: want a fraction in (0, 1)", o.PctStart)
	}
	if bad(o.DivFactor) || o.DivFactor <= 0 {
		ps.add("optim.div_factor", "%g: must be a positive finite number", o.DivFactor)
	}
	if bad(o.FinalDivFactor) || o.FinalDivFactor <= 0 {
		ps.add("optim.final_div_factor", "%g: must be a positive finite number", o.FinalDivFactor)
	}
	if bad(o.LabelSmoothing) || o.LabelSmoothing < 0 || o.LabelSmoothing > 1 {
		ps.add("optim.label_smoothing", "%g: want a value in [0, 1]", o.LabelSmoothing)
	}
	if o.Nesterov && o.Momentum <= 0 {
		ps.add("optim.nesterov", "needs a positive momentum (as torch.optim.SGD)")
	}
	if bad(o.EMA) || o.EMA < 0 || o.EMA >= 1 {
		ps.add("optim.ema", "%g: want a decay in [0, 1)", o.EMA)
	}
	if e.TTA != "none" && e.TTA != "flip" {
		ps.add("eval.tta", "%q: want none or flip", e.TTA)
	}
	for _, v := range c.Data.Schedule {
		if v < 8 || v > 4096 {
			ps.add("data.resolution_schedule", "%v: want sides between 8 and 4096", c.Data.Schedule)
			break
		}
	}
	if c.Data.Progressive && len(c.Data.Schedule) > 0 {
		ps.add("data.resolution_schedule", "either given or progressive (auto), not both")
	}
	if e.Every < 0 {
		ps.add("eval.every", "must not be negative")
	}
	if bad(e.TargetAccuracy) || e.TargetAccuracy < 0 || e.TargetAccuracy > 1 {
		ps.add("eval.target_accuracy", "%g: want a fraction in [0, 1], e.g. 0.92", e.TargetAccuracy)
	}
	return ps
}

// parallelProblems validates the strategy settings and fills their
// defaults.
func (c *Config) parallelProblems() []augment.Problem {
	var ps problemList
	p := &c.Parallel
	switch p.Strategy {
	case "single", "ddp":
		if p.Devices > 1 {
			ps.add("parallel.devices", "%d needs strategy dp (ddp runs one device per process)", p.Devices)
		}
		p.Devices = 1
	case "dp":
		if p.Devices == 0 {
			p.Devices = 2
		}
		if p.Devices < 1 {
			ps.add("parallel.devices", "must be positive")
		}
	default:
		ps.add("parallel.strategy", "%q: want single, dp or ddp", p.Strategy)
	}
	if _, err := train.ParsePrecision(p.AMPDtype); err != nil || p.AMPDtype == "fp32" {
		ps.add("parallel.amp_dtype", "%q: want bf16 or fp16", p.AMPDtype)
	}
	if p.BucketKB < 1 {
		ps.add("parallel.bucket_kb", "must be positive")
	}
	if p.TimeAllReduce < 0 || (p.TimeAllReduce > 0 && p.Strategy != "ddp") {
		ps.add("parallel.time_allreduce", "N (N ≥ 1) goes with strategy ddp")
	}
	if p.CUDAGraph && p.Strategy != "single" {
		ps.add("parallel.cuda_graph", "captures one device's step: want strategy single, not %q", p.Strategy)
	}
	if p.Strategy == "dp" && c.Batch < p.Devices {
		ps.add("batch", "%d is smaller than the %d devices", c.Batch, p.Devices)
	}
	return ps
}

// ReadConfig reads a Config's JSON from r over base (fields left out keep
// base's values): `faster train --config FILE`. An unknown field or a
// value of the wrong type is an error naming the field (and the offset).
func ReadConfig(r io.Reader, base Config) (Config, error) {
	c := base
	raw, err := io.ReadAll(io.LimitReader(r, loader.MaxSpecBytes+1))
	if err != nil {
		return base, err
	}
	if len(raw) > loader.MaxSpecBytes {
		return base, fmt.Errorf("over %d bytes: not a run's description", loader.MaxSpecBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te):
			field := strings.ReplaceAll(te.Field, "data.Spec.", "data.") // the embedded spec's fields are data's
			return base, fmt.Errorf("%s: want %s, got JSON %s (offset %d)", field, te.Type, te.Value, te.Offset)
		case errors.As(err, &se):
			return base, fmt.Errorf("offset %d: %v", se.Offset, se)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return base, errors.New("the JSON ends early")
		case errors.Is(err, io.EOF):
			return base, errors.New("no JSON value")
		}
		return base, errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	if _, err := dec.Token(); err != io.EOF {
		return base, fmt.Errorf("offset %d: more than one JSON value", dec.InputOffset())
	}
	if p := &c.Data.Recipe; p.Name != "" && p.Name != base.Data.Recipe.Name {
		// The named recipe's values, except those the file gives.
		var given struct {
			Data struct {
				Recipe map[string]json.RawMessage `json:"recipe"`
			} `json:"data"`
		}
		_ = json.Unmarshal(raw, &given)
		name := p.Name
		if p.UseNamed(name, func(f string) bool { _, ok := given.Data.Recipe[f]; return ok }) != nil {
			p.Name = name // Validate names it
		}
	}
	return c, nil
}

// RecipeSetting is one value a named training recipe sets: the field (by
// its JSON path) and the value, as text for the help and as a setter.
type RecipeSetting struct {
	Field, Value string
	set          func(*Config)
}

// FastRecipe is `faster train --recipe fast`: one-cycle learning rate
// with warm-up, label smoothing, Nesterov momentum, progressive resizing,
// an EMA of the weights for evaluation and flip test-time augmentation.
var FastRecipe = []RecipeSetting{
	{"optim.schedule", "onecycle", func(c *Config) { c.Optim.Schedule = "onecycle" }},
	{"optim.lr", "0.2", func(c *Config) { c.Optim.LR = 0.2 }},
	{"optim.weight_decay", "5e-4", func(c *Config) { c.Optim.WeightDecay = 5e-4 }},
	{"optim.label_smoothing", "0.1", func(c *Config) { c.Optim.LabelSmoothing = 0.1 }},
	{"optim.nesterov", "true", func(c *Config) { c.Optim.Nesterov = true }},
	{"optim.ema", "0.99", func(c *Config) { c.Optim.EMA = 0.99 }},
	{"optim.ema_warmup", "true", func(c *Config) { c.Optim.EMAWarmup = true }},
	{"eval.tta", "flip", func(c *Config) { c.Eval.TTA = "flip" }},
	{"data.resolution_schedule", "auto", func(c *Config) { c.Data.Progressive, c.Data.Schedule = true, nil }},
}

// UseRecipe sets on c the named recipe's values ("fast": FastRecipe; ""
// none), except on the fields kept (given by the user), and c.Recipe.
func (c *Config) UseRecipe(name string, kept func(field string) bool) error {
	switch name {
	case "":
		return nil
	case "fast":
	default:
		return configErrorf("recipe", "%q: want fast", name)
	}
	for _, s := range FastRecipe {
		if kept == nil || !kept(s.Field) {
			s.set(c)
		}
	}
	c.Recipe = name
	return nil
}
