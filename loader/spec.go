package loader

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/faster-training/faster/augment"
)

// Spec is a loader's whole description as a value: what `faster serve`,
// `faster bench load` and `faster train` take as flags, what the Python
// client sends (`faster serve --spec`), and the data part of fit.Config.
// Its JSON names are snake_case and its zero fields are not defaults:
// start from Defaults, read JSON over it, Validate, then Options.
//
// Validate reports every problem at once, each named by its field path
// as the JSON names it (batch, augment[2].degrees); a command maps the
// path to its flag, Python to its argument.
type Spec struct {
	// The data: a path or storage URL (a command's argument), more shard
	// files or globs read with it (Options.Paths), and its split.
	Path  string   `json:"path,omitempty"`
	Paths []string `json:"paths,omitempty"`
	Split string   `json:"split"`

	// Batches: the batch per rank, the output side and layout.
	Batch      int    `json:"batch"`
	Resolution int    `json:"resolution"`
	Layout     Layout `json:"layout"`

	// Order: ranks, seed, shuffle (null: shuffle unless eval), how ranks
	// are evened (drop, exact), the global shuffle of indexed shards.
	WorldSize     int    `json:"world_size"`
	Rank          int    `json:"rank"`
	Seed          uint64 `json:"seed"`
	Shuffle       *bool  `json:"shuffle"`
	Drop          bool   `json:"drop"`
	Exact         bool   `json:"exact"`
	GlobalShuffle bool   `json:"global_shuffle"`
	// Repeats is RASampler's repetitions (0: off); Sampler "indices"
	// serves each epoch the order of positions the client sends.
	Repeats int    `json:"repeated_augmentation"`
	Sampler string `json:"sampler,omitempty"`

	// Labels.
	LabelOffset int  `json:"label_offset"`
	Classes     int  `json:"classes"`
	Unlabeled   bool `json:"unlabeled"`

	// Reading and decoding: the cache of remote shards, decode workers
	// (0: auto), batches prefetched (0: 2), the decode's exactness.
	CacheDir       string `json:"cache_dir,omitempty"`
	CacheSize      int64  `json:"cache_size,omitempty"`
	Workers        int    `json:"workers"`
	Prefetch       int    `json:"prefetch"`
	FullDecode     bool   `json:"full_decode"`
	FastEvalDecode bool   `json:"fast_eval_decode"`

	// Damaged samples: stop or skip, the budget of skips (a count, or a
	// percentage "0.1%"), and the file listing them.
	OnError    string `json:"on_error"`
	MaxBad     Budget `json:"max_bad,omitempty"`
	Quarantine string `json:"quarantine,omitempty"`

	// Transform is train, eval or none: today's recipe, its parameters in
	// Recipe. Augment, if set, is the transform instead: torchvision's ops
	// in the order given.
	// Device is where batches are decoded: cpu (the default), cuda or
	// cuda:N (the GPU batch-decode stage, Options.Device).
	Device string `json:"device"`
	// CPUShare is the share of each batch a GPU stage decodes on the CPU
	// beside its own (Options.CPUShare): 0 to 1, 0 by default.
	CPUShare float64 `json:"cpu_share,omitempty"`

	Transform Transform      `json:"transform"`
	Recipe    augment.Params `json:"recipe"`
	Augment   augment.Recipe `json:"augment,omitempty"`
}

// Budget is Spec.MaxBad: a count of bad samples ("10", JSON 10) or a
// percentage of the epoch's ("0.1%"); "" is no limit.
type Budget string

// UnmarshalJSON reads a number, a string or null.
func (b *Budget) UnmarshalJSON(d []byte) error {
	d = bytes.TrimSpace(d)
	switch {
	case bytes.Equal(d, []byte("null")):
		*b = ""
	case len(d) > 0 && d[0] == '"':
		var s string
		if err := json.Unmarshal(d, &s); err != nil {
			return err
		}
		*b = Budget(s)
	default:
		var n json.Number
		if err := json.Unmarshal(d, &n); err != nil {
			return fmt.Errorf("want a count or a percentage string like \"0.1%%\", got %s", d)
		}
		*b = Budget(n)
	}
	return nil
}

// Defaults is the loader's defaults (those of `faster serve` and `faster
// bench load`; `faster train` has its own batch and seed, see
// docs/cli.md's flag table).
func Defaults() Spec {
	return Spec{
		Split: "train", Batch: 256, Resolution: 224, Layout: F32CHW, WorldSize: 1,
		OnError: "stop", Transform: Train, Device: "cpu",
	}
}

// SpecError is a Spec that cannot run: every problem, each named by its
// field path.
type SpecError struct {
	Problems []augment.Problem
}

