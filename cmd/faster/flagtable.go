package main

import (
	"errors"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/loader"
)

// readSpecArg reads --spec's argument over base (loader.ReadSpecArg: a
// file, - for stdin, or the JSON itself). A problem is a usage error
// naming --spec and the file.
func readSpecArg(arg string, stdin io.Reader, base loader.Spec) (loader.Spec, error) {
	s, name, err := loader.ReadSpecArg(arg, stdin, base)
	switch {
	case err != nil && name == "":
		return base, usagef("--spec: %v", err)
	case err != nil:
		return base, usagef("--spec %s: %v", name, err)
	}
	return s, nil
}

// specUsage makes a Spec's problems a usage error, each named by its
// field (the spec's own words).
func specUsage(err error) error {
	var se *loader.SpecError
	if errors.As(err, &se) {
		lines := make([]string, len(se.Problems))
		for i, p := range se.Problems {
			lines[i] = "--spec: " + p.Error()
		}
		return usagef("%s", strings.Join(lines, "\n"))
	}
	return err
}

// loaderFlagsGiven lists the loader flags given on f (those a --spec
// replaces), as --name.
func loaderFlagsGiven(f *pflag.FlagSet) []string {
	if f == nil {
		return nil
	}
	var lf loaderFlags
	var bf badDataFlags
	names := pflag.NewFlagSet("", pflag.ContinueOnError)
	lf.register(names, "")
	bf.registerBad(names)
	var given []string
	names.VisitAll(func(fl *pflag.Flag) {
		if f.Changed(fl.Name) {
			given = append(given, "--"+fl.Name)
		}
	})
	return given
}

// The flag table: each loader flag and the loader.Spec field it fills,
// shared by serve, bench load and train (train's fields are data.<field>
// of fit.Config). docs/cli.md prints it. Flags fill a Spec; Spec.Validate
// (and fit.Config.Problems) say what is wrong, by field; flagOf names the
// flag of a field for the message.
var loaderFlagTable = []struct{ flag, field string }{
	{"batch", "batch"}, {"transform", "transform"}, {"resolution", "resolution"}, {"layout", "layout"},
	{"num-shards", "world_size"}, {"shard-index", "rank"}, {"seed", "seed"}, {"split", "split"},
	{"shuffle", "shuffle"}, {"no-shuffle", "shuffle"}, {"drop", "drop"}, {"exact", "exact"},
	{"repeated-augmentation", "repeated_augmentation"}, {"sampler", "sampler"},
	{"cache-dir", "cache_dir"}, {"cache-size", "cache_size"}, {"global-shuffle", "global_shuffle"},
	{"label-offset", "label_offset"}, {"unlabeled", "unlabeled"}, {"classes", "classes"},
	{"full-decode", "full_decode"}, {"fast-eval-decode", "fast_eval_decode"},
	{"on-error", "on_error"}, {"max-bad", "max_bad"}, {"quarantine", "quarantine"},
	{"crop-scale", "recipe.crop_scale"}, {"crop-ratio", "recipe.crop_ratio"}, {"flip-prob", "recipe.flip_prob"},
	{"resize", "recipe.resize"}, {"interpolation", "recipe.interpolation"}, {"mean", "recipe.mean"}, {"std", "recipe.std"},
	{"augment-recipe", "recipe.augment_recipe"}, {"auto-augment", "recipe.auto_augment"}, {"ra-n", "recipe.ra_n"},
	{"ra-m", "recipe.ra_m"}, {"magnitude-bins", "recipe.magnitude_bins"}, {"augmix-severity", "recipe.augmix_severity"},
	{"augment-interpolation", "recipe.augment_interpolation"}, {"augment-fill", "recipe.augment_fill"},
	{"color-jitter", "recipe.color_jitter"}, {"grayscale-prob", "recipe.grayscale_prob"},
	{"affine-degrees", "recipe.affine_degrees"}, {"affine-translate", "recipe.affine_translate"},
	{"affine-scale", "recipe.affine_scale"}, {"affine-shear", "recipe.affine_shear"},
	{"rotate-degrees", "recipe.rotate_degrees"}, {"blur-kernel", "recipe.blur_kernel"}, {"blur-sigma", "recipe.blur_sigma"},
	{"erasing-prob", "recipe.erasing_prob"}, {"erasing-scale", "recipe.erasing_scale"},
	{"erasing-ratio", "recipe.erasing_ratio"}, {"erasing-value", "recipe.erasing_value"},
	{"device", "device"}, {"cpu-share", "cpu_share"},
}

