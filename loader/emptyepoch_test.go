package loader

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeBadTarGz writes a gzip-compressed WebDataset tar of n samples whose
// image members are not images.
func writeBadTarGz(t *testing.T, n int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bad.tar.gz")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for i := range n {
		for _, m := range []struct{ ext, data string }{{"jpg", "not an image"}, {"cls", "1"}} {
			tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("s%02d.%s", i, m.ext), Mode: 0o644, Size: int64(len(m.data)), Typeflag: tar.TypeReg})
			tw.Write([]byte(m.data))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	f.Close()
	return p
}

// An epoch in which every sample was bad fails under the skip policy,
// naming the first of them, also when the stream's counts are unknown
// (a .tar.gz on one rank: no padding to fill, so no "nothing to repeat";
// issue 41 item 7, before: an empty epoch, no error), and also under
// Exact, where nothing pads the epoch either.
func TestAllBadEpochFails(t *testing.T) {
	p := writeBadTarGz(t, 4)
	for _, o := range []Options{
		{Resolution: 16, Batch: 2, BadData: BadDataPolicy{Skip: true}},
		{Resolution: 16, Batch: 2, BadData: BadDataPolicy{Skip: true}, Shuffle: ShuffleOff},
		{Resolution: 16, Batch: 2, BadData: BadDataPolicy{Skip: true}, Exact: true},
	} {
		l, err := Open(p, o)
		if err != nil {
			t.Fatal(err)
		}
		for e := range 2 { // every epoch, not only the first
			err := epochErr(l, e)
			if err == nil || !strings.Contains(err.Error(), "nothing to serve") || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "not an image") {
				t.Fatalf("%+v epoch %d: %v, want an error naming the first bad sample", o, e, err)
			}
		}
		l.Close()
	}
	// An epoch with one good sample is served.
	folder, _ := makeTree(t, 2)
	l, err := Open(folder, Options{Resolution: 16, Batch: 2, BadData: BadDataPolicy{Skip: true}, Exact: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := epochErr(l, 0); err != nil {
		t.Fatal(err)
	}
}