func (e *SpecError) Error() string { return augment.Problems(e.Problems).Error() }

// MaxSpecBytes bounds a Spec's JSON (an op list of thousands of ops
// fits).
const MaxSpecBytes = 4 << 20

// ReadSpec reads a Spec's JSON from r over base (fields left out keep
// base's values). An unknown field is an error naming it, as is a value
// of the wrong type (the field's path and the byte offset).
func ReadSpec(r io.Reader, base Spec) (Spec, error) {
	s := base
	raw, err := io.ReadAll(io.LimitReader(r, MaxSpecBytes+1))
	if err != nil {
		return base, err
	}
	if len(raw) > MaxSpecBytes {
		return base, fmt.Errorf("over %d bytes: not a loader's description", MaxSpecBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return base, fmt.Errorf("offset %d: the JSON ends early", len(raw))
		}
		return base, jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return base, fmt.Errorf("offset %d: more than one JSON value", dec.InputOffset())
	}
	if s.Recipe.Name != "" && s.Recipe.Name != base.Recipe.Name {
		// The named recipe's values, except those the JSON sets.
		var given struct {
			Recipe map[string]json.RawMessage `json:"recipe"`
		}
		_ = json.Unmarshal(raw, &given)
		if err := s.Recipe.UseNamed(s.Recipe.Name, func(f string) bool { _, ok := given.Recipe[f]; return ok }); err != nil {
			return base, fmt.Errorf("recipe.augment_recipe: %q: want one of %s", s.Recipe.Name, joinComma(augment.RecipeNames))
		}
	}
	return s, nil
}

// jsonError names the field and offset of a decoding error.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("%s: want %s, got JSON %s (offset %d)", te.Field, te.Type, te.Value, te.Offset)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("offset %d: %v", se.Offset, se)
	}
	if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("unknown field %s", msg)
	}
	if errors.Is(err, io.EOF) {
		return errors.New("no JSON value")
	}
	return err
}

// Validate reports every problem of s at once, a *SpecError naming each
// by its field path; nil when s can run.
func (s *Spec) Validate() error {
	if p := s.Problems(); len(p) > 0 {
		return &SpecError{p}
	}
	return nil
}

// Problems lists what Validate reports.
func (s *Spec) Problems() []augment.Problem {
	var ps []augment.Problem
	add := func(field, format string, a ...any) {
		ps = append(ps, augment.Problem{Field: field, Msg: fmt.Sprintf(format, a...)})
	}
	if s.Batch < 1 {
		add("batch", "%d: must be at least 1", s.Batch)
	}
	if s.Resolution < 1 || s.Resolution > MaxResolution {
		add("resolution", "%d: want 1 to %d (the decoder's limit of %d pixels per image)", s.Resolution, MaxResolution, MaxResolution*MaxResolution)
	}
	if s.Layout != F32CHW && s.Layout != U8HWC {
		add("layout", "%q: want %s or %s", s.Layout, F32CHW, U8HWC)
	}
	if s.WorldSize < 1 || s.WorldSize > MaxWorld {
		add("world_size", "%d: want 1 to %d ranks", s.WorldSize, MaxWorld)
	} else if s.Rank < 0 || s.Rank >= s.WorldSize {
		add("rank", "%d of world_size %d: want 0 <= rank < world_size", s.Rank, s.WorldSize)
	}
	if s.Repeats < 0 || s.Repeats > MaxRepeats {
		add("repeated_augmentation", "%d: want 0 (off) to %d repetitions", s.Repeats, MaxRepeats)
	}
	switch {
	case s.Sampler != "" && s.Sampler != SamplerIndices:
		add("sampler", "%q: want %s (the order the client sends each epoch)", s.Sampler, SamplerIndices)
	case s.Repeats > 0 && s.Sampler != "":
		add("sampler", "with repeated_augmentation: the client's order is the whole order")
	}
	if s.Split == "" {
		add("split", "empty: want a split's name, such as train")
	}
	if s.Classes < 0 {
		add("classes", "%d: must not be negative", s.Classes)
	}
	if s.LabelOffset < -MaxLabelOffset || s.LabelOffset > MaxLabelOffset {
		add("label_offset", "%d: at most %d either way (the largest label a container stores)", s.LabelOffset, MaxLabelOffset)
	}
	if s.CacheSize < 0 {
		add("cache_size", "%d: must not be negative", s.CacheSize)
	}
	if s.Workers < 0 || s.Workers > MaxWorkers {
		add("workers", "%d: want 0 (as many as the CPUs allow) to %d", s.Workers, MaxWorkers)
	}
	if s.Prefetch < 0 {
		add("prefetch", "%d: must not be negative", s.Prefetch)
	}
	switch s.Transform {
	case Train, Eval, None:
	default:
		add("transform", "%q: want train, eval or none", s.Transform)
	}
	if !(s.CPUShare >= 0 && s.CPUShare <= 1) {
		add("cpu_share", "%v: want 0 to 1 (the share of each batch a GPU stage decodes on the CPU)", s.CPUShare)
	}
	if _, _, err := ParseDevice(s.Device); err != nil {
		add("device", "%q: want cpu, cuda or cuda:N (N the GPU's index)", s.Device)
	} else if k, _, _ := ParseDevice(s.Device); k == "cuda" && len(s.Augment) > 0 {
		add("device", "%s runs the train and eval recipes: not augment ops", s.Device)
	}
	if _, err := s.policy(); err != nil {
		var p augment.Problem
		if errors.As(err, &p) {
			ps = append(ps, p)
		}
	}
	if len(s.Augment) > 0 {
		if s.Transform == None {
			add("transform", "none reads encoded bytes: it takes no augment ops")
		}
		ps = append(ps, s.Augment.Problems()...)
	} else {
		ps = append(ps, s.recipeProblems()...)
	}
	return ps
}

