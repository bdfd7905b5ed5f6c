//go:build unix

package shard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// LockName is the lock file a pack holds in its destination.
const LockName = ".faster-pack.lock"

// lockDir takes the destination's pack lock (flock, released when the
// process ends however it ends) or fails at once naming the holder.
func lockDir(dir string) (unlock func(), err error) {
	p := filepath.Join(dir, LockName)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: another faster pack is writing this destination (%s is locked); wait for it to finish", dir, LockName)
		}
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return func() { f.Close() }, nil
}
