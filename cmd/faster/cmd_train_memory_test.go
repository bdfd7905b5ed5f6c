package main

import (
	"strings"
	"testing"
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
