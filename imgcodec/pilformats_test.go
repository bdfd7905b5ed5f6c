package imgcodec_test

import (
	"bytes"
	"fmt"
	"image"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/internal/testenv"
)

// pilFile is one image written by testdata/pilformats.py and its pixels as
// PIL's Image.open(p).convert("RGB") gives them (torchvision's ImageFolder
// loader).
type pilFile struct {
	path string
	w, h int
	rgb  []byte
}

// pilFormats writes every format torchvision's ImageFolder lists (WebP
// lossy and lossless, BMP, TIFF, PPM/PGM/PBM binary and ASCII with several
// maxvals, GIF, 16-bit and alpha PNG), made from real photographs, with
// PIL's pixels of each.
func pilFormats(t *testing.T) []pilFile {
	t.Helper()
	py := testenv.PythonWith(t, "PIL", "numpy")
	photos := testenv.Photos(t, 3)[:3]
	dir := t.TempDir()
	args := append([]string{filepath.Join("testdata", "pilformats.py"), dir}, photos...)
	if b, err := exec.Command(py, args...).CombinedOutput(); err != nil {
		t.Fatalf("pilformats.py: %v\n%s", err, b)
	}
	rgbs, _ := filepath.Glob(filepath.Join(dir, "*.rgb"))
	slices.Sort(rgbs)
	var fs []pilFile
	for _, r := range rgbs {
		b, err := os.ReadFile(r)
		if err != nil {
			t.Fatal(err)
		}
		var f pilFile
		nl := bytes.IndexByte(b, '\n')
		if _, err := fmt.Sscanf(string(b[:nl]), "%d %d", &f.w, &f.h); err != nil || nl < 0 {
			t.Fatalf("%s: bad header: %v", r, err)
		}
		f.path, f.rgb = strings.TrimSuffix(r, ".rgb"), b[nl+1:]
		fs = append(fs, f)
	}
	if len(fs) < 100 {
		t.Fatalf("pilformats.py wrote %d images, want 114", len(fs))
	}
	return fs
}

// Every format torchvision's ImageFolder lists decodes to PIL's pixels
// (issue 39 item 2; before: "unknown image format" for WebP, BMP, TIFF and
// PNM, 16-bit gray PNGs scaled where PIL clips, a GIF's transparent
// index black): exactly, lossy WebP too (libwebp's fancy chroma
// upsampling and its YUV-to-RGB arithmetic, redone in Go over x/image/vp8's
// exact planes).
// DecodeConfig gives the size, Gray gives the luma of those pixels, and
// ScaleDenom 2 with a crop gives the box average of them.
func TestDecodeMatchesPIL(t *testing.T) {
	for _, f := range pilFormats(t) {
		name := filepath.Base(f.path)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f.path)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := imgcodec.DecodeConfig(data)
			if err != nil {
				t.Fatalf("DecodeConfig: %v", err)
			}
			if cfg.Width != f.w || cfg.Height != f.h {
				t.Fatalf("DecodeConfig: %dx%d, PIL %dx%d", cfg.Width, cfg.Height, f.w, f.h)
			}
			img, err := imgcodec.Decode(data, nil)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			defer img.Release()
			if img.Width != f.w || img.Height != f.h || img.Channels != 3 {
				t.Fatalf("decoded %dx%dx%d, PIL %dx%dx3", img.Width, img.Height, img.Channels, f.w, f.h)
			}
			const tol = 0
			worst, n, at := 0, 0, -1
			for i, v := range img.Pix {
				if d := absDiff(v, f.rgb[i]); d > 0 {
					n++
					if d > worst {
						worst, at = d, i
					}
				}
			}
			if worst > tol {
				t.Fatalf("%d of %d values differ from PIL's, worst by %d at pixel (%d,%d) (got %d, PIL %d); tolerance %d",
					n, len(img.Pix), worst, at/3%f.w, at/3/f.w, img.Pix[at], f.rgb[at], tol)
			}
			// Gray is the luma of the RGB pixels.
			g, err := imgcodec.Decode(data, &imgcodec.DecodeOptions{Gray: true})
			if err != nil {
				t.Fatalf("Decode gray: %v", err)
			}
			defer g.Release()
			for i := range f.w * f.h {
				p := img.Pix[3*i:]
				if want := luma(p[0], p[1], p[2]); g.Pix[i] != want {
					t.Fatalf("gray pixel %d: %d, luma of the RGB decode %d", i, g.Pix[i], want)
				}
			}
			// Half scale and a crop: the box average of the full decode.
			sw, sh := (f.w+1)/2, (f.h+1)/2
			crop := image.Rect(sw/4, sh/3, sw-1, sh)
			s, err := imgcodec.Decode(data, &imgcodec.DecodeOptions{ScaleDenom: 2, Crop: crop})
			if err != nil {
				t.Fatalf("Decode 1/2: %v", err)
			}
			defer s.Release()
			if s.Width != crop.Dx() || s.Height != crop.Dy() {
				t.Fatalf("1/2 crop %v: %dx%d", crop, s.Width, s.Height)
			}
			for y := range s.Height {
				for x := range s.Width {
					for c := range 3 {
						sum, k := 0, 0
						for dy := range 2 {
							for dx := range 2 {
								if X, Y := 2*(crop.Min.X+x)+dx, 2*(crop.Min.Y+y)+dy; X < f.w && Y < f.h {
									sum += int(img.Pix[(Y*f.w+X)*3+c])
									k++
								}
							}
						}
						if want := (sum + k/2) / k; int(s.Pix[y*s.Stride+3*x+c]) != want {
							t.Fatalf("1/2 crop pixel (%d,%d)[%d]: %d, box of the full decode %d", x, y, c, s.Pix[y*s.Stride+3*x+c], want)
						}
					}
				}
			}
		})
	}
}

func absDiff(a, b uint8) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}

// luma is BT.601 luma with libjpeg's and image/color's 16-bit weights.
func luma(r, g, b uint8) uint8 {
	return uint8((19595*uint32(r) + 38470*uint32(g) + 7471*uint32(b) + 1<<15) >> 16)
}
