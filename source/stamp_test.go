//go:build unix

package source

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestFileStampSeesInPlaceEdit: a file's stamp is stable while it is
// unchanged, and changes with an edit in place that keeps its size and
// sets its modification time back (the ctime moves); IDX's stamp, taken
// at open, follows its files.
func TestFileStampSeesInPlaceEdit(t *testing.T) {
	root := makeTree(t, map[string][]byte{
		"train-images-idx3-ubyte": idxBytes([]int{2, 1, 1}, []byte{7, 8}),
		"train-labels-idx1-ubyte": idxBytes([]int{2}, []byte{1, 2}),
	})
	p := filepath.Join(root, "train-labels-idx1-ubyte")
	before, err := FileStamp(p)
	if err != nil {
		t.Fatal(err)
	}
	d, err := OpenIDX(root, "train")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := FileStamp(p); again != before {
		t.Fatalf("stamp of an unchanged file moved: %s, %s", before, again)
	}
	// After the file's ctime tick (touch a probe until its ctime is
	// later; no time measured), edit a label in place and set the mtime back.
	fi, _ := os.Stat(p)
	var was, probe syscall.Stat_t
	syscall.Stat(p, &was)
	for pp := filepath.Join(t.TempDir(), "probe"); ; {
		os.WriteFile(pp, nil, 0o644)
		syscall.Stat(pp, &probe)
		if probe.Ctim.Sec > was.Ctim.Sec || probe.Ctim.Sec == was.Ctim.Sec && probe.Ctim.Nsec > was.Ctim.Nsec {
			break
		}
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{3}, 9)
	f.Close()
	os.Chtimes(p, fi.ModTime(), fi.ModTime())
	if after, _ := FileStamp(p); after == before {
		t.Fatalf("an in-place edit keeping size and mtime left the stamp %s", after)
	}
	d2, err := OpenIDX(root, "train")
	if err != nil {
		t.Fatal(err)
	}
	s1, _ := d.Stamp(0)
	s2, _ := d2.Stamp(0)
	if s1 == s2 {
		t.Errorf("IDX stamp unchanged by an edit of its labels: %s", s1)
	}
}
