//go:build unix

package storage

import (
	"bytes"
	"io"
	"os"
	"syscall"
	"testing"
)

// The cache's own files are read by the data-file rules: a FIFO, or an
// oversized .meta, where an entry's files belong is no entry (removed and
// fetched again), never a read that blocks or runs out of memory. Before,
// os.ReadFile / os.Open of a FIFO there blocked the load for ever.
func TestCacheFilesAreRegular(t *testing.T) {
	ctx := testCtx(t)
	root := t.TempDir()
	fs := fixtures()
	writeFixtures(t, root, fs)
	s, err := Open(ctx, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := OpenCache(t.TempDir(), 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	f := fs[1] // dir/b.bin
	key := c.key(s, f.name)
	read := func(what string) {
		t.Helper()
		cf, err := c.Open(ctx, s, f.name, Want{Size: int64(len(f.data))})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		got, err := io.ReadAll(cf)
		cf.Close()
		if err != nil || !bytes.Equal(got, f.data) {
			t.Fatalf("%s: %d bytes (%v), want the object's %d", what, len(got), err, len(f.data))
		}
	}
	if err := syscall.Mkfifo(c.metaPath(key), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	read("a FIFO as the entry's .meta")
	os.Remove(c.dataPath(key))
	if err := syscall.Mkfifo(c.dataPath(key), 0o644); err != nil {
		t.Fatal(err)
	}
	read("a FIFO as the entry's data")
	if st, err := os.Stat(c.dataPath(key)); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("the entry's data after the refetch: %v, %v", st, err)
	}
	if err := os.WriteFile(c.metaPath(key), bytes.Repeat([]byte(" "), maxMetaBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	read("an oversized .meta")
	if got := c.Stats().Refetches.Load(); got != 3 {
		t.Fatalf("%d refetches, want 3", got)
	}
}
