package shard

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/faster-training/faster/internal/lockfile"
)

// LockName is the lock file a pack holds in its destination.
const LockName = ".faster-pack.lock"

// lockDir takes the destination's pack lock (internal/lockfile: released
// when the process ends however it ends) or fails at once naming the
// holder.
func lockDir(dir string) (unlock func(), err error) {
	unlock, err = lockfile.Lock(filepath.Join(dir, LockName))
	if errors.Is(err, lockfile.ErrLocked) {
		return nil, fmt.Errorf("%s: another faster pack is writing this destination (%s is locked); wait for it to finish", dir, LockName)
	}
	return unlock, err
}
