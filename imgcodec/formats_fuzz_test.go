package imgcodec_test

import (
	"bytes"
	"errors"
	"image"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/imgcodec"
)

// FuzzFormats feeds arbitrary bytes behind the signature of each format
// torchvision's ImageFolder lists beside JPEG and PNG (WebP, TIFF, BMP,
// PNM, GIF: sel picks it, so every input reaches that format's reader),
// seeded with testdata/seed_*: no panic, errors of the documented kinds,
// and a decode whose size and pixels agree with DecodeConfig, with Gray
// (the luma of RGB) and with a half-scale crop (the box average).
func FuzzFormats(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "seed*"))
	for _, p := range seeds {
		if strings.HasSuffix(p, ".py") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, sel uint8) {
		// Half the inputs keep their bytes; the rest get a format's
		// signature in place of their first bytes.
		if sel&1 != 0 {
			sig := []string{"RIFF\x00\x00\x00\x00WEBPVP8 ", "II*\x00", "MM\x00*", "BM", "P1 ", "P2 ", "P3 ", "P4 ", "P5 ", "P6 ", "GIF89a"}[int(sel>>1)%11]
			data = append([]byte(sig), data[min(len(sig), len(data)):]...)
		}
		o := &imgcodec.DecodeOptions{MaxPixels: 1 << 20}
		img, err := imgcodec.Decode(data, o)
		if err != nil {
			if !errors.Is(err, imgcodec.ErrCorrupt) && !errors.Is(err, imgcodec.ErrUnsupported) &&
				!errors.Is(err, imgcodec.ErrTooLarge) && !errors.Is(err, imgcodec.ErrUnknownFormat) {
				t.Fatalf("error of no documented kind: %v", err)
			}
			return
		}
		defer img.Release()
		cfg, err := imgcodec.DecodeConfig(data)
		if err != nil || cfg.Width != img.Width || cfg.Height != img.Height || img.Channels != 3 || len(img.Pix) != img.Width*img.Height*3 {
			t.Fatalf("decoded %dx%dx%d (%d bytes), config %+v, %v", img.Width, img.Height, img.Channels, len(img.Pix), cfg, err)
		}
		g, err := imgcodec.Decode(data, &imgcodec.DecodeOptions{MaxPixels: 1 << 20, Gray: true})
		if err != nil {
			t.Fatalf("gray: %v (RGB decoded)", err)
		}
		defer g.Release()
		for i := range img.Width * img.Height {
			if p := img.Pix[3*i:]; g.Pix[i] != luma(p[0], p[1], p[2]) {
				t.Fatalf("gray pixel %d: %d, luma of RGB %d", i, g.Pix[i], luma(p[0], p[1], p[2]))
			}
		}
		sw, sh := (img.Width+1)/2, (img.Height+1)/2
		crop := image.Rect(sw/3, sh/4, sw, sh)
		s, err := imgcodec.Decode(data, &imgcodec.DecodeOptions{MaxPixels: 1 << 20, ScaleDenom: 2, Crop: crop})
		if err != nil {
			t.Fatalf("1/2 crop %v: %v (full decoded)", crop, err)
		}
		defer s.Release()
		full, err := imgcodec.Decode(data, &imgcodec.DecodeOptions{MaxPixels: 1 << 20, ScaleDenom: 2})
		if err != nil {
			t.Fatalf("1/2: %v", err)
		}
		defer full.Release()
		for y := range s.Height {
			a := s.Pix[y*s.Stride:][:s.Stride]
			b := full.Pix[(crop.Min.Y+y)*full.Stride+3*crop.Min.X:][:s.Stride]
			if !bytes.Equal(a, b) {
				t.Fatalf("1/2 crop row %d differs from the 1/2 decode's", y)
			}
		}
	})
}
