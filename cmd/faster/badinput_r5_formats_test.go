package main

import (
	"bytes"
	"encoding/binary"
	"image"
	"os"
	"testing"

	"golang.org/x/image/tiff"
)

// The rows of docs/badinput.md about image formats the loader decodes
// since issue 39 item 2 (WebP, BMP, TIFF, PNM): a file of such a format
// that the decoder cannot decode is found by pack's check of each file
// (imgcodec.DecodeConfig, the decoder's own header reader), skipped and
// listed, where before it was stored and failed the epoch later.
func init() {
	badFixtures["tiff-jpeg-compressed"] = badImage("x.tif", func(t *testing.T, p string) {
		var b bytes.Buffer
		if err := tiff.Encode(&b, image.NewRGBA(image.Rect(0, 0, 8, 8)), nil); err != nil {
			t.Fatal(err)
		}
		d := b.Bytes()
		off := binary.LittleEndian.Uint32(d[4:])
		n := int(binary.LittleEndian.Uint16(d[off:]))
		patched := false
		for i := 0; i < n; i++ {
			e := d[int(off)+2+12*i:]
			if binary.LittleEndian.Uint16(e) == 259 { // Compression
				binary.LittleEndian.PutUint16(e[8:], 7) // JPEG
				patched = true
			}
		}
		if !patched {
			t.Fatal("no Compression tag in x/image/tiff's output")
		}
		os.WriteFile(p, d, 0o644)
	})
	badFixtures["webp-damaged"] = badImage("x.webp", func(t *testing.T, p string) {
		body := []byte("WEBPVP8 \x10\x00\x00\x00not a vp8 frame!")
		var b bytes.Buffer
		b.WriteString("RIFF")
		binary.Write(&b, binary.LittleEndian, uint32(len(body)))
		b.Write(body)
		os.WriteFile(p, b.Bytes(), 0o644)
	})
	badFixtures["pnm-bad-maxval"] = badImage("x.pgm", func(t *testing.T, p string) {
		os.WriteFile(p, []byte("P5 4 4 0\n0123456789abcdef"), 0o644)
	})
}