// commandDefaults are the loader flags whose default or meaning differs
// by command: one row each (docs/cli.md says the same).
var commandDefaults = []struct{ cmd, flag, value, meaning string }{
	{"serve, bench load", "batch", "256", "the batch of each rank (loader.Spec batch)"},
	{"train", "batch", "512", "the global batch, split over the ranks (fit.Config batch)"},
	{"serve, bench load", "seed", "0", "shuffle and augmentation seed (loader.Spec seed)"},
	{"train", "seed", "1", "initial weights, shuffle and augmentation (fit.Config seed)"},
	{"serve, bench load", "resolution", "224", "output side"},
	{"train", "resolution", "0", "the packed images' width, else 224"},
	{"serve, bench load", "layout", "f32-chw", "the batches' layout"},
	{"train", "layout", "", "u8-hwc to a GPU model decoding on the cpu, else f32-chw"},
}

// trainRunFlags are the loader flags train does not take: the run sets
// their fields (ranks from ddp, the train and eval recipes, drop, the
// splits) or the flag is serve's alone.
var trainRunFlags = map[string]bool{"transform": true, "num-shards": true, "shard-index": true,
	"split": true, "shuffle": true, "no-shuffle": true, "drop": true, "exact": true, "sampler": true,
	"repeated-augmentation": true, "global-shuffle": true, "device": true}

// trainFlagFields are train's flags of fit.Config fields outside the
// loader's table whose flag is not the field's last name with dashes.
var trainFlagFields = map[string]string{
	"data.path": "data", "data.test_path": "test-data", "data.resolution_schedule": "resolution-schedule",
	"data.progressive": "resolution-schedule", "model.name": "model", "checkpoint.path": "checkpoint",
	"checkpoint.every": "checkpoint-every", "checkpoint.same_data": "same-data", "eval.every": "eval-every",
	"eval.fixres_bn": "fixres-bn", "eval.tta": "tta", "eval.target_accuracy": "target-accuracy",
	"model.device": "device",        // train and bench train: cpu, cuda, cuda:N (fit.ParseDevice)
	"data.device":  "decode-device", // train: where the training images are decoded (serve and bench load: --device)
}

// loaderFlagOf is the flag of a loader.Spec field ("" for none).
func loaderFlagOf(field string) string {
	for _, r := range loaderFlagTable {
		if r.field == field {
			return r.flag
		}
	}
	return ""
}

// trainFlagOf is the flag of a fit.Config field.
func trainFlagOf(field string) string {
	if f, ok := trainFlagFields[field]; ok {
		return f
	}
	if rest, ok := strings.CutPrefix(field, "data."); ok {
		if f := loaderFlagOf(rest); f != "" {
			return f
		}
	}
	if i := strings.LastIndexByte(field, '.'); i >= 0 {
		field = field[i+1:]
	}
	return strings.ReplaceAll(field, "_", "-")
}