// BadDataPolicy is the damaged-sample policy OnError, MaxBad and
// Quarantine describe, or a Problem naming the field: the one check of
// them, the flags' (--on-error, --max-bad, --quarantine) included.
func (s *Spec) BadDataPolicy() (BadDataPolicy, error) { return s.policy() }

// policy is the damaged-sample policy of OnError and MaxBad, or a Problem.
func (s *Spec) policy() (BadDataPolicy, error) {
	var p BadDataPolicy
	switch s.OnError {
	case "", "stop":
		if s.MaxBad != "" {
			return p, augment.Problem{Field: "max_bad", Msg: "needs on_error skip"}
		}
		if s.Quarantine != "" {
			return p, augment.Problem{Field: "quarantine", Msg: "needs on_error skip"}
		}
		return p, nil
	case "skip":
		p.Skip = true
	default:
		return p, augment.Problem{Field: "on_error", Msg: fmt.Sprintf("%q: want stop or skip", s.OnError)}
	}
	if s.MaxBad == "" {
		return p, nil
	}
	bad := augment.Problem{Field: "max_bad", Msg: fmt.Sprintf("%q: want a count or a percentage like 0.1%%", string(s.MaxBad))}
	if pct, ok := strings.CutSuffix(string(s.MaxBad), "%"); ok {
		f, err := strconv.ParseFloat(pct, 64)
		if err != nil || !(f >= 0 && f <= 100) {
			return p, bad
		}
		p.MaxBadFraction = f / 100
		if f == 0 {
			p.Skip = false
		}
		return p, nil
	}
	n, err := strconv.Atoi(string(s.MaxBad))
	if err != nil || n < 0 {
		return p, bad
	}
	p.MaxBad = n
	if n == 0 { // no bad sample tolerated: the stop policy
		p.Skip = false
	}
	return p, nil
}

// Options returns the loader options s describes, after Validate (its
// error when s is not valid). The path is s.Path, Open's argument; the
// quarantine file is the caller's to create (CreateQuarantine).
func (s Spec) Options() (Options, error) {
	if err := s.Validate(); err != nil {
		return Options{}, err
	}
	policy, _ := s.policy()
	o := Options{
		Transform: s.Transform, Resolution: s.Resolution, Layout: s.Layout, Batch: s.Batch,
		Workers: s.Workers, Prefetch: s.Prefetch, NumShards: s.WorldSize, ShardIdx: s.Rank,
		Seed: s.Seed, Split: s.Split, Paths: s.Paths, Drop: s.Drop, Exact: s.Exact,
		GlobalShuffle: s.GlobalShuffle, LabelOffset: s.LabelOffset, Classes: s.Classes,
		Unlabeled: s.Unlabeled, CacheDir: s.CacheDir, CacheSize: s.CacheSize,
		FullDecode: s.FullDecode, FastEvalDecode: s.FastEvalDecode, BadData: policy,
		Repeats: s.Repeats, Sampler: s.Sampler, Device: s.Device, CPUShare: s.CPUShare,
	}
	if s.Shuffle != nil {
		o.Shuffle = ShuffleOff
		if *s.Shuffle {
			o.Shuffle = ShuffleOn
		}
	}
	if len(s.Augment) > 0 {
		o.Recipe = s.Augment // the whole transform, in its order
		return o, nil
	}
	applyRecipe(s.Recipe, &o)
	return o, nil
}
