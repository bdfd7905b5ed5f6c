package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/faster-training/faster/loader"
)

// serveOptionsOf parses serve's flags as the command does and returns the
// loader options they make, with the bad-data flags they leave.
func serveOptionsOf(t *testing.T, stdin io.Reader, args ...string) (serveOptions, error) {
	t.Helper()
	o := serveOptions{fd: -1}
	f := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	o.registerFlags(f)
	if err := f.Parse(args); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	o.flags, o.stdin = f, stdin
	if f.NArg() > 0 {
		o.data = f.Arg(0)
	}
	return o, nil
}

// `faster serve --spec` builds the loader its flags build: for each set
// of flags, the spec of the same settings gives the same loader.Options
// (recipes, augmentations, order, bad-data policy) and quarantine file.
func TestServeSpecMatchesFlags(t *testing.T) {
	for _, c := range []struct {
		flags []string
		spec  string
	}{
		{[]string{"--batch", "8", "--transform", "eval", "--resolution", "64", "--layout", "u8-hwc", "--num-shards", "2", "--shard-index", "1",
			"--seed", "7", "--split", "val", "--no-shuffle", "--drop", "--exact", "--global-shuffle", "--label-offset", "-1", "--classes", "10",
			"--unlabeled", "--full-decode", "--fast-eval-decode", "--cache-dir", "/c", "--cache-size", "1G", "--workers", "3",
			"--on-error", "skip", "--max-bad", "1%", "--quarantine", "q.jsonl"},
			`{"batch": 8, "transform": "eval", "resolution": 64, "layout": "u8-hwc", "world_size": 2, "rank": 1, "seed": 7, "split": "val",
			  "shuffle": false, "drop": true, "exact": true, "global_shuffle": true, "label_offset": -1, "classes": 10, "unlabeled": true,
			  "full_decode": true, "fast_eval_decode": true, "cache_dir": "/c", "cache_size": 1073741824, "workers": 3,
			  "on_error": "skip", "max_bad": "1%", "quarantine": "q.jsonl"}`},
		{[]string{"--shuffle", "--on-error", "skip", "--max-bad", "12"}, `{"shuffle": true, "on_error": "skip", "max_bad": 12}`},
		{[]string{"--repeated-augmentation", "3"}, `{"repeated_augmentation": 3}`},
		{[]string{"--sampler", "indices", "--no-shuffle"}, `{"sampler": "indices", "shuffle": false}`},
		{[]string{"--crop-scale", "0.2,1", "--crop-ratio", "0.5,2", "--flip-prob", "0", "--interpolation", "bicubic",
			"--mean", "0.5,0.5,0.5", "--std", "0.2,0.25,0.3"},
			`{"recipe": {"crop_scale": [0.2, 1], "crop_ratio": [0.5, 2], "flip_prob": 0, "interpolation": "bicubic",
			  "mean": [0.5, 0.5, 0.5], "std": [0.2, 0.25, 0.3]}}`},
		{[]string{"--transform", "eval", "--resize", "300", "--resolution", "256", "--flip-prob", "0.25"},
			`{"transform": "eval", "resolution": 256, "recipe": {"resize": 300, "flip_prob": 0.25}}`},
		{[]string{"--augment-recipe", "torchvision-v2"}, `{"recipe": {"augment_recipe": "torchvision-v2"}}`},
		{[]string{"--augment-recipe", "torchvision-v2", "--transform", "eval", "--resolution", "160"},
			`{"transform": "eval", "resolution": 160, "recipe": {"augment_recipe": "torchvision-v2"}}`},
		{[]string{"--augment-recipe", "torchvision-ra", "--erasing-prob", "0", "--ra-m", "5", "--ra-n", "3", "--magnitude-bins", "11", "--augment-fill", "10,20,30"},
			`{"recipe": {"augment_recipe": "torchvision-ra", "erasing_prob": 0, "ra_m": 5, "ra_n": 3, "magnitude_bins": 11, "augment_fill": [10, 20, 30]}}`},
		{[]string{"--augment-recipe", "torchvision-aa", "--augment-interpolation", "nearest", "--augment-fill", "7"},
			`{"recipe": {"augment_recipe": "torchvision-aa", "augment_interpolation": "nearest", "augment_fill": 7}}`},
		{[]string{"--affine-degrees", "10", "--affine-translate", "0.1,0.2", "--affine-scale", "0.9,1.1", "--affine-shear", "5",
			"--rotate-degrees", "-5,5", "--color-jitter", "0.4,0.4,0.4,0.1", "--grayscale-prob", "0.2", "--blur-kernel", "3,5",
			"--blur-sigma", "0.5,1", "--erasing-prob", "0.3", "--erasing-scale", "0.1,0.2", "--erasing-ratio", "0.5,2", "--erasing-value", "random"},
			`{"recipe": {"affine_degrees": 10, "affine_translate": [0.1, 0.2], "affine_scale": [0.9, 1.1], "affine_shear": 5,
			  "rotate_degrees": [-5, 5], "color_jitter": [0.4, 0.4, 0.4, 0.1], "grayscale_prob": 0.2, "blur_kernel": [3, 5],
			  "blur_sigma": [0.5, 1], "erasing_prob": 0.3, "erasing_scale": [0.1, 0.2], "erasing_ratio": [0.5, 2], "erasing_value": "random"}}`},
		{[]string{"--auto-augment", "augmix", "--augmix-severity", "5", "--augment-interpolation", "bilinear",
			"--color-jitter", "0.1,0.2,0.3,0.4,0.5,0.6,-0.1,0.1", "--erasing-value", "0.5,0.6,0.7", "--erasing-prob", "1",
			"--affine-degrees", "0", "--affine-shear", "-5,5,-10,10", "--blur-kernel", "7"},
			`{"recipe": {"auto_augment": "augmix", "augmix_severity": 5, "augment_interpolation": "bilinear",
			  "color_jitter": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, -0.1, 0.1], "erasing_value": "0.5,0.6,0.7", "erasing_prob": 1,
			  "affine_degrees": 0, "affine_shear": [-5, 5, -10, 10], "blur_kernel": [7]}}`},
		{[]string{"--auto-augment", "ta-wide"}, `{"recipe": {"auto_augment": "ta-wide"}}`},
	} {
		fo, _ := serveOptionsOf(t, nil, c.flags...)
		want, err := fo.loaderOptions()
		if err != nil {
			t.Fatalf("%v: %v", c.flags, err)
		}
		for _, how := range []string{"inline", "file", "stdin"} {
			arg, stdin := c.spec, io.Reader(nil)
			switch how {
			case "file":
				arg = filepath.Join(t.TempDir(), "spec.json")
				os.WriteFile(arg, []byte(c.spec), 0o644)
			case "stdin":
				arg, stdin = "-", strings.NewReader(c.spec)
			}
			so, _ := serveOptionsOf(t, stdin, "--spec", arg, "data")
			got, err := so.loaderOptions()
			if err != nil {
				t.Fatalf("%v (%s): %v", c.flags, how, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%v: spec %s (%s) gives\n%+v\nflags give\n%+v", c.flags, c.spec, how, got, want)
			}
			if so.badDataFlags.quarantine != fo.badDataFlags.quarantine {
				t.Errorf("%v: quarantine %q, flags %q", c.flags, so.badDataFlags.quarantine, fo.badDataFlags.quarantine)
			}
		}
	}
}

// A spec's problems are usage errors naming each field, all at once; a
// spec with loader flags beside it is refused naming them.
func TestServeSpecProblems(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--spec", `{"path": "d", "batch": 0, "recipe": {"crop_scale": [0.9, 0.1]}, "augment": []}`},
			[]string{"--spec: batch: 0: must be at least 1", "--spec: recipe.crop_scale: [0.9 0.1]"}},
		{[]string{"--spec", `{"path": "d", "augment": [{"op": "Resize", "size": 8}, {"op": "Solarize"}]}`}, []string{"augment[1].op", "Solarize"}},
		{[]string{"--spec", `{"path": "d", "bach": 8}`}, []string{`unknown field "bach"`}},
		{[]string{"--spec", `{"path": "d", "transform": "none"}`}, []string{`transform "none": want train or eval`}},
		{[]string{"--spec", `{}`}, []string{`no path`}},
		{[]string{"--spec", `{"path": "d"}`, "--batch", "3", "--seed", "1"}, []string{"--spec and --batch, --seed"}},
		{[]string{"--spec", filepath.Join(t.TempDir(), "missing.json")}, []string{"missing.json"}},
	} {
		o, _ := serveOptionsOf(t, nil, c.args...)
		_, err := o.loaderOptions()
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", c.args, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %q, want %q", c.args, err, w)
			}
		}
	}
	code, _, errs := runCLI(t, "serve", "--spec", `{"batch": -1}`, "--fd", "3")
	if code != 2 || !strings.Contains(errs, "batch: -1") {
		t.Errorf("serve --spec: exit %d, %q", code, errs)
	}
}

