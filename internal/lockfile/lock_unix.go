//go:build unix

package lockfile

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Lock takes the exclusive lock of the file at path (created if missing)
// or fails at once: with ErrLocked when another holds it. unlock releases
// it; the file stays.
func Lock(path string) (unlock func(), err error) { return flock(path, syscall.LOCK_EX) }

// LockShared takes a shared lock of the file at path (created if
// missing) or fails at once: with ErrLocked when another holds it
// exclusively (Lock). Any number of shared holders coexist; Lock fails
// while one holds it. unlock releases it; the file stays.
func LockShared(path string) (unlock func(), err error) { return flock(path, syscall.LOCK_SH) }

func flock(path string, how int) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