// flagProblems words problems for the command line: each field as its
// flag ("--batch 0: must be at least 1"; a field flagOf gives no flag by
// its path), and the fields a message names as their flags too; one usage
// error of every problem.
func flagProblems(ps []augment.Problem, flagOf func(string) string, fields []string) error {
	lines := make([]string, len(ps))
	sort.Slice(fields, func(i, j int) bool { return len(fields[i]) > len(fields[j]) })
	for i, p := range ps {
		msg := p.Msg
		for _, f := range fields {
			if fl := flagOf(f); fl != "" && strings.Contains(f, ".") && strings.Contains(msg, f) {
				msg = strings.ReplaceAll(msg, f, "--"+fl)
			}
		}
		// A recipe field a message names by itself (needs blur_kernel).
		msg = fieldWord.ReplaceAllStringFunc(msg, func(w string) string {
			for _, f := range []string{"recipe." + w, "data.recipe." + w} {
				if fl := flagOf(f); fl != "" {
					return "--" + fl
				}
			}
			return w
		})
		switch fl := flagOf(p.Field); {
		case p.Field == "":
			lines[i] = msg
		case fl == "": // a field of a file, not set by a flag
			lines[i] = p.Field + ": " + msg
		default:
			lines[i] = "--" + fl + " " + msg
		}
	}
	return usagef("%s", strings.Join(lines, "; "))
}

// fieldWord is a field's name in a message: words joined by _.
var fieldWord = regexp.MustCompile(`\b[a-z]+(?:_[a-z0-9]+)+\b`)

// spec is the loader.Spec the loader flags describe (their values, the
// named recipe's on the flags not given).
func (lf *loaderFlags) spec() loader.Spec {
	s := loader.Spec{
		Split: lf.split, Batch: lf.batch, Resolution: lf.resolution, Layout: loader.Layout(lf.layout),
		WorldSize: lf.numShards, Rank: lf.shardIndex, Seed: lf.seed, Drop: lf.drop, Exact: lf.exact,
		GlobalShuffle: lf.global, Repeats: lf.repeats, Sampler: lf.sampler, LabelOffset: lf.labelOff,
		Classes: lf.classes, Unlabeled: lf.unlabeled, CacheDir: lf.cache.dir, CacheSize: int64(lf.cache.size),
		FullDecode: lf.fullDecode, FastEvalDecode: lf.fastEvalDecode, Transform: loader.Transform(lf.transform),
		Device: lf.device, CPUShare: lf.cpuShare,
	}
	switch lf.shuffle {
	case loader.ShuffleOn, loader.ShuffleOff:
		on := lf.shuffle == loader.ShuffleOn
		s.Shuffle = &on
	}
	flip := lf.flipProb
	af := &lf.augment
	ram := af.raM
	s.Recipe = augment.Params{Interpolation: lf.interpolation, Mean: lf.mean, Std: lf.std, CropScale: lf.cropScale,
		CropRatio: lf.cropRatio, FlipProb: &flip, Resize: lf.resize,
		AutoAugment: af.autoAugment, RaN: af.raN, RaM: &ram, MagnitudeBins: af.bins, AugMixSeverity: af.augmixSeverity,
		AugmentInterpolation: af.interp, AugmentFill: af.fill, ColorJitter: af.colorJitter, GrayscaleProb: af.grayscale,
		AffineDegrees: af.affineDegrees, AffineTranslate: af.affineTrans, AffineScale: af.affineScale,
		AffineShear: af.affineShear, RotateDegrees: af.rotate, BlurKernel: af.blurKernel, BlurSigma: af.blurSigma,
		ErasingProb: af.erasingProb, ErasingScale: af.erasingScale, ErasingRatio: af.erasingRatio, ErasingValue: af.erasingValue}
	if s.Recipe.AutoAugment == "none" {
		s.Recipe.AutoAugment = ""
	}
	if af.recipe != "" {
		changed := func(field string) bool { return af.fs != nil && af.fs.Changed(loaderFlagOf("recipe."+field)) }
		if s.Recipe.UseNamed(af.recipe, changed) != nil {
			s.Recipe.Name = af.recipe // Validate names it
		}
	}
	return s
}

// registerInto adds the loader flags to f but those f has already (the
// command's own) and those skipped.
func (lf *loaderFlags) registerInto(f *pflag.FlagSet, skip map[string]bool) {
	all := pflag.NewFlagSet("", pflag.ContinueOnError)
	lf.register(all, "")
	all.VisitAll(func(fl *pflag.Flag) {
		if f.Lookup(fl.Name) == nil && !skip[fl.Name] {
			f.AddFlag(fl)
		}
	})
}
