//go:build !unix

package lockfile

// Lock locks nothing where flock is missing.
func Lock(string) (func(), error) { return func() {}, nil }

// LockShared locks nothing where flock is missing.
func LockShared(string) (func(), error) { return func() {}, nil }
