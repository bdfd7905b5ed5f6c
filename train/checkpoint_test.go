package train_test

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/train"
)

// toyTrainer is a small ThinNet trainer on the reference backend.
func toyTrainer(t testing.TB) *train.Trainer {
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

// A checkpoint records the data it was trained on: one saved mid-epoch on
// other data (another dataset, or the same one of another size) is
// refused naming both (before: resumed at a step past the end of a smaller
// epoch, it trained nothing and said nothing). A trainer or checkpoint
// without the record is not checked.
func TestCheckpointData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ckpt")
	saved := toyTrainer(t)
	saved.Data = train.DataID{Name: "/data/a", Samples: 1000}
	saved.Step = 40 // mid-epoch
	if err := saved.SaveCheckpoint(path); err != nil {
		t.Fatal(err)
	}
	for _, other := range []train.DataID{{Name: "/data/b", Samples: 1000}, {Name: "/data/a", Samples: 500}} {
		tr := toyTrainer(t)
		tr.Data = other
		err := tr.LoadCheckpoint(path)
		if !errors.Is(err, train.ErrData) || !errors.Is(err, train.ErrCheckpoint) ||
			!strings.Contains(err.Error(), "/data/a (1000 samples)") || !strings.Contains(err.Error(), other.String()) {
			t.Errorf("checkpoint of /data/a (1000) into a run on %v: %v, want ErrData naming both", other, err)
		}
	}
	for _, same := range []train.DataID{{Name: "/data/a", Samples: 1000}, {}} {
		tr := toyTrainer(t)
		tr.Data = same
		if err := tr.LoadCheckpoint(path); err != nil || tr.Step != 40 {
			t.Errorf("run on %v: step %d, %v", same, tr.Step, err)
		}
	}
	unrecorded := toyTrainer(t)
	if err := unrecorded.SaveCheckpoint(path); err != nil {
		t.Fatal(err)
	}
	tr := toyTrainer(t)
	tr.Data = train.DataID{Name: "/data/b", Samples: 5}
	if err := tr.LoadCheckpoint(path); err != nil {
		t.Errorf("a checkpoint without a data record: %v", err)
	}
}

// Two writers of one checkpoint: the second lock fails at once naming the
// checkpoint (before: two runs overwrote each other, both exit 0); a
// 255-byte checkpoint name has a lock name within NAME_MAX, and two long
// names alike in their first bytes have two locks.
func TestLockCheckpoint(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.ckpt")
	unlock, err := train.LockCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := train.LockCheckpoint(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "another run") {
		t.Fatalf("second lock: %v", err)
	}
	unlock()
	if unlock, err = train.LockCheckpoint(path); err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	unlock()
	long1, long2 := filepath.Join(dir, strings.Repeat("x", 254)+"1"), filepath.Join(dir, strings.Repeat("x", 254)+"2")
	if n := len(filepath.Base(train.CheckpointLockName(long1))); n > 255 {
		t.Fatalf("lock name of %d bytes", n)
	}
	u1, err := train.LockCheckpoint(long1)
	if err != nil {
		t.Fatal(err)
	}
	defer u1()
	u2, err := train.LockCheckpoint(long2)
	if err != nil {
		t.Fatalf("a second long name alike in its first bytes: %v", err)
	}
	u2()
	if _, err := train.LockCheckpoint(filepath.Join(dir, "missing", "x.ckpt")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("checkpoint in a missing folder: %v", err)
	}
}

// FuzzCheckpoint feeds arbitrary bytes to LoadCheckpoint and
// CheckpointPosition, as read and with their CRC made right (so that the
// header and tensors behind it are explored): never a panic, and every
// refusal is ErrCheckpoint or an error naming the file.
func FuzzCheckpoint(f *testing.F) {
	dir := f.TempDir()
	seed := filepath.Join(dir, "seed")
	tr := toyTrainer(f)
	tr.Data = train.DataID{Name: "/data", Samples: 10}
	tr.Step = 3
	if err := tr.SaveCheckpoint(seed); err != nil {
		f.Fatal(err)
	}
	b, _ := os.ReadFile(seed)
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Add([]byte("FSTRCKP1\xff\xff\xff\xff{}"))
	f.Add([]byte("FSTRCKP1\x02\x00\x00\x00{}\x00\x00\x00\x00"))
	path := filepath.Join(dir, "ckpt")
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, fix := range []bool{false, true} {
			if fix && len(data) >= 4 {
				data = append([]byte(nil), data...)
				binary.LittleEndian.PutUint32(data[len(data)-4:], crc32.Checksum(data[:len(data)-4], crc32.MakeTable(crc32.Castagnoli)))
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := tr.LoadCheckpoint(path); err != nil && !errors.Is(err, train.ErrCheckpoint) {
				t.Fatalf("LoadCheckpoint: %v is not ErrCheckpoint", err)
			}
			if _, _, err := train.CheckpointPosition(path); err != nil && !errors.Is(err, train.ErrCheckpoint) {
				t.Fatalf("CheckpointPosition: %v is not ErrCheckpoint", err)
			}
		}
	})
}
