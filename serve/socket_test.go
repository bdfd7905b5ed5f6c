//go:build unix

package serve

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// AcceptOne's socket is 0600 whatever the umask, leaves no temporary
// behind, is removed once a consumer connected, and never replaces
// something already at the path; a path too long to bind is a
// *SocketError marked Long (moved here from cmd/faster, whose
// TestServeSocketPrivate runs it through serve --socket).
func TestAcceptOnePrivate(t *testing.T) {
	old := syscall.Umask(0o002)
	defer syscall.Umask(old)
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	done := make(chan error, 1)
	go func() {
		c, err := AcceptOne(context.Background(), sock)
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
			t.Fatalf("AcceptOne returned before its socket appeared: %v", err)
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

	os.WriteFile(sock, []byte("keep"), 0o644)
	var se *SocketError
	if _, err := AcceptOne(context.Background(), sock); !errors.As(err, &se) || se.Long || err.Error() != sock+": "+errExists.Error() {
		t.Errorf("a file at the path: %v", err)
	}
	if b, _ := os.ReadFile(sock); string(b) != "keep" {
		t.Errorf("the file at the path now holds %q", b)
	}
	long := filepath.Join(dir, strings.Repeat("x", 120))
	if _, err := AcceptOne(context.Background(), long); !errors.As(err, &se) || !se.Long || !strings.Contains(err.Error(), "above the 107") {
		t.Errorf("a socket path of %d bytes: %v", len(long), err)
	}
	// A socket path short enough, in a folder too deep to bind beside it.
	deep := filepath.Join(dir, strings.Repeat("d", MaxSocketPath-len(dir)-4))
	if err := os.Mkdir(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := AcceptOne(context.Background(), filepath.Join(deep, "s")); !errors.As(err, &se) || !se.Long || !strings.Contains(err.Error(), "too long to bind privately") {
		t.Errorf("a path too deep to bind beside: %v", err)
	}
	// An interrupt while waiting ends it.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if _, err := os.Lstat(sock + "2"); err == nil {
				cancel()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	if _, err := AcceptOne(ctx, sock+"2"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
	if _, err := os.Lstat(sock + "2"); !os.IsNotExist(err) {
		t.Errorf("socket left after the interrupt: %v", err)
	}
}
