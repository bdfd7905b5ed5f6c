package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faster-training/faster/fit"
	"github.com/faster-training/faster/internal/testenv"
)

// recipeRun runs faster train on the toy IDX data and decodes its JSON.
func recipeRun(t *testing.T, dir string, args ...string) trainResult {
	t.Helper()
	base := []string{"train", "--data", dir, "--limit", "64", "--test-limit", "32", "--batch", "16", "--filters", "4,8", "--threads", "1", "--json"}
	code, out, errs := runCLI(t, append(base, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r trainResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return r
}

type trainResult struct {
	Schedule        string           `json:"schedule"`
	LR              float64          `json:"lr"`
	LabelSmoothing  float64          `json:"label_smoothing"`
	Nesterov        bool             `json:"nesterov"`
	EMA             float64          `json:"ema"`
	TTA             string           `json:"tta"`
	Resolutions     []int            `json:"resolution_schedule"`
	Curve           []fit.CurvePoint `json:"curve"`
	SecondsToTarget *float64         `json:"seconds_to_target"`
	StepsToTarget   int              `json:"steps_to_target"`
	Weights         string           `json:"weights_sha256"`
	PerEpoch        []struct {
		Resolution int `json:"resolution"`
		Images     int `json:"images"`
	} `json:"per_epoch"`
}

// --recipe fast sets each part unless its flag is given; --eval-every
// evaluates every N steps and at each epoch's end, and training in
// stretches between evaluations trains the same weights as without them.
func TestTrainRecipeFast(t *testing.T) {
	dir := writeTrainIDX(t, 64)
	r := recipeRun(t, dir, "--recipe", "fast", "--lr", "0.05", "--epochs", "2", "--eval-every", "3")
	if r.Schedule != "onecycle" || r.LR != 0.05 || r.LabelSmoothing != 0.1 || !r.Nesterov || r.EMA != 0.99 || r.TTA != "flip" || !slices.Equal(r.Resolutions, []int{20, 28}) {
		t.Errorf("recipe: %+v", r)
	}
	if len(r.PerEpoch) != 2 || r.PerEpoch[0].Resolution != 20 || r.PerEpoch[1].Resolution != 28 || r.PerEpoch[0].Images != 64 {
		t.Errorf("per epoch %+v: want 64 images at 20, then at 28", r.PerEpoch)
	}
	var steps []int
	for i, p := range r.Curve {
		steps = append(steps, p.Step)
		if i > 0 && p.Seconds < r.Curve[i-1].Seconds {
			t.Errorf("the training clock went back: %+v", r.Curve)
		}
	}
	// 4 steps per epoch: every 3 steps, and at each epoch's end.
	if !slices.Equal(steps, []int{3, 4, 6, 8}) {
		t.Errorf("evaluated at steps %v, want 3 4 6 8", steps)
	}
	if r.SecondsToTarget != nil {
		t.Errorf("seconds to target %v without a target", *r.SecondsToTarget)
	}
	plain := recipeRun(t, dir, "--recipe", "fast", "--lr", "0.05", "--epochs", "2")
	if plain.Weights != r.Weights {
		t.Error("training with evaluations every 3 steps trained other weights than without")
	}
	if len(plain.Curve) != 2 {
		t.Errorf("without --eval-every: %d evaluations, want one per epoch", len(plain.Curve))
	}
	off := recipeRun(t, dir, "--recipe", "fast", "--lr", "0.05", "--epochs", "2", "--nesterov=false", "--tta", "none", "--resolution-schedule", "")
	if off.Nesterov || off.TTA != "none" || len(off.Resolutions) != 0 || off.Weights == plain.Weights {
		t.Errorf("explicit flags did not override the recipe: %+v", off)
	}
}

// --target-accuracy stops at the first evaluation that reaches it.
func TestTrainTargetAccuracy(t *testing.T) {
	dir := writeTrainIDX(t, 64)
	r := recipeRun(t, dir, "--lr", "0.05", "--epochs", "3", "--eval-every", "2", "--target-accuracy", "0.01")
	if r.SecondsToTarget == nil || r.StepsToTarget != 2 || len(r.Curve) != 1 {
		t.Fatalf("target 1%%: seconds %v, steps %d, curve %+v; want a stop at the first evaluation (step 2)", r.SecondsToTarget, r.StepsToTarget, r.Curve)
	}
	never := recipeRun(t, dir, "--lr", "0.05", "--epochs", "1", "--eval-every", "2", "--target-accuracy", "1")
	if len(never.Curve) != 2 || (never.SecondsToTarget != nil && never.Curve[len(never.Curve)-1].TestAccuracy < 1) {
		t.Errorf("target 100%%: %+v", never)
	}
}

func TestTrainRecipeUsage(t *testing.T) {
	dir := writeTrainIDX(t, 16)
	for _, bad := range [][]string{
		{"--recipe", "slow"}, {"--schedule", "cosine"}, {"--tta", "crop"}, {"--target-accuracy", "92"},
		{"--label-smoothing", "1.5"}, {"--ema", "1"}, {"--resolution-schedule", "20,x"}, {"--nesterov", "--momentum", "0"},
		{"--pct-start", "1"}, {"--eval-every", "-1"},
	} {
		code, _, errs := runCLI(t, append([]string{"train", "--data", dir, "--batch", "4"}, bad...)...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", bad, code, errs)
		}
	}
}

// needTorch skips (or fails under FASTER_REQUIRE_DATA=1) without Debian's
// python3-torch.
func needTorch(t *testing.T) {
	t.Helper()
	if err := exec.Command(testenv.Python, "-c", "import torch").Run(); err != nil {
		testenv.Missing(t, "python3-torch missing: %v", err)
	}
}

// bench train --target-accuracy runs ours and the PyTorch peer with the
// same hyper-parameters, alternating their order by round, each stopping
// at its first evaluation at the target, and writes the curves and the
// plot; both reaching the target gives a ratio.
func TestBenchTimeToAccuracy(t *testing.T) {
	needTorch(t)
	dir := writeTrainIDX(t, 64)
	tmp := t.TempDir()
	curve, plot := filepath.Join(tmp, "tta.json"), filepath.Join(tmp, "tta.png")
	sum := runTTA(t, "--data", dir, "--limit", "64", "--test-limit", "32", "--batch", "16", "--threads", "1",
		"--filters", "4,8", "--epochs", "4", "--lr", "0.1", "--target-accuracy", "0.5", "--eval-every", "2",
		"--rounds", "2", "--peer", "../../bench/peer_thinnet_torch.py", "--curve", curve, "--plot", plot)
	var order []string
	for _, r := range sum.Runs {
		order = append(order, r.Engine)
		// The run stops at its first evaluation at the target.
		n := len(r.Curve)
		if r.SecondsToTarget == nil || n == 0 || r.StepsToTarget != r.Curve[n-1].Step || r.Curve[n-1].TestAccuracy < 0.5 || r.Variant != "recipe" {
			t.Errorf("%s round %d: %+v; want a stop at the first evaluation reaching 50%%", r.Engine, r.Round, r)
		}
		for _, p := range r.Curve[:max(n-1, 0)] {
			if p.TestAccuracy >= 0.5 {
				t.Errorf("%s round %d went on after reaching the target: %+v", r.Engine, r.Round, r.Curve)
			}
		}
	}
	if !slices.Equal(order, []string{"faster", "pytorch", "pytorch", "faster"}) {
		t.Errorf("runs in order %v", order)
	}
	if sum.Ratio <= 0 {
		t.Errorf("ratio %g with both at the target", sum.Ratio)
	}
	var saved ttaSummary
	if b, err := os.ReadFile(curve); err != nil || json.Unmarshal(b, &saved) != nil || len(saved.Runs) != 4 {
		t.Errorf("--curve %s: %v", curve, err)
	}
	if b, err := os.ReadFile(plot); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("--plot %s: not a PNG (%v)", plot, err)
	}
}

// Ours runs Winograd by default; --winograd=false reaches ours, and only
// ours: the summary lists it apart from the flags both engines got, and
// the run reports it.
func TestBenchTimeToAccuracyWinograd(t *testing.T) {
	dir := writeTrainIDX(t, 32)
	for _, c := range []struct {
		flag     string
		oursArgs []string
		winograd bool
	}{{"--winograd", nil, true}, {"--winograd=false", []string{"--winograd=false"}, false}} {
		sum := runTTA(t, "--data", dir, "--limit", "32", "--test-limit", "16", "--batch", "16", "--threads", "1",
			"--filters", "4,16", "--epochs", "1", "--lr", "0.1", "--target-accuracy", "0.99", "--eval-every", "1", "--no-peer", c.flag)
		if !slices.Equal(sum.OursArgs, c.oursArgs) || slices.ContainsFunc(sum.Args, func(a string) bool { return strings.HasPrefix(a, "--winograd") }) {
			t.Errorf("%s: ours_args %q, args %q: want %q for ours only", c.flag, sum.OursArgs, sum.Args, c.oursArgs)
		}
		if len(sum.Runs) != 1 || sum.Runs[0].Winograd != c.winograd {
			t.Errorf("%s: runs %+v: want one run of ours with winograd %v", c.flag, sum.Runs, c.winograd)
		}
	}
}

// --no-peer runs ours alone in every round: in the even rounds, where the
// peer would go first, it is ours that runs, and only ours (a peer script
// that does not exist would fail the command if it were started).
func TestBenchTimeToAccuracyNoPeerRounds(t *testing.T) {
	dir := writeTrainIDX(t, 32)
	sum := runTTA(t, "--data", dir, "--limit", "32", "--test-limit", "16", "--batch", "16", "--threads", "1",
		"--filters", "4,8", "--epochs", "1", "--lr", "0.1", "--target-accuracy", "0.99", "--eval-every", "1", "--no-peer",
		"--rounds", "3", "--peer", filepath.Join(t.TempDir(), "missing.py"))
	var rounds []int
	for _, r := range sum.Runs {
		if r.Engine != "faster" {
			t.Errorf("run %+v: the peer ran under --no-peer", r)
		}
		rounds = append(rounds, r.Round)
	}
	if !slices.Equal(rounds, []int{1, 2, 3}) {
		t.Errorf("rounds of ours %v, want [1 2 3]", rounds)
	}
}

// --ours-ddp runs ours as DDP processes splitting --threads, the peer
// untouched; a count that does not divide the threads is a usage error.
func TestBenchTimeToAccuracyOursDDP(t *testing.T) {
	needGloo(t)
	dir := writeTrainIDX(t, 32)
	base := []string{"--data", dir, "--limit", "32", "--test-limit", "16", "--batch", "16",
		"--filters", "4,8", "--epochs", "1", "--lr", "0.1", "--target-accuracy", "0.99", "--eval-every", "1", "--no-peer"}
	if code, _, errs := runCLI(t, append([]string{"bench", "train", "--json"}, append(base, "--threads", "2", "--ours-ddp", "3")...)...); code != 2 || !strings.Contains(errs, "--ours-ddp 3") {
		t.Errorf("--ours-ddp 3 of 2 threads: exit %d, %s", code, errs)
	}
	sum := runTTA(t, append(base, "--threads", "2", "--ours-ddp", "2")...)
	if want := []string{"--strategy", "ddp", "--nproc", "2", "--threads", "1"}; !slices.Equal(sum.OursArgs, want) {
		t.Errorf("ours_args %q, want %q", sum.OursArgs, want)
	}
	if len(sum.Runs) != 1 || sum.Runs[0].Processes != 2 || len(sum.Runs[0].Curve) == 0 {
		t.Errorf("runs %+v: want one run of ours as 2 processes, with its curve", sum.Runs)
	}
}

// runTTA runs `faster bench train --json` with args, fails the test unless
// it exits 0, and returns its summary.
func runTTA(t *testing.T, args ...string) ttaSummary {
	t.Helper()
	code, out, errs := runCLI(t, append([]string{"bench", "train", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("bench train %q: exit %d: %s", args, code, errs)
	}
	var sum ttaSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return sum
}
