package train

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faster-training/faster/internal/atomicfile"
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
	unlock, err := LockCheckpoint(ck)
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
	unlock2, err := LockCheckpoint(long)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock2()
	if _, err := os.Stat(f.Name()); err != nil {
		t.Fatalf("a temporary whose stem other names share was removed: %v", err)
	}
}
