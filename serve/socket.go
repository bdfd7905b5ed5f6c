package serve

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
)

// MaxSocketPath is the longest Unix socket path the kernel takes
// (sun_path holds 108 bytes with the terminating NUL).
const MaxSocketPath = 107

// SocketError is a socket path that could not be listened on, and why.
// Long: the path is too long to bind (the caller's mistake, not the
// system's).
type SocketError struct {
	Path string
	Long bool
	Err  error
}

func (e *SocketError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *SocketError) Unwrap() error { return e.Err }

// errExists is a path taken already: never replaced.
var errExists = errors.New("already exists (a socket of another serve, or left by one that was killed: remove it)")

// ListenPrivate listens on a Unix socket at path that only this user can
// connect to, whatever the umask (under umask 002 a socket made in place
// is group-writable, and a group member could take the only session): it
// is bound in a fresh 0700 folder beside path, made 0600 there, and only
// then linked to path — never reachable by another user, not for a moment.
// Something already at path (a live or stale socket, a file) is an error
// naming it, never replaced. The listener does not remove path on Close:
// the caller removes it. Every error is a *SocketError.
func ListenPrivate(path string) (*net.UnixListener, error) {
	fail := func(err error) (*net.UnixListener, error) { return nil, &SocketError{Path: path, Err: err} }
	if len(path) > MaxSocketPath {
		return nil, &SocketError{path, true, fmt.Errorf("%d bytes, above the %d a Unix socket path may have", len(path), MaxSocketPath)}
	}
	if _, err := os.Lstat(path); err == nil {
		return fail(errExists)
	}
	dir := filepath.Dir(path)
	var tmp string
	for i := 0; ; i++ {
		tmp = filepath.Join(dir, fmt.Sprintf(".fs%04x", rand.IntN(1<<16)))
		err := os.Mkdir(tmp, 0o700)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || i == 100 {
			return fail(err)
		}
	}
	defer os.Remove(tmp)
	sock := filepath.Join(tmp, "s")
	if len(sock) > MaxSocketPath {
		return nil, &SocketError{path, true, fmt.Errorf("too long to bind privately beside it (%s is %d bytes, above %d): use a shorter path", sock, len(sock), MaxSocketPath)}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return fail(err)
	}
	ln.SetUnlinkOnClose(false)
	defer os.Remove(sock)
	err = os.Chmod(sock, 0o600)
	if err == nil {
		err = os.Link(sock, path) // fails if path exists: never replaces
	}
	if err != nil {
		ln.Close()
		if errors.Is(err, fs.ErrExist) {
			return fail(errExists)
		}
		return fail(err)
	}
	return ln, nil
}

// AcceptOne listens privately on path (ListenPrivate) and returns the
// first connection, removing path once it is accepted, or when ctx ends
// first (then ctx's error, or context.Canceled).
func AcceptOne(ctx context.Context, path string) (net.Conn, error) {
	ln, err := ListenPrivate(path) // 0600 whatever the umask
	if err != nil {
		return nil, err
	}
	defer func() { ln.Close(); os.Remove(path) }()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	c, err := ln.Accept()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, net.ErrClosed) {
			return nil, context.Canceled
		}
		return nil, err
	}
	return c, nil
}
