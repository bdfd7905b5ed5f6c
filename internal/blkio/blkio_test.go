package blkio_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/internal/blkio"

	"github.com/faster-training/faster/internal/testenv"
)

// needThrottle skips where the machine offers no throttle, or fails under
// FASTER_REQUIRE_DATA=1 (CI's machines run as root with blkio).
func needThrottle(t *testing.T) {
	t.Helper()
	if err := blkio.Available(); err != nil {
		testenv.Missing(t, "%v", err)
	}
}

// A command started through the group reads from the device inside it:
// the group's counters take every byte of a file read with caches dropped,
// and the limits written are the limits the kernel reports.
func TestGroupCountsReads(t *testing.T) {
	needThrottle(t)
	dir, err := os.MkdirTemp("/var/tmp", "blkio-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	dev, err := blkio.DeviceOf(dir)
	if errors.Is(err, blkio.ErrUnavailable) {
		t.Skip(err) // /var/tmp on tmpfs: no device to throttle
	} else if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "data")
	buf := make([]byte, 8<<20)
	rand.Read(buf)
	if err := os.WriteFile(file, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := blkio.NewGroup(fmt.Sprintf("faster-test-%d", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	lim := blkio.Limits{ReadBPS: 400 << 20, ReadIOPS: 5000}
	if err := g.Limit(dev, lim); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(g.Dir(), "blkio.throttle.read_bps_device")); err == nil {
		if want := fmt.Sprintf("%s %d", dev, lim.ReadBPS); !strings.Contains(string(b), want) {
			t.Errorf("read_bps_device %q, want %q", b, want)
		}
	}
	if err := blkio.DropCaches(); err != nil {
		t.Fatal(err)
	}
	if out, err := g.Command(context.Background(), "cat", file).Output(); err != nil || len(out) != len(buf) {
		t.Fatalf("cat in the group: %d bytes, %v", len(out), err)
	}
	st, err := g.Stats(dev)
	if err != nil {
		t.Fatal(err)
	}
	if st.ReadBytes < int64(len(buf)) || st.Reads == 0 {
		t.Errorf("group read %d bytes in %d requests, want >= %d bytes: the command ran outside the group or the cache was not dropped", st.ReadBytes, st.Reads, len(buf))
	}
	if err := g.Limit(dev, blkio.Limits{}); err != nil {
		t.Fatal(err)
	}
}
