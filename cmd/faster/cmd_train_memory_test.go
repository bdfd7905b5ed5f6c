package main

import (
	"strings"
	"testing"

	"github.com/faster-training/faster/train"
)

// A training step that cannot fit is refused before anything is
// allocated (before: `--resolution 4096 --batch 8` was killed for memory
// in its first step), naming the figures and the way out.
func TestTrainRefusesStepMemory(t *testing.T) {
	root := writeFolder(t, 2, 5)
	code, _, errs := runCLI(t, "train", "--data", root, "--test-data", root, "--resolution", "4096", "--batch", "8", "--epochs", "1", "--backend", "reference")
	if code != 2 || !strings.Contains(errs, "a training step holds") || !strings.Contains(errs, "4096×4096, batch 8") || !strings.Contains(errs, "--max-memory") {
		t.Fatalf("--resolution 4096 --batch 8: exit %d, want 2 and the step's memory named\n%s", code, errs)
	}
	// The budget is a flag: a small model refused under a tiny one.
	code, _, errs = runCLI(t, "train", "--data", root, "--test-data", root, "--resolution", "32", "--batch", "2", "--epochs", "1", "--backend", "reference", "--max-memory", "64k")
	if code != 2 || !strings.Contains(errs, "above --max-memory") {
		t.Fatalf("--max-memory 64k: exit %d, want 2\n%s", code, errs)
	}
}

// The ranks on one machine share its budget; --max-memory is per rank.
func TestCheckStepMemoryShares(t *testing.T) {
	b := train.NewReference(train.BackendOptions{})
	defer b.Close()
	net, err := newModel(b, "thinnet", nil, 3, 64, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	m, err := train.EstimateMemory(net, 16, 3, 64, 64)
	if err != nil {
		t.Fatal(err)
	}
	o := trainOptions{model: "thinnet", batch: 32}
	o.maxMemory = sizeFlag(m.Total())
	if err := checkStepMemory(net, o, 3, 64, 2, 2); err != nil {
		t.Errorf("16 images a rank within a budget of exactly their step: %v", err)
	}
	o.batch = 34 // 17 a rank
	if err := checkStepMemory(net, o, 3, 64, 2, 2); err == nil || !strings.Contains(err.Error(), "batch 17 per rank") {
		t.Errorf("17 images a rank above the budget of 16: %v", err)
	}
	if _, err := train.EstimateMemory(net, 1, 3, 8, 8); err == nil {
		t.Error("8×8 input through nine 3×3 convolutions: no error")
	}
}
