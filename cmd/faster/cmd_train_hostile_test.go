package main

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/faster-training/faster/train"
)

// Issue 31: hostile flags and files of `faster train`.

// A --label-offset beyond any stored label is a usage error naming it
// (before: 32 GB of class names or a panic).
func TestTrainLabelOffsetBounded(t *testing.T) {
	for _, off := range []string{"4000000000", "-9223372036854775808"} {
		code, _, errs := runCLI(t, "train", "--data", t.TempDir(), "--label-offset", off)
		if code != 2 || !strings.Contains(errs, "--label-offset "+off) {
			t.Errorf("--label-offset %s: exit %d, want 2 naming it\n%s", off, code, errs)
		}
	}
}

// A checkpoint resumed on other data is refused naming both (before: a
// mid-epoch one resumed on a smaller dataset trained nothing, exit 0).
func TestTrainCheckpointOtherData(t *testing.T) {
	dir := writeTrainIDX(t, 64)
	ckpt := filepath.Join(t.TempDir(), "thinnet.ckpt")
	small := []string{"--batch", "4", "--test-limit", "4", "--threads", "1", "--filters", "4", "--checkpoint", ckpt}
	if code, _, errs := runCLI(t, append([]string{"train", "--data", dir, "--limit", "8", "--epochs", "1"}, small...)...); code != 0 {
		t.Fatalf("train: exit %d: %s", code, errs)
	}
	code, _, errs := runCLI(t, append([]string{"train", "--data", dir, "--limit", "4", "--epochs", "2"}, small...)...)
	if code != 1 || !strings.Contains(errs, dir+" (8 samples)") || !strings.Contains(errs, dir+" (4 samples)") || !strings.Contains(errs, "another --checkpoint") {
		t.Errorf("resumed on 4 samples of 8: exit %d, want 1 naming both\n%s", code, errs)
	}
	if code, _, errs := runCLI(t, append([]string{"train", "--data", dir, "--limit", "8", "--epochs", "2"}, small...)...); code != 0 {
		t.Errorf("resumed on the same data: exit %d: %s", code, errs)
	}
}

// A checkpoint another run is saving to is refused at once, before any
// work (before: two runs overwrote each other's checkpoints, both exit 0).
func TestTrainCheckpointLocked(t *testing.T) {
	ckpt := filepath.Join(t.TempDir(), "model.ckpt")
	unlock, err := train.LockCheckpoint(ckpt) // the other run
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	code, _, errs := runCLI(t, "train", "--data", writeTrainIDX(t, 16), "--batch", "4", "--threads", "1", "--checkpoint", ckpt)
	if code != 1 || !strings.Contains(errs, ckpt) || !strings.Contains(errs, "another run is saving to this checkpoint") {
		t.Errorf("locked checkpoint: exit %d, want 1 naming it\n%s", code, errs)
	}
}

// A model too large for --max-memory is refused before any of it is
// allocated, as docs/badinput.md says (before: the model was built first:
// --filters 2000 allocated 600 MB of weights and gradients, --filters
// 20000 14.4 GB, then the check refused it).
func TestTrainRefusesModelBeforeBuilding(t *testing.T) {
	dir := writeTrainIDX(t, 16)
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	before := m.TotalAlloc
	code, _, errs := runCLI(t, "train", "--data", dir, "--batch", "4", "--threads", "1", "--filters", "2000", "--max-memory", "64M")
	runtime.ReadMemStats(&m)
	if code != 2 || !strings.Contains(errs, "above --max-memory") {
		t.Fatalf("--filters 2000 --max-memory 64M: exit %d, want 2\n%s", code, errs)
	}
	if n := m.TotalAlloc - before; n > 100<<20 {
		t.Errorf("refusing the model allocated %d MB", n>>20)
	}
}
