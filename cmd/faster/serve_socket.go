package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
)

// maxSocketPath is the longest Unix socket path the kernel takes
// (sun_path holds 108 bytes with the terminating NUL).
const maxSocketPath = 107

// listenPrivate listens on a Unix socket at path that only this user can
// connect to, whatever the umask (under umask 002 a socket made in place
// is group-writable, and a group member could take the only session): it
// is bound in a fresh 0700 folder beside path, made 0600 there, and only
// then linked to path — never reachable by another user, not for a moment.
// Something already at path (a live or stale socket, a file) is an error
// naming it, never replaced. The listener does not remove path on Close:
// the caller removes it.
func listenPrivate(path string) (*net.UnixListener, error) {
	if len(path) > maxSocketPath {
		return nil, usagef("--socket %s: %d bytes, above the %d a Unix socket path may have", path, len(path), maxSocketPath)
	}
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("--socket %s: already exists (a socket of another serve, or left by one that was killed: remove it)", path)
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
			return nil, fmt.Errorf("--socket %s: %w", path, err)
		}
	}
	defer os.Remove(tmp)
	sock := filepath.Join(tmp, "s")
	if len(sock) > maxSocketPath {
		return nil, usagef("--socket %s: too long to bind privately beside it (%s is %d bytes, above %d): use a shorter path", path, sock, len(sock), maxSocketPath)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("--socket %s: %w", path, err)
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
			return nil, fmt.Errorf("--socket %s: already exists (a socket of another serve, or left by one that was killed: remove it)", path)
		}
		return nil, fmt.Errorf("--socket %s: %w", path, err)
	}
	return ln, nil
}
