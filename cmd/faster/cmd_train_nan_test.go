package main

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/fit"
)

// Non-finite or out-of-range hyper-parameters are usage errors: NaN and
// Inf parse as numbers, and a NaN rate used to "train" to 100% accuracy.
func TestTrainNonFiniteFlags(t *testing.T) {
	dir := writeTrainIDX(t, 8)
	for _, args := range [][]string{
		{"--lr", "NaN"}, {"--lr", "Inf"}, {"--lr", "-Inf"}, {"--lr", "1e39"}, {"--lr", "-0.1"},
		{"--momentum", "NaN"}, {"--momentum", "-1"}, {"--weight-decay", "Inf"}, {"--weight-decay", "-1e-4"},
		{"--gamma", "NaN"}, {"--gamma", "0"}, {"--warmup", "NaN"}, {"--step-epochs", "+Inf"},
	} {
		full := append([]string{"train", "--data", dir, "--batch", "4", "--threads", "1"}, args...)
		if code, _, errs := runCLI(t, full...); code != 2 || !strings.Contains(errs, args[0]) {
			t.Errorf("%v: exit %d, want 2 naming %s (%s)", args, code, args[0], errs)
		}
	}
	if code, _, errs := runCLI(t, "bench", "train", "--data", dir, "--lr", "NaN"); code != 2 {
		t.Errorf("bench train --lr NaN: exit %d, want 2 (%s)", code, errs)
	}
}

// A learning rate that makes training diverge stops it with an error that
// names the step and where the first non-finite value is, exit 1 — not a
// run that reports an accuracy and exits 0.
func TestTrainDivergesStops(t *testing.T) {
	dir := writeTrainIDX(t, 16)
	code, out, errs := runCLI(t, "train", "--data", dir, "--batch", "4", "--threads", "1", "--filters", "4,8", "--lr", "1e30", "--json")
	if code != 1 || !strings.Contains(errs, "non-finite") || !strings.Contains(errs, "step ") || !strings.Contains(errs, "first non-finite value") {
		t.Errorf("--lr 1e30: exit %d, want 1 naming the step and layer\nstdout %s\nstderr %s", code, out, errs)
	}
}

// The --json summary stays valid JSON when a loss is not finite: null.
func TestTrainJSONNonFinite(t *testing.T) {
	var buf bytes.Buffer
	sum := fit.Summary{Model: "thinnet", TestLoss: math.NaN(), TestAccuracy: 0.5,
		PerEpoch: []fit.EpochSummary{{Epoch: 1, TrainLoss: math.Inf(1), TestLoss: math.NaN(), TrainAcc: 0.25}}}
	if err := writeJSON(&buf, sum); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, buf.Bytes())
	}
	ep := got["per_epoch"].([]any)[0].(map[string]any)
	if got["test_loss"] != nil || ep["train_loss"] != nil || ep["test_loss"] != nil || got["test_accuracy"] != 0.5 || ep["train_accuracy"] != 0.25 || got["model"] != "thinnet" {
		t.Errorf("summary %s", buf.Bytes())
	}
	// It still reads back into the summary (null leaves the zero value).
	var back fit.Summary
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back.TestAccuracy != 0.5 || len(back.PerEpoch) != 1 {
		t.Errorf("read back: %+v, %v", back, err)
	}
}

