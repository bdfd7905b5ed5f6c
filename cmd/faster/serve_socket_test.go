//go:build unix

package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `serve --socket` makes its socket 0600 whatever the umask (before: under
// umask 002 it was group-writable, and a group member could take the only
// session), leaves no temporary behind, removes the socket once a consumer
// connected, and never replaces something already at the path.
func TestServeSocketPrivate(t *testing.T) {
	old := syscall.Umask(0o002)
	defer syscall.Umask(old)
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	done := make(chan error, 1)
	go func() {
		c, err := serveConn(context.Background(), serveOptions{socket: sock, fd: -1})
		if c != nil {
			c.Close()
		}
		done <- err
	}()
	var st os.FileInfo
	for {
		var err error
		if st, err = os.Lstat(sock); err == nil {
			break
		}
		select { // poll until the socket is there, however long a busy machine takes
		case err := <-done:
			t.Fatalf("serve returned before its socket appeared: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	if st.Mode().Type() != os.ModeSocket || st.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v under umask 002, want a socket of 0600", st.Mode())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries beside the socket: %v", len(ents)-1, ents)
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("socket left after the consumer connected: %v", err)
	}

	// A file at the path is refused, naming it, and kept.
	os.WriteFile(sock, []byte("keep"), 0o644)
	if _, err := serveConn(context.Background(), serveOptions{socket: sock, fd: -1}); err == nil || !strings.Contains(err.Error(), sock) || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a file at --socket: %v", err)
	}
	if b, _ := os.ReadFile(sock); string(b) != "keep" {
		t.Errorf("the file at --socket now holds %q", b)
	}
	long := filepath.Join(dir, strings.Repeat("x", 120))
	if _, err := serveConn(context.Background(), serveOptions{socket: long, fd: -1}); err == nil || !strings.Contains(err.Error(), "above the 107") {
		t.Errorf("a socket path of %d bytes: %v", len(long), err)
	}
}
