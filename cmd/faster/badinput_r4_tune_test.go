//go:build unix

package main

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/faster-training/faster/train"
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

// forgeCheckpoint replaces old by new in the JSON header of the checkpoint
// at path, its length and CRC-32C made right (as a forger would).
func forgeCheckpoint(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const magic = 8
	hl := int(binary.LittleEndian.Uint32(b[magic:]))
	h := string(b[magic+4 : magic+4+hl])
	if !strings.Contains(h, old) {
		t.Fatalf("%s: the header has no %q: %s", path, old, h)
	}
	h = strings.Replace(h, old, new, 1)
	out := append([]byte(nil), b[:magic]...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(h)))
	out = append(out, h...)
	out = append(out, b[magic+4+hl:len(b)-4]...)
	out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, crc32.MakeTable(crc32.Castagnoli)))
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// trainedCheckpoint trains one epoch into a checkpoint and returns the
// data and the checkpoint.
func trainedCheckpoint(t *testing.T) (data, ckpt string) {
	data = writeTrainIDX(t, 16)
	ckpt = filepath.Join(t.TempDir(), "ckpt")
	if code, _, errs := runCLI(t, tinyTrainArgs(data, "--checkpoint", ckpt)...); code != 0 {
		t.Fatalf("training the checkpoint: %s", errs)
	}
	return data, ckpt
}

func init() {
	otherFixtures["ckpt-epoch-negative"] = func(t *testing.T) ([]string, string) {
		data, ckpt := trainedCheckpoint(t)
		forgeCheckpoint(t, ckpt, `"epoch":1,`, `"epoch":-1,`)
		return tinyTrainArgs(data, "--checkpoint", ckpt, "--epochs", "2"), "epoch -1"
	}
	otherFixtures["ckpt-step-past-epoch"] = func(t *testing.T) ([]string, string) {
		data, ckpt := trainedCheckpoint(t)
		forgeCheckpoint(t, ckpt, `"step":0,`, `"step":9,`)
		return tinyTrainArgs(data, "--checkpoint", ckpt, "--epochs", "2"), "step 9"
	}
}

// A --checkpoint that is a symlink is saved to, and locked as, its
// target: the link stays a link, the target holds the run, and a run on
// the target and one through the link exclude each other (before: the
// save replaced the link with a file, the target kept the old epoch, and
// the two names had two locks).
func TestTrainCheckpointThroughSymlink(t *testing.T) {
	data, real := trainedCheckpoint(t)
	link := filepath.Join(t.TempDir(), "link.ckpt")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	unlock, err := train.LockCheckpoint(real) // another run on the target
	if err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI(t, tinyTrainArgs(data, "--checkpoint", link, "--epochs", "2")...); code != 1 || !strings.Contains(errs, "another run") {
		t.Errorf("a run through the link while the target is locked: exit %d, %s", code, errs)
	}
	unlock()
	if code, _, errs := runCLI(t, tinyTrainArgs(data, "--checkpoint", link, "--epochs", "2")...); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v, %v", st.Mode(), err)
	}
	if epoch, _, err := train.CheckpointPosition(real); err != nil || epoch != 2 {
		t.Fatalf("the target is at epoch %d (%v), want 2", epoch, err)
	}
}