// fp16 training resumed from its checkpoint (which holds the GradScaler's
// state) ends at the weights of the uninterrupted run, bit for bit.
func TestTrainFP16Resume(t *testing.T) {
	dir := writeTrainIDX(t, 32)
	args := []string{"train", "--data", dir, "--batch", "8", "--threads", "1", "--filters", "4,8", "--lr", "0.05", "--amp", "--amp-dtype", "fp16", "--json"}
	digest := func(extra ...string) (fit.Summary, string) {
		t.Helper()
		code, out, errs := runCLI(t, append(args, extra...)...)
		var s fit.Summary
		if code != 0 || json.Unmarshal([]byte(out), &s) != nil || len(s.WeightsSHA256) != 64 {
			t.Fatalf("%v: exit %d\n%s\n%s", extra, code, out, errs)
		}
		return s, errs
	}
	straight, _ := digest("--epochs", "3")
	ckpt := filepath.Join(t.TempDir(), "fp16.ckpt")
	first, _ := digest("--epochs", "1", "--checkpoint", ckpt)
	resumed, errs := digest("--epochs", "3", "--checkpoint", ckpt)
	if !strings.Contains(errs, "resuming from") || resumed.Images != 2*straight.Images/3 {
		t.Fatalf("not resumed: %d images of %d\n%s", resumed.Images, straight.Images, errs)
	}
	if first.WeightsSHA256 == straight.WeightsSHA256 {
		t.Fatal("one epoch and three end at the same weights: the digest does not see training")
	}
	if resumed.WeightsSHA256 != straight.WeightsSHA256 || resumed.SkippedSteps != straight.SkippedSteps {
		t.Errorf("resumed fp16 run: weights %s, %d skipped steps; uninterrupted: %s, %d", resumed.WeightsSHA256, resumed.SkippedSteps,
			straight.WeightsSHA256, straight.SkippedSteps)
	}
}

// TestTrainScheduleRange: a schedule whose rate leaves float32's normal
// range over the run (a step at rate 0, or overflowing), or that decays
// more often than once a step, is a usage error naming the flag and the
// values it may take (before: --step-epochs 1e-300 trained the whole run
// at rate 0, exit 0). 8 images in batches of 2: 4 steps an epoch.
func TestTrainScheduleRange(t *testing.T) {
	dir := writeTrainIDX(t, 8)
	for _, c := range []struct {
		args          []string
		flag, accepts string
	}{
		{[]string{"--step-epochs", "1e-300"}, "--step-epochs 1e-300", "at least 0.25"},
		{[]string{"--step-epochs", "0.01"}, "--step-epochs 0.01", "at least 0.25"},
		{[]string{"--step-epochs", "1", "--gamma", "1e-300", "--epochs", "2"}, "--step-epochs 1 with --gamma 1e-300", "a period above 2 epochs"},
		{[]string{"--step-epochs", "0.25", "--gamma", "1e-10", "--epochs", "2"}, "--step-epochs 0.25 with --gamma 1e-10", "a period above 0.5 epochs"},
		{[]string{"--step-epochs", "0.25", "--gamma", "1e20", "--epochs", "2"}, "--step-epochs 0.25 with --gamma 1e+20", "a period above 0.6667 epochs"},
		{[]string{"--warmup", "1e37"}, "--warmup 1e+37", "at most"},
		{[]string{"--lr", "1e-300"}, "--lr 1e-300", "want a rate in [1.18e-38, 3.4e+38]"},
		{[]string{"--schedule", "onecycle", "--div-factor", "1e-300"}, "--div-factor 1e-300", "in that range"},
		{[]string{"--schedule", "onecycle", "--final-div-factor", "1e300"}, "--final-div-factor 1e+300", "in that range"},
	} {
		full := append([]string{"train", "--data", dir, "--batch", "2", "--threads", "1", "--filters", "4"}, c.args...)
		if code, _, errs := runCLI(t, full...); code != 2 || !strings.Contains(errs, c.flag) || !strings.Contains(errs, c.accepts) {
			t.Errorf("%v: exit %d, want 2 naming %q and %q\n%s", c.args, code, c.flag, c.accepts, errs)
		}
	}
	// At the edge of what is accepted: a decay every step, 8 of them.
	if code, _, errs := runCLI(t, "train", "--data", dir, "--batch", "2", "--threads", "1", "--filters", "4", "--epochs", "2", "--step-epochs", "0.25", "--gamma", "0.5"); code != 0 {
		t.Errorf("--step-epochs 0.25 --gamma 0.5: exit %d\n%s", code, errs)
	}
}
