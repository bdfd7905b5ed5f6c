package source

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestWDSIndexBounds: a wds2idx index whose members do not fit the tar
// (a huge size, an overflowing end, a wrong sample count) is an index
// fault naming the index, found at open before any member is read (before:
// a huge size reached make in readMember and panicked), and the tar is
// scanned instead.
func TestWDSIndexBounds(t *testing.T) {
	tb := tarBytes(t, "a.png", pngMagic+"a", "a.cls", "1", "b.png", pngMagic+"b")
	for _, tc := range []struct{ name, idx string }{
		{"huge size", "v1.2 1\npng 512 4611686018427387904 a.png\n"},
		{"overflowing end", "v1.2 1\npng 9223372036854775800 100 a.png\n"},
		{"past the end", "v1.2 1\npng 512 5000 a.png\n"},
		{"overlapping members", "v1.2 1\npng 512 9 a.png cls 515 1 a.cls\n"},
		{"fewer samples than the header", "v1.2 3\npng 512 9 a.png\n"},
		{"more samples than the header", "v1.2 1\npng 512 9 a.png\npng 2048 9 b.png\n"},
		{"bad count", "v1.2 -4\npng 512 9 a.png\n"},
		{"offset inside a header", "v1.2 1\npng 100 9 a.png\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "s-00000-of-00001.tar")
			os.WriteFile(p, tb, 0o644)
			ip := WDSIndexName(p)
			os.WriteFile(ip, []byte(tc.idx), 0o644)
			w, err := OpenWDS([]string{p})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if f := w.IndexFaults(); len(f) != 1 || f[0].Path != ip || !strings.Contains(f[0].Reason, "index line") {
				t.Fatalf("want one index fault naming %s and its line, got %+v", ip, f)
			}
			if it := w.Items(); len(it) != 2 || it[0].Key != "a.png" || it[0].Label != 1 {
				t.Fatalf("the scan: %+v", it)
			}
		})
	}
}

// FuzzWDSIndex: whatever a wds2idx index says, it parses to members that
// lie inside the tar, or to a *CorruptError.
func FuzzWDSIndex(f *testing.F) {
	f.Add([]byte("v1.2 2\npng 512 9 a.png cls 1536 1 a.cls\npng 2560 9 b.png\n"), int64(4096))
	f.Add([]byte("v1.0 1\njpg 0 10\n"), int64(10))
	f.Add([]byte("v1.2 1\npng 512 4611686018427387904 a.png\n"), int64(100))
	f.Add([]byte("v1.2 1\npng 9223372036854775800 100 a.png\n"), int64(1<<40))
	f.Fuzz(func(t *testing.T, idx []byte, size int64) {
		size = max(size, 0)
		samples, err := readWDSIndex(bytes.NewReader(idx), "f.idx", "f.tar", size)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("not a corrupt-data error: %v", err)
			}
			return
		}
		var next int64
		for _, s := range samples {
			for _, m := range s.members {
				if m.off < next || m.size < 0 || m.size > size-m.off {
					t.Fatalf("member %+v outside %d bytes (or before %d)", m, size, next)
				}
				next = m.off + m.size
			}
		}
	})
}

// TestOpenFileRefusesNonRegular: only regular files are read as data; a
// FIFO is refused at once (never blocks), as are a directory, a device, a
// dangling symlink, a loop and a file above the cap.
func TestOpenFileRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.JPEG")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	os.Mkdir(filepath.Join(dir, "dir.JPEG"), 0o755)
	os.Symlink(filepath.Join(dir, "missing"), filepath.Join(dir, "dangling.JPEG"))
	os.Symlink("loop.JPEG", filepath.Join(dir, "loop.JPEG"))
	os.Symlink("/dev/zero", filepath.Join(dir, "zero.JPEG"))
	big := filepath.Join(dir, "big.JPEG")
	os.WriteFile(big, nil, 0o644)
	os.Truncate(big, MaxFileSize+1) // sparse
	for _, name := range []string{"pipe.JPEG", "dir.JPEG", "dangling.JPEG", "loop.JPEG", "zero.JPEG", "big.JPEG"} {
		p := filepath.Join(dir, name)
		_, err := ReadFile(p, 0) // a FIFO must not block here
		if !errors.Is(err, ErrBadFile) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: want ErrBadFile naming the file, got %v", name, err)
		}
	}
	ok := filepath.Join(dir, "ok.JPEG")
	os.WriteFile(ok, []byte("abc"), 0o644)
	if b, err := ReadFile(ok, 0); err != nil || string(b) != "abc" {
		t.Fatalf("regular file: %q %v", b, err)
	}
}

