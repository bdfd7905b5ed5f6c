package lockfile

import (
	"errors"
	"path/filepath"
	"runtime"
	"testing"
)

// A second Lock of one file fails at once with ErrLocked naming it, and
// succeeds once the first is released.
func TestLock(t *testing.T) {
	p := filepath.Join(t.TempDir(), ".x.lock")
	unlock, err := Lock(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(p); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Lock: %v, want ErrLocked", err)
	}
	unlock()
	unlock2, err := Lock(p)
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	unlock2()
	if _, err := Lock(filepath.Join(t.TempDir(), "missing", "x.lock")); err == nil {
		t.Fatal("Lock in a missing folder succeeded")
	}
}

// Held sees a lock another open file holds, without taking it (the
// holder keeps it, a second Lock still fails), and no lock once it is
// released.
func TestHeld(t *testing.T) {
	p := filepath.Join(t.TempDir(), ".x.lock")
	if held, err := Held(p); held || err != nil {
		t.Fatalf("missing file: held %v, %v", held, err)
	}
	unlock, err := Lock(p)
	if err != nil {
		t.Fatal(err)
	}
	held, err := Held(p)
	if runtime.GOOS == "linux" && (!held || err != nil) {
		t.Fatalf("locked: held %v, %v", held, err)
	}
	if _, err := Lock(p); !errors.Is(err, ErrLocked) {
		t.Fatalf("Lock after Held: %v, want ErrLocked", err)
	}
	unlock()
	if held, err := Held(p); held || err != nil {
		t.Fatalf("released: held %v, %v", held, err)
	}
}
