package main

import (
	"bytes"
	"encoding/binary"
	"image"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/image/tiff"

	"github.com/faster-training/faster/shard"
	"github.com/faster-training/faster/tfexample"
	"github.com/faster-training/faster/tfrecord"
)

// The rows of docs/badinput.md about image formats the loader decodes
// since issue 39 item 2 (WebP, BMP, TIFF, PNM): a file of such a format
// that the decoder cannot decode is found by pack's check of each file
// (imgcodec.DecodeConfig, the decoder's own header reader), skipped and
// listed, where before it was stored and failed the epoch later.
func init() {
	badFixtures["tiff-jpeg-compressed"] = badImage("x.tif", func(t *testing.T, p string) { os.WriteFile(p, jpegTIFF(t), 0o644) })
	badFixtures["webp-damaged"] = badImage("x.webp", func(t *testing.T, p string) {
		body := []byte("WEBPVP8 \x10\x00\x00\x00not a vp8 frame!")
		var b bytes.Buffer
		b.WriteString("RIFF")
		binary.Write(&b, binary.LittleEndian, uint32(len(body)))
		b.Write(body)
		os.WriteFile(p, b.Bytes(), 0o644)
	})
	badFixtures["tfrecord-image-undecodable"] = func(t *testing.T) badFixture {
		var b bytes.Buffer
		w := tfrecord.NewWriter(&b)
		for i, name := range []string{"c0/a.tif", "c0/b.tif", "c1/c.tif", "c1/d.tif"} {
			img := jpegTIFF(t)
			if i != 1 {
				var g bytes.Buffer
				tiff.Encode(&g, image.NewRGBA(image.Rect(0, 0, 20, 20)), nil)
				img = g.Bytes()
			}
			ex := tfexample.New().SetBytes(shard.KeyEncoded, img).SetInt64(shard.KeyLabel, int64(i/2)).SetString(shard.KeyFilename, name)
			if err := w.Write(ex.Marshal(nil)); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
		p := filepath.Join(t.TempDir(), "x.tfrecord")
		os.WriteFile(p, b.Bytes(), 0o644)
		return badFixture{data: p, needle: "b.tif"}
	}
	badFixtures["pnm-bad-maxval"] = badImage("x.pgm", func(t *testing.T, p string) {
		os.WriteFile(p, []byte("P5 4 4 0\n0123456789abcdef"), 0o644)
	})
}

// jpegTIFF is a TIFF whose Compression tag says JPEG (7), which the
// decoder (golang.org/x/image/tiff) lacks.
func jpegTIFF(t *testing.T) []byte {
	var b bytes.Buffer
	if err := tiff.Encode(&b, image.NewRGBA(image.Rect(0, 0, 8, 8)), nil); err != nil {
		t.Fatal(err)
	}
	d := b.Bytes()
	off := binary.LittleEndian.Uint32(d[4:])
	for i := 0; i < int(binary.LittleEndian.Uint16(d[off:])); i++ {
		if e := d[int(off)+2+12*i:]; binary.LittleEndian.Uint16(e) == 259 { // Compression
			binary.LittleEndian.PutUint16(e[8:], 7) // JPEG
			return d
		}
	}
	t.Fatal("no Compression tag in x/image/tiff's output")
	return nil
}
