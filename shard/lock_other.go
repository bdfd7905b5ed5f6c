//go:build !unix

package shard

// LockName is the lock file a pack holds in its destination.
const LockName = ".faster-pack.lock"

// lockDir does not lock where flock is missing.
func lockDir(string) (func(), error) { return func() {}, nil }
