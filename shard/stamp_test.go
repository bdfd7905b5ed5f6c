//go:build unix

package shard

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/faster-training/faster/source"
)

// ctime is path's status change time.
func ctime(t *testing.T, path string) syscall.Timespec {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ctim
}

// TestPackResumeSeesInPlaceEdit: a source file edited in place between two
// runs, its size kept and its modification time set back, is packed again
// with its new bytes, its shard alone (before: the shard holding the old
// bytes was kept, since the file's size, mtime and name were those it was
// packed with). A rerun with nothing changed keeps every shard.
func TestPackResumeSeesInPlaceEdit(t *testing.T) {
	ctx := context.Background()
	root := makeFolder(t, []string{"a", "b"}, 4)
	src, _ := source.OpenImageFolder(root)
	dst := t.TempDir()
	if _, err := Pack(ctx, src, root, dst, PackOptions{Shards: 2}); err != nil {
		t.Fatal(err)
	}
	if res, err := Pack(ctx, src, root, dst, PackOptions{Shards: 2}); err != nil || res.KeptShards != 2 {
		t.Fatalf("rerun with nothing changed: kept %d of 2 shards, %v", res.KeptShards, err)
	}
	p := filepath.Join(root, "b", "img001.jpg")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	// The edit must come after the file's ctime tick (a coarse clock):
	// touch a probe until its ctime is later. No time is measured.
	probe := filepath.Join(t.TempDir(), "probe")
	for was := ctime(t, p); ; {
		os.WriteFile(probe, nil, 0o644)
		if c := ctime(t, probe); c.Sec > was.Sec || c.Sec == was.Sec && c.Nsec > was.Nsec {
			break
		}
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A byte of the entropy-coded data before the end marker: still a
	// JPEG whose header reads.
	if _, err := f.WriteAt([]byte{0x55}, fi.Size()-3); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if now, _ := os.Stat(p); now.Size() != fi.Size() || !now.ModTime().Equal(fi.ModTime()) {
		t.Fatalf("the edit changed size or mtime: %v %v, was %v %v", now.Size(), now.ModTime(), fi.Size(), fi.ModTime())
	}
	src, _ = source.OpenImageFolder(root)
	res, err := Pack(ctx, src, root, dst, PackOptions{Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.KeptShards != 1 {
		t.Errorf("after the edit: kept %d of 2 shards, want 1", res.KeptShards)
	}
	// The shards are those of a fresh pack of the edited folder.
	fresh := t.TempDir()
	if _, err := Pack(ctx, src, root, fresh, PackOptions{Shards: 2}); err != nil {
		t.Fatal(err)
	}
	mf, _ := LoadManifest(fresh)
	m, _ := LoadManifest(dst)
	for k := range 2 {
		if got, want := m.Splits["train"].Shards[k].SHA256, mf.Splits["train"].Shards[k].SHA256; got != want {
			t.Errorf("shard %d differs from a fresh pack of the edited folder: it holds the old bytes", k)
		}
	}
}