// TestWDSHugeLabel: a label of two billion is a bad sample, not a class
// list of two billion names (before: make([]string, label+1) at open).
func TestWDSHugeLabel(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.tar")
	os.WriteFile(p, tarBytes(t, "a.png", pngMagic+"a", "a.cls", hugeLabel, "b.png", pngMagic+"b", "b.cls", "2"), 0o644)
	w, err := OpenWDS([]string{p})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if n := len(w.Classes()); n != 3 {
		t.Fatalf("%d classes, want 3 (labels 0-2)", n)
	}
	if _, err := w.Load(0); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "label") {
		t.Fatalf("sample with label %s: %v", hugeLabel, err)
	}
	if s, err := w.Load(1); err != nil || s.Label != 2 {
		t.Fatalf("good sample: %+v %v", s.Item, err)
	}
}

var hugeLabel = "2000000000"

// TestIDXAllocatesItsSizeOnce: an IDX file (here a gzip of 64 MiB of
// zeros, 64 KiB on disk) costs its size in memory once, not the doubling
// of a growing buffer (before: about twice, which under a memory limit
// killed `faster pack` on a 1 GiB gzip bomb).
func TestIDXAllocatesItsSizeOnce(t *testing.T) {
	const total = 64 << 20
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte{0, 0, 8, 3, 0, 0, 0x04, 0, 0, 0, 0x01, 0, 0, 0, 0x01, 0}) // 1024 x 256 x 256
	zw.Write(make([]byte, total))
	zw.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f, err := ReadIDX(bytes.NewReader(b.Bytes()), "bomb")
	runtime.ReadMemStats(&after)
	if err != nil || len(f.Data) != total {
		t.Fatalf("%v (%d bytes)", err, len(f.Data))
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > total*5/4 {
		t.Fatalf("allocated %d MiB for %d MiB of data", got>>20, total>>20)
	}
}

// TestWDSBadLabels: a negative label, a .cls that is not a number and a
// .json whose label does not parse make their sample bad (before: class 0,
// silently).
func TestWDSBadLabels(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.tar")
	os.WriteFile(p, tarBytes(t,
		"a.png", pngMagic+"a", "a.cls", "-7",
		"b.png", pngMagic+"b", "b.cls", "seven",
		"c.png", pngMagic+"c", "c.json", `{"label": 99999999999999999999}`,
		"d.png", pngMagic+"d", "d.cls", "1"), 0o644)
	w, err := OpenWDS([]string{p})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i, key := range []string{"a", "b", "c"} {
		if _, err := w.Load(i); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "label") {
			t.Errorf("sample %s: want a bad label, got %v", key, err)
		}
	}
	if s, err := w.Load(3); err != nil || s.Label != 1 {
		t.Fatalf("good sample: %+v %v", s.Item, err)
	}
}

// TestWDSIndexSwapped: an index whose member at an offset is another
// member of the same size (two samples' names swapped; a .cls listed as
// .txt) is a wrong index naming its line, never a sample served with
// another's label.
func TestWDSIndexSwapped(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.tar")
	os.WriteFile(p, tarBytes(t, "a.png", pngMagic+"a", "a.cls", "1", "b.png", pngMagic+"b", "b.cls", "2"), 0o644)
	// Members at 512 (a.png), 1536 (a.cls), 2560 (b.png), 3584 (b.cls).
	for _, tc := range []struct{ idx, want string }{
		{"v1.2 2\npng 512 9 b.png cls 1536 1 b.cls\npng 2560 9 a.png cls 3584 1 a.cls\n", "index line 2"},
		{"v1.1 2\npng 512 9 cls 1536 1\npng 2560 9 txt 3584 1\n", "index line 3"},
	} {
		os.WriteFile(WDSIndexName(p), []byte(tc.idx), 0o644)
		w, err := OpenWDS([]string{p})
		if err != nil {
			t.Fatal(err)
		}
		if f := w.IndexFaults(); len(f) != 1 || !strings.Contains(f[0].Reason, tc.want) {
			t.Fatalf("%q: want a fault at %s, got %+v", tc.idx, tc.want, f)
		}
		if it := w.Items(); len(it) != 2 || it[0].Label != 1 || it[1].Label != 2 {
			t.Fatalf("the scan: %+v", it)
		}
		w.Close()
	}
}
