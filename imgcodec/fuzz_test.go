package imgcodec_test

import (
	"errors"
	"image"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/imgcodec/jpegtest"
	"github.com/faster-training/faster/imgcodec/rawpix"
)

// FuzzDecode feeds arbitrary bytes to Decode (libjpeg-turbo with cgo) and,
// for JPEG data, to the pure-Go decoder: no crash, no panic, errors of the
// documented kinds, and output geometry consistent with DecodeConfig and
// the options. The seed corpus is the golden files, raw-pixel images
// (package rawpix), a small file of each other format torchvision's
// ImageFolder lists (testdata/seed_*, written by seeds.py: WebP lossy and
// lossless, TIFF, BMP, PPM/PGM/PBM, GIF, 16-bit PNG) plus testdata/fuzz.
func FuzzDecode(f *testing.F) {
	entries, _ := os.ReadDir("testdata")
	for _, e := range entries {
		if n := e.Name(); filepath.Ext(n) == ".jpg" || filepath.Ext(n) == ".JPEG" || strings.HasPrefix(n, "seed") && !strings.HasSuffix(n, ".py") {
			b, err := os.ReadFile(filepath.Join("testdata", n))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b, uint8(0))
		}
	}
	// Scan bombs (jpegtest): at MaxScanPasses passes over the blocks, one
	// scan past, and 999 scans.
	for _, c := range [][3]int{{1, 62}, {1, 63}, {3, 995}} {
		f.Add(jpegtest.Progressive(24, 16, c[0], c[1]), uint8(c[1]))
	}
	// Raw-pixel images (package rawpix), each layout and channel count.
	rng := rand.New(rand.NewPCG(5, 6))
	for i, l := range []rawpix.Layout{rawpix.Interleaved, rawpix.PlanarBGR} {
		f.Add(rawOf(randomPicture(rng, 7+i, 5, false), l), uint8(17+i))
		f.Add(rawOf(randomPicture(rng, 6, 9-i, true), l), uint8(2+i))
	}
	f.Fuzz(func(t *testing.T, data []byte, sel uint8) {
		o := imgcodec.DecodeOptions{
			ScaleDenom:     1 << (sel & 3),
			Gray:           sel&4 != 0,
			AllowTruncated: sel&8 != 0,
			MaxPixels:      1 << 22, // keep each input fast
		}
		cfg, cerr := imgcodec.DecodeConfig(data)
		if sel&16 != 0 && cerr == nil {
			sw, sh := (cfg.Width+o.ScaleDenom-1)/o.ScaleDenom, (cfg.Height+o.ScaleDenom-1)/o.ScaleDenom
			o.Crop = image.Rect(sw/3, sh/4, sw-sw/5, sh)
		}
		decs := []decoder{{name: "imgcodec", decode: imgcodec.Decode}}
		if cerr == nil && cfg.Format == "jpeg" && imgcodec.Backend != "pure-go" {
			decs = append(decs, decoder{name: "pure-go", decode: pureGo})
		}
		for _, d := range decs {
			img, err := d.decode(data, &o)
			if err != nil {
				if !errors.Is(err, imgcodec.ErrCorrupt) && !errors.Is(err, imgcodec.ErrUnsupported) &&
					!errors.Is(err, imgcodec.ErrTooLarge) && !errors.Is(err, imgcodec.ErrUnknownFormat) &&
					!errors.Is(err, imgcodec.ErrInvalidOptions) {
					t.Fatalf("%s: error of no documented kind: %v", d.name, err)
				}
				continue
			}
			ch := 3
			if o.Gray {
				ch = 1
			}
			if img.Channels != ch || img.Stride != img.Width*ch || len(img.Pix) != img.Stride*img.Height || img.Width <= 0 || img.Height <= 0 {
				t.Fatalf("%s: inconsistent image %dx%dx%d stride %d len %d", d.name, img.Width, img.Height, img.Channels, img.Stride, len(img.Pix))
			}
			if cerr == nil {
				w, h := (cfg.Width+o.ScaleDenom-1)/o.ScaleDenom, (cfg.Height+o.ScaleDenom-1)/o.ScaleDenom
				if !o.Crop.Empty() {
					w, h = o.Crop.Dx(), o.Crop.Dy()
				}
				if img.Width != w || img.Height != h {
					t.Fatalf("%s: decoded %dx%d, config %dx%d scale 1/%d crop %v says %dx%d", d.name, img.Width, img.Height, cfg.Width, cfg.Height, o.ScaleDenom, o.Crop, w, h)
				}
			}
			img.Release()
		}
		// The planar path (libjpeg raw data): same error kinds, planes
		// consistent with the header.
		p, err := imgcodec.DecodeJPEG420(data, &imgcodec.DecodeOptions{ScaleDenom: o.ScaleDenom, MaxPixels: o.MaxPixels})
		if err != nil {
			if !errors.Is(err, imgcodec.ErrCorrupt) && !errors.Is(err, imgcodec.ErrUnsupported) &&
				!errors.Is(err, imgcodec.ErrTooLarge) && !errors.Is(err, imgcodec.ErrInvalidOptions) {
				t.Fatalf("planar: error of no documented kind: %v", err)
			}
			return
		}
		if cerr != nil || p.Y.Width != cfg.Width || p.Y.Height != cfg.Height || p.Cb.Width < (cfg.Width+1)/2 ||
			p.Cb.Height < (cfg.Height+1)/2 || len(p.Cr.Pix) < (p.Cr.Height-1)*p.Cr.Stride+p.Cr.Width {
			t.Fatalf("planar: planes %dx%d, %dx%d for config %+v (%v)", p.Y.Width, p.Y.Height, p.Cb.Width, p.Cb.Height, cfg, cerr)
		}
		p.Release()
	})
}
