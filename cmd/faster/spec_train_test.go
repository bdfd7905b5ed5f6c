package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/faster-training/faster/internal/testenv"
)

// commandNamed is the command of that name as main builds it.
func commandNamed(t *testing.T, name string) *cobra.Command {
	t.Helper()
	for _, add := range commands {
		if c := add(io.Discard, io.Discard); c.Name() == name {
			return c
		}
	}
	t.Fatalf("no command %s", name)
	return nil
}

// weightsOf runs `faster train ... --json` and returns its weights_sha256.
func weightsOf(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := runCLI(t, append(append([]string{"train"}, args...), "--json")...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errs)
	}
	var s struct {
		WeightsSHA256 string `json:"weights_sha256"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil || s.WeightsSHA256 == "" {
		t.Fatalf("%v: %v: %s", args, err, out)
	}
	return s.WeightsSHA256
}

// `faster train --config FILE` runs the run the file describes (fit.Config
// JSON): the same weights as the same run given by flags; a flag given
// beside it overrides the file; a file's problems are named by field, a
// flag's by flag (before: unknown flag --config).
func TestTrainConfigFile(t *testing.T) {
	tree, test := testenv.WriteFolder(t, 2, 4), testenv.WriteFolder(t, 2, 2)
	flags := []string{"--data", tree, "--test-data", test, "--model", "thinnet", "--filters", "4,8", "--resolution", "16",
		"--batch", "4", "--epochs", "2", "--threads", "1", "--seed", "3", "--lr", "0.05", "--crop-scale", "0.3,1",
		"--augment-recipe", "torchvision-ra", "--ra-m", "5"}
	want := weightsOf(t, flags...)
	dir := t.TempDir()
	write := func(name, js string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(js), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	js := `{"data": {"path": "` + tree + `", "test_path": "` + test + `", "resolution": 16,
		"recipe": {"crop_scale": [0.3, 1], "augment_recipe": "torchvision-ra", "ra_m": 5}},
		"model": {"name": "thinnet", "filters": [4, 8], "threads": 1}, "optim": {"lr": 0.05},
		"batch": 4, "epochs": 2, "seed": 3}`
	cfg := write("run.json", js)
	if got := weightsOf(t, "--config", cfg); got != want {
		t.Errorf("--config: weights %s, flags %s", got, want)
	}
	// A flag over the file: --lr 0.05 given, the file's lr 0.3.
	over := write("over.json", strings.Replace(js, `"lr": 0.05`, `"lr": 0.3`, 1))
	if got := weightsOf(t, "--config", over, "--lr", "0.05"); got != want {
		t.Errorf("--config with --lr over it: weights %s, want %s", got, want)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--config", write("bad.json", `{"data": {"path": "x", "recipe": {"crop_scale": [0.9, 0.1]}}, "optim": {"lr": -1}, "batchsize": 3}`)},
			[]string{`unknown field "batchsize"`}},
		{[]string{"--config", write("bad2.json", `{"data": {"path": "x", "recipe": {"crop_scale": [0.9, 0.1]}}, "optim": {"lr": -1}}`), "--epochs", "0"},
			[]string{"data.recipe.crop_scale: [0.9 0.1]", "optim.lr: -1: must be positive", "--epochs 0: must be at least 1"}},
		{[]string{"--config", write("bad3.json", `{"data": {"path": "x", "batch": 8}}`)}, []string{"data: batch, seed"}},
		{[]string{"--config", filepath.Join(dir, "missing.json")}, []string{"missing.json"}},
	} {
		code, _, errs := runCLI(t, append([]string{"train"}, c.args...)...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", c.args, code, errs)
		}
		for _, w := range c.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%v: %q, want %q", c.args, errs, w)
			}
		}
	}
}

// `faster train` takes the loader's flags (before: unknown flag
// --crop-scale, --interpolation, --cache-dir, …), checked by the loader's
// spec and named by flag.
func TestTrainTakesLoaderFlags(t *testing.T) {
	tree, test := testenv.WriteFolder(t, 2, 4), testenv.WriteFolder(t, 2, 2)
	args := []string{"--data", tree, "--test-data", test, "--model", "thinnet", "--filters", "4,8", "--resolution", "16",
		"--batch", "4", "--epochs", "1", "--threads", "1"}
	plain := weightsOf(t, args...)
	if got := weightsOf(t, append(args, "--crop-scale", "0.08,1", "--interpolation", "bilinear", "--flip-prob", "0.5", "--cache-dir", t.TempDir())...); got != plain {
		t.Errorf("the defaults given as flags: weights %s, want %s", got, plain)
	}
	if got := weightsOf(t, append(args, "--crop-scale", "0.5,1", "--interpolation", "bicubic", "--full-decode")...); got == plain {
		t.Errorf("--crop-scale 0.5,1 --interpolation bicubic: the same weights as without")
	}
	code, _, errs := runCLI(t, append(append([]string{"train"}, args...), "--crop-scale", "0.9,0.1", "--on-error", "sometimes", "--max-bad", "3")...)
	for _, w := range []string{"--crop-scale [0.9 0.1]", `--on-error "sometimes"`} {
		if code != 2 || !strings.Contains(errs, w) {
			t.Errorf("bad loader flags: exit %d, %q, want %q", code, errs, w)
		}
	}
	// --layout u8-hwc: the bytes to the model, normalised there (here the
	// trainer's feeder) in the loader's arithmetic: the same weights.
	if got := weightsOf(t, append(args, "--layout", "u8-hwc")...); got != plain {
		t.Errorf("--layout u8-hwc: weights %s, want %s (the floats')", got, plain)
	}
	for _, flag := range []string{"--transform", "--num-shards"} { // the run's
		if code, _, errs := runCLI(t, append(append([]string{"train"}, args...), flag, "1")...); code != 2 || !strings.Contains(errs, "unknown flag") {
			t.Errorf("train %s: exit %d: %s", flag, code, errs)
		}
	}
}

// The flag table is the loader flags serve and bench load register, each
// once, and train's less the run's; the per-command defaults are the
// registered ones.
func TestFlagTable(t *testing.T) {
	serve := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	var so serveOptions
	so.registerFlags(serve)
	trainCmd := commandNamed(t, "train")
	inTable := map[string]bool{}
	for _, r := range loaderFlagTable {
		if inTable[r.flag] {
			t.Errorf("--%s twice in the table", r.flag)
		}
		inTable[r.flag] = true
		if serve.Lookup(r.flag) == nil {
			t.Errorf("--%s (%s): not a flag of serve", r.flag, r.field)
		}
		// train's own flag of a run field may share a loader flag's name
		// (--device: where train runs, model.device; where serve and bench
		// load decode, data.device).
		own := false
		for _, f := range trainFlagFields {
			own = own || f == r.flag
		}
		if tf := trainCmd.Flags().Lookup(r.flag); (tf == nil) != trainRunFlags[r.flag] && !(own && trainRunFlags[r.flag]) {
			t.Errorf("--%s: train has it %v, the table says %v", r.flag, tf != nil, !trainRunFlags[r.flag])
		}
		if r.flag != "workers" && trainFlagOf("data."+r.field) != r.flag && r.field != "shuffle" && r.field != "device" {
			t.Errorf("data.%s: train names it --%s, want --%s", r.field, trainFlagOf("data."+r.field), r.flag)
		}
	}
	var lf loaderFlags
	var bf badDataFlags
	all := pflag.NewFlagSet("", pflag.ContinueOnError)
	lf.register(all, "")
	bf.registerBad(all)
	all.VisitAll(func(f *pflag.Flag) {
		if !inTable[f.Name] {
			t.Errorf("--%s: a loader flag missing from the table", f.Name)
		}
	})
	for _, d := range commandDefaults {
		fs := serve
		if d.cmd == "train" {
			fs = trainCmd.Flags()
		}
		if f := fs.Lookup(d.flag); f == nil || f.DefValue != d.value {
			t.Errorf("%s --%s: registered default %v, the table says %s", d.cmd, d.flag, f, d.value)
		}
	}
}
