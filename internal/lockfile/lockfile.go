// Package lockfile holds a lock on a file that tells one writer of a
// destination from another: `faster pack` locks its destination folder,
// `faster train --checkpoint` its checkpoint. The lock is flock(2) on a
// file that stays in place (removing it would let a third process lock a
// new file while a second still holds the old one); the kernel releases it
// when the holder ends, however it ends, so a killed writer leaves no stale
// lock. Where flock is missing (not unix) Lock locks nothing.
package lockfile

import "errors"

// ErrLocked is Lock's error when another open file holds the lock (another
// process, or another Lock in this one). Callers say who holds it.
var ErrLocked = errors.New("locked by another writer")
