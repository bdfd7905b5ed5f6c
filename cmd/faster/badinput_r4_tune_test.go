//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// tinyTrainArgs is a tiny training run of ThinNet on data (8 images, one
// batch of 4 twice, 4 test images).
func tinyTrainArgs(data string, more ...string) []string {
	return append([]string{"train", "--data", data, "--batch", "4", "--threads", "1", "--filters", "4", "--limit", "8", "--test-limit", "4"}, more...)
}

// movedCheckpoint trains a checkpoint on a dataset, moves the dataset and
// returns the new path and the checkpoint.
func movedCheckpoint(t *testing.T) (moved, ckpt string) {
	dir := writeTrainIDX(t, 16)
	ckpt = filepath.Join(t.TempDir(), "ckpt")
	if code, _, errs := runCLI(t, tinyTrainArgs(dir, "--checkpoint", ckpt)...); code != 0 {
		t.Fatalf("training the checkpoint: %s", errs)
	}
	moved = filepath.Join(t.TempDir(), "moved")
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	return moved, ckpt
}

func init() {
	otherFixtures["tune-cache-fifo"] = func(t *testing.T) ([]string, string) {
		fifo := filepath.Join(t.TempDir(), "tune.json")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		return tinyTrainArgs(writeTrainIDX(t, 16), "--autotune", "--tune-cache", fifo), fifo
	}
	otherFixtures["tune-cache-dev-zero"] = func(t *testing.T) ([]string, string) {
		return tinyTrainArgs(writeTrainIDX(t, 16), "--autotune", "--tune-cache", "/dev/zero"), "/dev/zero"
	}
	otherFixtures["warmup-huge"] = func(t *testing.T) ([]string, string) {
		return tinyTrainArgs(writeTrainIDX(t, 16), "--warmup", "1e308"), "--warmup 1e+308: at most 3.4e+38 (float32's largest)"
	}
	otherFixtures["ckpt-data-moved"] = func(t *testing.T) ([]string, string) {
		moved, ckpt := movedCheckpoint(t)
		return tinyTrainArgs(moved, "--checkpoint", ckpt, "--epochs", "2"), "--same-data"
	}
	otherFixtures["ckpt-data-moved-same-data"] = func(t *testing.T) ([]string, string) {
		moved, ckpt := movedCheckpoint(t)
		return tinyTrainArgs(moved, "--checkpoint", ckpt, "--epochs", "2", "--same-data"), ""
	}
	otherFixtures["ckpt-same-data-other-size"] = func(t *testing.T) ([]string, string) {
		moved, ckpt := movedCheckpoint(t)
		args := tinyTrainArgs(moved, "--checkpoint", ckpt, "--epochs", "2", "--same-data")
		args[10] = "12" // --limit
		return args, "(8 samples)"
	}
}
