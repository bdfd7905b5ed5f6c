package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/fit"
	"github.com/faster-training/faster/internal/testenv"
	"github.com/faster-training/faster/train"
)

// writeTrainIDX writes a learnable 28×28 IDX dataset (train and test):
// class k (0..3) has a bright band in the k-th quarter of the rows.
func writeTrainIDX(t *testing.T, n int) string { return testenv.WriteIDX(t, n) }

// fast reports whether the default backend is oneDNN (cgo); the pure-Go
// reference backend gets the smallest runs.
func fast(t *testing.T) bool {
	b, err := train.Default(train.BackendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	return b.Name() == "onednn"
}

func TestTrainCLI(t *testing.T) {
	n, batch, epochs := "8", "4", "1"
	if fast(t) {
		n, batch, epochs = "128", "32", "2"
	}
	dir := writeTrainIDX(t, 256)
	ckpt := filepath.Join(t.TempDir(), "thinnet.ckpt")
	code, out, errs := runCLI(t, "train", "--data", dir, "--limit", n, "--test-limit", n, "--batch", batch, "--epochs", epochs,
		"--lr", "0.05", "--threads", "1", "--checkpoint", ckpt, "--json")
	if code != 0 {
		t.Fatalf("train exit %d: %s", code, errs)
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("train --json: %v\n%s", err, out)
	}
	for _, k := range []string{"images_per_sec", "test_accuracy", "seconds", "epochs", "backend", "per_epoch"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("train --json lacks %q", k)
		}
	}
	if fast(t) {
		// Four classes: chance is 25%.
		if acc := sum["test_accuracy"].(float64); acc < 0.6 {
			t.Errorf("test accuracy %.2f after 2 epochs, want ≥ 0.6", acc)
		}
		t.Logf("toy test accuracy %.2f", sum["test_accuracy"].(float64))
	}
	if _, err := os.Stat(ckpt); err != nil {
		t.Errorf("no checkpoint: %v", err)
	}
	// A rerun with the same --epochs resumes at the end: nothing to train,
	// and it says so and evaluates the checkpoint (it printed "accuracy
	// 0.00%"): the same accuracy as the run that wrote it.
	code, out, errs = runCLI(t, "train", "--data", dir, "--limit", n, "--test-limit", n, "--batch", batch, "--epochs", epochs,
		"--threads", "1", "--checkpoint", ckpt)
	if code != 0 || !strings.Contains(errs, "already complete") || !strings.Contains(out, "already trained "+epochs+" epoch(s)") {
		t.Errorf("resume: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	code, out, errs = runCLI(t, "train", "--data", dir, "--limit", n, "--test-limit", n, "--batch", batch, "--epochs", "1",
		"--threads", "1", "--checkpoint", ckpt, "--json")
	var again fit.Summary
	if code != 0 || json.Unmarshal([]byte(out), &again) != nil {
		t.Fatalf("resume --json: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if !again.AlreadyDone || again.Images != 0 || again.TestAccuracy != sum["test_accuracy"].(float64) || again.TestLoss != sum["test_loss"].(float64) {
		t.Errorf("resume --json: %+v; want already complete with the test accuracy %v and loss %v of the run that saved it",
			again, sum["test_accuracy"], sum["test_loss"])
	}
}

func TestTrainCLIUsage(t *testing.T) {
	dir := writeTrainIDX(t, 8)
	for _, args := range [][]string{
		{"train"},
		{"train", "--data", dir, "--model", "vgg"},
		{"train", "--data", dir, "--batch", "0"},
		{"train", "--data", dir, "--batch", "64"}, // more than the 8 images
		{"train", "--data", dir, "--backend", "tpu"},
	} {
		if code, _, errs := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errs)
		}
	}
	if code, _, _ := runCLI(t, "train", "--data", filepath.Join(dir, "missing")); code != 1 {
		t.Errorf("missing data: exit %d, want 1", code)
	}
}

// One epoch on a real Fashion-MNIST subset lands far above chance (10%).
func TestTrainFashionMNISTSubset(t *testing.T) {
	const dir = testenv.FashionMNISTDir
	if _, err := os.Stat(filepath.Join(dir, "train-images-idx3-ubyte.gz")); err != nil {
		t.Skip("Fashion-MNIST not installed (scripts/setup.sh)")
	}
	if testing.Short() || raceEnabled || !fast(t) {
		t.Skip("needs the oneDNN backend, and not -short or -race")
	}
	code, out, errs := runCLI(t, "train", "--data", dir, "--limit", "1024", "--test-limit", "500", "--batch", "32",
		"--lr", "0.02", "--threads", "1", "--json")
	if code != 0 {
		t.Fatalf("train exit %d: %s", code, errs)
	}
	var sum struct {
		TestAccuracy float64 `json:"test_accuracy"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.TestAccuracy < 0.4 {
		t.Errorf("test accuracy %.3f after one epoch of 1024 images, want ≥ 0.4", sum.TestAccuracy)
	}
	t.Logf("test accuracy %.3f", sum.TestAccuracy)
}

func TestTrainCLIResNet18(t *testing.T) {
	if !fast(t) || raceEnabled {
		t.Skip("ResNet-18 needs the oneDNN backend, and is slow under -race (which checks no more Go here)")
	}
	dir := writeTrainIDX(t, 8)
	code, out, errs := runCLI(t, "train", "--data", dir, "--model", "resnet18", "--batch", "4", "--lr", "0.01", "--threads", "1", "--json")
	if code != 0 {
		t.Fatalf("train resnet18 exit %d: %s", code, errs)
	}
	if !strings.Contains(out, `"model": "resnet18"`) || !strings.Contains(out, `"images": 8`) {
		t.Errorf("train resnet18 --json: %s", out)
	}
}

// --autotune with --tune-cache: the first run times the candidates and
// keeps its choices; the next run (a new process) takes them from the file,
// timing nothing, and says so in --json.
func TestTrainTuneCache(t *testing.T) {
	if !fast(t) {
		t.Skip("the reference backend has nothing to tune")
	}
	dir := writeTrainIDX(t, 64)
	cache := filepath.Join(t.TempDir(), "tune.json")
	runOnce := func() []train.TuneChoice {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		c := exec.Command(exe, "train", "--data", dir, "--limit", "32", "--test-limit", "32", "--batch", "16", "--epochs", "1",
			"--threads", "1", "--autotune", "--tune-cache", cache, "--json")
		c.Env = append(os.Environ(), cliEnv+"=1")
		out, err := c.Output()
		if err != nil {
			t.Fatalf("train: %v\n%s", err, out)
		}
		var sum struct {
			Autotune []train.TuneChoice `json:"autotune"`
		}
		if err := json.Unmarshal(out, &sum); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return sum.Autotune
	}
	first := runOnce()
	if len(first) == 0 {
		t.Fatal("the first run tuned nothing")
	}
	for _, c := range first {
		if c.Cached || c.Seconds <= 0 {
			t.Fatalf("first run: %+v, want timed", c)
		}
	}
	second := runOnce()
	if len(second) != len(first) {
		t.Fatalf("the second run made %d choices, the first %d", len(second), len(first))
	}
	for i, c := range second {
		if !c.Cached || c.Seconds != 0 || c.Chosen != first[i].Chosen {
			t.Fatalf("second run, choice %d: %+v; want %q from the cache", i, c, first[i].Chosen)
		}
	}
}
