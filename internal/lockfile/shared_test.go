//go:build unix

package lockfile

import (
	"errors"
	"path/filepath"
	"testing"
)

// Shared holders coexist and exclude Lock; Lock excludes them; Held sees
// a shared holder.
func TestLockShared(t *testing.T) {
	p := filepath.Join(t.TempDir(), ".x.lock")
	u1, err := LockShared(p)
	if err != nil {
		t.Fatal(err)
	}
	u2, err := LockShared(p)
	if err != nil {
		t.Fatalf("second shared lock: %v", err)
	}
	if _, err := Lock(p); !errors.Is(err, ErrLocked) {
		t.Fatalf("Lock while shared: %v, want ErrLocked", err)
	}
	if held, err := Held(p); err != nil || !held {
		t.Fatalf("Held while shared: %v %v", held, err)
	}
	u1()
	if _, err := Lock(p); !errors.Is(err, ErrLocked) {
		t.Fatalf("Lock while one shared holder is left: %v, want ErrLocked", err)
	}
	u2()
	unlock, err := Lock(p)
	if err != nil {
		t.Fatalf("Lock once the shared holders left: %v", err)
	}
	if _, err := LockShared(p); !errors.Is(err, ErrLocked) {
		t.Fatalf("shared lock while locked: %v, want ErrLocked", err)
	}
	unlock()
}
