package shard

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/faster-training/faster/internal/lockfile"
)

// LockName is the lock file a pack holds in its destination.
const LockName = ".faster-pack.lock"

// lockDir takes the destination's pack lock exclusively (a one-machine
// pack, a merge: internal/lockfile, released when the process ends
// however it ends) or fails at once naming the holder.
func lockDir(dir string) (unlock func(), err error) {
	return lockDirWith(dir, lockfile.Lock)
}

// lockDirShared takes the destination's pack lock shared, as a task pack
// does: tasks run at once into one destination (each holds its own task
// lock too), while a one-machine pack or a merge, which remove or write
// what every task shares, wait for them all.
func lockDirShared(dir string) (unlock func(), err error) {
	return lockDirWith(dir, lockfile.LockShared)
}

func lockDirWith(dir string, lock func(string) (func(), error)) (unlock func(), err error) {
	unlock, err = lock(filepath.Join(dir, LockName))
	if errors.Is(err, lockfile.ErrLocked) {
		return nil, fmt.Errorf("%s: another faster pack is writing this destination (%s is locked); wait for it to finish", dir, LockName)
	}
	return unlock, err
}
