package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/bench"
	"github.com/faster-training/faster/fit"
)

// `faster bench train` runs each cell from a fit.Config file (`faster train
// --config FILE`, written by bench.TrainConfig.CellConfig) where it passed
// train's flags before: every cell's run is the one the flags made — the
// same final weights (weights_sha256) and accuracy for each strategy and
// variant, and the ablations' settings.
func TestBenchTrainCellConfigIsTheFlagsRun(t *testing.T) {
	dir := writeTrainIDX(t, 24)
	c := bench.TrainConfig{Data: dir, Epochs: 1, Limit: 16, TestLimit: 8, Batch: 4, LR: 0.05, Threads: 2, Devices: 2,
		Backend: "reference", Filters: []int{4, 8}, Winograd: false, SyncBN: true}
	// The flags each cell got before (bench's trainArgs): the shared ones,
	// then the strategy's and the variant's.
	shared := []string{"train", "--data", dir, "--epochs", "1", "--batch", "4", "--lr", "0.05", "--json", "--limit", "16",
		"--test-limit", "8", "--backend", "reference", "--winograd=false", "--filters", "4,8"}
	cells := []struct {
		strategy, variant string
		flags             []string
	}{
		{"single", "plain", []string{"--threads", "2", "--strategy", "single"}},
		{"single", "amp", []string{"--threads", "2", "--strategy", "single", "--amp"}},
		{"single", "autotune", []string{"--threads", "2", "--strategy", "single", "--autotune", "--tune-cache", ""}},
		{"dp", "plain", []string{"--threads", "2", "--strategy", "dp", "--sync-bn", "--devices", "2"}},
		{"single", "no-overlap", []string{"--threads", "2", "--strategy", "single", "--no-overlap"}},
		{"single", "zero-grad", []string{"--threads", "2", "--strategy", "single", "--zero-grad"}},
	}
	run := func(args ...string) fit.Summary {
		t.Helper()
		code, out, errs := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, errs)
		}
		var s fit.Summary
		if err := json.Unmarshal([]byte(out), &s); err != nil || s.WeightsSHA256 == "" {
			t.Fatalf("%q: %v: %s", args, err, out)
		}
		return s
	}
	weights := map[string]string{}
	for _, cell := range cells {
		cfg := c.CellConfig(cell.strategy, cell.variant)
		if cell.variant == "autotune" {
			cfg.Parallel.TuneCache = "" // no file of the machine's choices in a test
		}
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "cell.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		byFlags := run(append(shared, cell.flags...)...)
		byFile := run("train", "--config", path, "--json")
		name := cell.strategy + " " + cell.variant
		if byFile.WeightsSHA256 != byFlags.WeightsSHA256 || byFile.TestAccuracy != byFlags.TestAccuracy {
			t.Errorf("%s: from the config file weights %s, accuracy %v; from the flags %s, %v", name,
				byFile.WeightsSHA256, byFile.TestAccuracy, byFlags.WeightsSHA256, byFlags.TestAccuracy)
		}
		type settings struct {
			Strategy, Precision, ZeroGrad string
			Devices, Tuned                int
			SyncBN, Overlap               bool
		}
		of := func(s fit.Summary) settings {
			return settings{s.Strategy, s.Precision, s.ZeroGrad, s.Devices, len(s.Autotune), s.SyncBN, s.Overlap}
		}
		if of(byFile) != of(byFlags) || byFile.Strategy != cell.strategy {
			t.Errorf("%s: from the file %+v; from the flags %+v", name, of(byFile), of(byFlags))
		}
		weights[name] = byFile.WeightsSHA256
		if strings.Contains(cell.variant, "amp") && byFile.Precision == "fp32" {
			t.Errorf("%s: precision fp32", name)
		}
	}
	// The cells are different runs, so that equal weights above say something.
	if weights["single plain"] == weights["single amp"] || weights["single plain"] == weights["dp plain"] {
		t.Errorf("weights of single plain, single amp, dp plain: %s %s %s: the variants did not change the run",
			weights["single plain"], weights["single amp"], weights["dp plain"])
	}
}
