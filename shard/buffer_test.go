package shard

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/faster-training/faster/source"
)

// Records are read into pooled buffers (Record.Buf) that the consumer
// releases after use; releasing each record before reading the next must
// not change what the next holds, streamed or indexed, and Data must lie
// in its Buf.
func TestRecordBuffersReleased(t *testing.T) {
	root, dst := packFolder(t, 12)
	check := func(how string, r source.Record) {
		t.Helper()
		want, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(r.Key)))
		if err != nil {
			t.Fatalf("%s: record %q: %v", how, r.Key, err)
		}
		if !bytes.Equal(r.Data, want) {
			t.Fatalf("%s: record %q: %d bytes differ from the file's %d", how, r.Key, len(r.Data), len(want))
		}
		if r.Buf == nil {
			t.Fatalf("%s: record %q has no pooled buffer", how, r.Key)
		}
		base, d := uintptr(unsafe.Pointer(unsafe.SliceData(r.Buf.B))), uintptr(unsafe.Pointer(unsafe.SliceData(r.Data)))
		if d < base || d+uintptr(len(r.Data)) > base+uintptr(cap(r.Buf.B)) {
			t.Fatalf("%s: record %q: Data does not lie in Buf", how, r.Key)
		}
		r.Buf.Release()
	}
	ds, err := Open(context.Background(), dst, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	st := ds.(source.Streaming)
	n := 0
	for i := range st.Files() {
		rd, err := st.Open(context.Background(), i)
		if err != nil {
			t.Fatal(err)
		}
		for {
			r, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			check("streamed", r)
			n++
		}
		rd.Close()
	}
	if n != 24 {
		t.Fatalf("streamed %d records, want 24", n)
	}
	ix, err := Open(context.Background(), dst, OpenOptions{GlobalShuffle: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	idx := ix.(source.Indexed)
	for i := range idx.Len() {
		r, err := idx.Record(i)
		if err != nil {
			t.Fatal(err)
		}
		check("indexed", r)
	}
	src, err := source.OpenImageFolder(root)
	if err != nil {
		t.Fatal(err)
	}
	for i := range src.Len() {
		r, err := src.Record(i)
		if err != nil {
			continue // broken.jpg is read as it is; only the decoder judges it
		}
		if r.Buf == nil {
			t.Fatalf("ImageFolder record %q has no pooled buffer", r.Key)
		}
		r.Buf.Release()
	}
}
