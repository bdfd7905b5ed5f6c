package train_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/train"
)

// toyTrainer is a small ThinNet trainer on the reference backend.
func toyTrainer(t *testing.T) *train.Trainer {
	t.Helper()
	b := train.NewReference(train.BackendOptions{})
	t.Cleanup(func() { b.Close() })
	net, err := train.NewThinNet(b, toyNet, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(net.Close)
	tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9}, train.Constant(0.01), 16, 1)
	t.Cleanup(tr.Close)
	return tr
}

// A checkpoint is read by the data-file rules: a FIFO, a device or a
// directory is refused at once without blocking, and a file larger than
// the model's checkpoint can be is refused before it is read (before: a
// plain whole-file read hung on a FIFO and ran out of memory on /dev/zero
// or a huge file).
func TestCheckpointReadIsBounded(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := toyTrainer(t).SaveCheckpoint(good); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge") // sparse: no disk, 1 TB if read
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 40); err != nil {
		t.Skipf("sparse file: %v", err)
	}
	f.Close()
	for _, c := range []struct{ path, want string }{
		{fifo, "not a regular file"},
		{zero, "not a regular file"},
		{dir, "not a regular file"},
		{huge, "more than a checkpoint of this model holds"},
	} {
		err := toyTrainer(t).LoadCheckpoint(c.path)
		if err == nil || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LoadCheckpoint(%s): %v, want an error naming it: %q", c.path, err, c.want)
		}
		if c.path != huge && !errors.Is(err, source.ErrBadFile) {
			t.Errorf("LoadCheckpoint(%s): %v is not source.ErrBadFile", c.path, err)
		}
		if _, _, err := train.CheckpointPosition(c.path); err == nil || !strings.Contains(err.Error(), c.path) {
			t.Errorf("CheckpointPosition(%s): %v", c.path, err)
		}
	}
	if err := toyTrainer(t).LoadCheckpoint(good); err != nil {
		t.Fatal(err)
	}
	if e, s, err := train.CheckpointPosition(good); err != nil || e != 0 || s != 0 {
		t.Fatalf("CheckpointPosition(good) = %d, %d, %v", e, s, err)
	}
	// A flipped byte anywhere is a checksum mismatch, to CheckpointPosition too.
	b, _ := os.ReadFile(good)
	b[len(b)/2] ^= 1
	os.WriteFile(good, b, 0o644)
	if _, _, err := train.CheckpointPosition(good); !errors.Is(err, train.ErrCheckpoint) || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("CheckpointPosition(flipped): %v", err)
	}
}
