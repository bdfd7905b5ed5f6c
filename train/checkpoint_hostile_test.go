package train_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faster-training/faster/internal/atomicfile"
	"github.com/faster-training/faster/train"
)

// A run killed while it saved (kill -9) leaves its temporary beside the
// checkpoint; the next run, holding the checkpoint's lock, removes the
// checkpoint's temporaries and nothing else: not another name's, not a
// file that only looks alike (before: they stayed for ever, a checkpoint's
// size each).
func TestLockCheckpointRemovesStaleTemps(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "model.ckpt")
	f, err := atomicfile.Create(ck, 0o644) // the killed run's save
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("half a checkpoint"))
	f.File.Close()
	stale := f.Name()
	keep := []string{"model.ckpt", ".model.ckpt.lock", ".model.ckpt.tmp-12x", ".model.ckpt.tmp-",
		".other.ckpt.tmp-123", ".model.ckpt.tmp-5.tmp-6", "model.ckpt.tmp-7", ".model.ckpt2.tmp-8"}
	for _, n := range keep {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, ".model.ckpt.tmp-99"), 0o755); err != nil {
		t.Fatal(err)
	}
	keep = append(keep, ".model.ckpt.tmp-99")
	unlock, err := train.LockCheckpoint(ck)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := os.Stat(stale); err == nil {
		t.Fatalf("the killed run's temporary %s stayed", stale)
	}
	ents, _ := os.ReadDir(dir)
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	for _, n := range keep {
		if !slices.Contains(left, n) {
			t.Errorf("%s was removed", n)
		}
	}
	// A long name's stem is shared with other names: nothing is removed.
	long := filepath.Join(dir, strings.Repeat("m", atomicfile.MaxTempBase+10))
	f, err = atomicfile.Create(long, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.File.Close()
	unlock2, err := train.LockCheckpoint(long)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock2()
	if _, err := os.Stat(f.Name()); err != nil {
		t.Fatalf("a temporary whose stem other names share was removed: %v", err)
	}
}

// Trainer.DataMoved resumes a checkpoint saved on data of another name
// (the dataset moved) when the sample count is the same; data of another
// count is still refused, and without it another name is.
func TestCheckpointDataMoved(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ckpt")
	saved := toyTrainer(t)
	saved.Data = train.DataID{Name: "/data/a", Samples: 1000}
	saved.Step = 40
	if err := saved.SaveCheckpoint(path); err != nil {
		t.Fatal(err)
	}
	moved := toyTrainer(t)
	moved.Data, moved.DataMoved = train.DataID{Name: "/data/b", Samples: 1000}, true
	if err := moved.LoadCheckpoint(path); err != nil || moved.Step != 40 {
		t.Fatalf("the moved data: step %d, %v", moved.Step, err)
	}
	other := toyTrainer(t)
	other.Data, other.DataMoved = train.DataID{Name: "/data/b", Samples: 999}, true
	err := other.LoadCheckpoint(path)
	var de *train.DataError
	if !errors.Is(err, train.ErrData) || !errors.As(err, &de) || de.Saved.Samples != 1000 || de.Run.Samples != 999 {
		t.Fatalf("data of another size with DataMoved: %v, want a *DataError", err)
	}
	plain := toyTrainer(t)
	plain.Data = train.DataID{Name: "/data/b", Samples: 1000}
	if err := plain.LoadCheckpoint(path); !errors.As(err, &de) || de.Saved.Name != "/data/a" || de.Run.Name != "/data/b" {
		t.Fatalf("another name without DataMoved: %v", err)
	}
}

// A checkpoint whose header holds a position or count no run writes (a
// negative epoch or step, an epoch past MaxCheckpointEpoch, a negative
// EMA update count or class count, a mid-epoch step without a batch) is
// refused naming the field, by LoadCheckpoint and CheckpointPosition
// (before: epoch -1 loaded, and the schedule's rate at a negative epoch
// trained on).
func TestCheckpointPositionBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ckpt")
	for _, tc := range []struct {
		name  string
		edit  func(*train.Trainer)
		field string
	}{
		{"epoch -1", func(tr *train.Trainer) { tr.Epoch = -1 }, "epoch -1"},
		{"epoch 2^62", func(tr *train.Trainer) { tr.Epoch = 1 << 62 }, "epoch 4611686018427387904"},
		{"step -5", func(tr *train.Trainer) { tr.Step = -5 }, "step -5"},
		{"classes -3", func(tr *train.Trainer) { tr.Classes = -3 }, "classes -3"},
		{"samples -1", func(tr *train.Trainer) { tr.Data = train.DataID{Name: "/d", Samples: -1} }, "-1 samples"},
	} {
		saved := toyTrainer(t)
		tc.edit(saved)
		if err := saved.SaveCheckpoint(path); err != nil {
			t.Fatal(err)
		}
		tr := toyTrainer(t)
		err := tr.LoadCheckpoint(path)
		if !errors.Is(err, train.ErrCheckpoint) || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: LoadCheckpoint: %v, want ErrCheckpoint naming %q", tc.name, err, tc.field)
		}
		if _, _, err := train.CheckpointPosition(path); !errors.Is(err, train.ErrCheckpoint) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: CheckpointPosition: %v, want ErrCheckpoint naming %q", tc.name, err, tc.field)
		}
	}
}