// TestBadDataFlagsAsSpec: --on-error, --max-bad and --quarantine are
// checked as a spec's on_error, max_bad and quarantine, by one check: the
// same policy or both refused, the flag named. Before, the flags had their
// own parser, which took --max-bad NaN% (a budget no count exceeds: exit
// 0 however much was bad) where a spec was refused.
func TestBadDataFlagsAsSpec(t *testing.T) {
	for _, c := range []struct{ onError, maxBad, quarantine, flag string }{
		{"", "", "", ""}, {"stop", "", "", ""}, {"skip", "", "", ""}, {"skip", "12", "q.jsonl", ""},
		{"skip", "0", "", ""}, {"skip", "0%", "", ""}, {"skip", "2.5%", "", ""}, {"skip", "100%", "", ""},
		{"skip", "NaN%", "", "--max-bad"}, {"skip", "nan%", "", "--max-bad"}, {"skip", "inf%", "", "--max-bad"},
		{"skip", "101%", "", "--max-bad"}, {"skip", "-1", "", "--max-bad"}, {"skip", "1e3", "", "--max-bad"},
		{"", "3", "", "--max-bad"}, {"stop", "", "q.jsonl", "--quarantine"}, {"maybe", "", "", "--on-error"},
	} {
		got, err := badDataFlags{onError: c.onError, maxBad: c.maxBad, quarantine: c.quarantine}.policy()
		s := loader.Spec{OnError: c.onError, MaxBad: loader.Budget(c.maxBad), Quarantine: c.quarantine}
		want, serr := s.BadDataPolicy()
		if (err == nil) != (serr == nil) || got != want {
			t.Errorf("%+v: flags %+v %v, spec %+v %v", c, got, err, want, serr)
		}
		if (err != nil) != (c.flag != "") || err != nil && !strings.HasPrefix(err.Error(), c.flag+" ") {
			t.Errorf("%+v: %v, want an error naming %s", c, err, c.flag)
		}
	}
}
