package lockfile

import (
	"errors"
	"path/filepath"
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
