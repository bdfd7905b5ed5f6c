package shard

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/image/tiff"

	"github.com/faster-training/faster/tfexample"
	"github.com/faster-training/faster/tfrecord"
)

// undecodableTIFF is a valid TIFF whose Compression tag says JPEG (7),
// which the loader's decoder (golang.org/x/image/tiff) lacks.
func undecodableTIFF(t *testing.T) []byte {
	var b bytes.Buffer
	if err := tiff.Encode(&b, image.NewRGBA(image.Rect(0, 0, 8, 8)), nil); err != nil {
		t.Fatal(err)
	}
	d := b.Bytes()
	off := binary.LittleEndian.Uint32(d[4:])
	for i := 0; i < int(binary.LittleEndian.Uint16(d[off:])); i++ {
		if e := d[int(off)+2+12*i:]; binary.LittleEndian.Uint16(e) == 259 {
			binary.LittleEndian.PutUint16(e[8:], 7)
			return d
		}
	}
	t.Fatal("no Compression tag")
	return nil
}

func goodPNG(t *testing.T) []byte {
	var b bytes.Buffer
	png.Encode(&b, image.NewGray(image.Rect(0, 0, 4, 4)))
	return b.Bytes()
}

// TestVerifyFindsUndecodableImages: verify reads each stored image's
// header with the loader's decoder, in TFRecord records and WebDataset
// members, and reports one it cannot decode at its offset, naming the
// sample (issue 39 item 2; before: 0 problems, and the epoch failed
// later). Good images beside it are not reported.
func TestVerifyFindsUndecodableImages(t *testing.T) {
	bad, good := undecodableTIFF(t), goodPNG(t)
	dir := t.TempDir()

	var rb bytes.Buffer
	w := tfrecord.NewWriter(&rb)
	var offs []int64
	for i, img := range [][]byte{good, bad, good} {
		offs = append(offs, w.Offset())
		name := []string{"c0/a.png", "c0/b.tif", "c0/c.png"}[i]
		ex := tfexample.New().SetBytes(KeyEncoded, img).SetInt64(KeyLabel, 0).SetString(KeyFilename, name)
		if err := w.Write(ex.Marshal(nil)); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	rp := filepath.Join(dir, "x.tfrecord")
	os.WriteFile(rp, rb.Bytes(), 0o644)

	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	var badOff int64
	for _, m := range []struct {
		name string
		data []byte
	}{{"a.png", good}, {"a.cls", []byte("0")}, {"b.tif", bad}, {"b.cls", []byte("1")}} {
		tw.WriteHeader(&tar.Header{Name: m.name, Mode: 0o644, Size: int64(len(m.data)), Typeflag: tar.TypeReg})
		tw.Flush()
		if m.name == "b.tif" {
			badOff = int64(tb.Len())
		}
		tw.Write(m.data)
	}
	tw.Close()
	tp := filepath.Join(dir, "x.tar")
	os.WriteFile(tp, tb.Bytes(), 0o644)

	for _, c := range []struct {
		path, name string
		off        int64
	}{{rp, "c0/b.tif", offs[1]}, {tp, "b.tif", badOff}} {
		rep, err := Verify(context.Background(), []string{c.path}, VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Problems) != 1 {
			t.Fatalf("%s: problems %+v, want one naming %s", c.path, rep.Problems, c.name)
		}
		p := rep.Problems[0]
		if p.Path != c.path || p.Offset != c.off || !strings.Contains(p.Reason, c.name) || !strings.Contains(p.Reason, "compression 7") {
			t.Fatalf("%s: %+v, want the offset %d and %s's compression named", c.path, p, c.off, c.name)
		}
	}
}
