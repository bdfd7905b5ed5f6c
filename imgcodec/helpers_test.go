package imgcodec_test

import (
	"bytes"
	"image"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/imgcodec/turbojpeg"

	"github.com/faster-training/faster/internal/testenv"
)

// decoder is one implementation under the conformance suite.
type decoder struct {
	name string
	// minPSNR is the bound against Go's reference decoder on full-size
	// decodes (libjpeg's IDCT and fancy chroma upsampling differ slightly
	// from image/jpeg's).
	minPSNR float64
	decode  func(data []byte, o *imgcodec.DecodeOptions) (*imgcodec.Image, error)
}

// decoders lists the JPEG decoders: imgcodec.Decode (libjpeg-turbo with
// cgo, pure Go without) and the pure-Go decoder called directly.
func decoders() []decoder {
	ds := []decoder{{name: "imgcodec-" + imgcodec.Backend, minPSNR: 40, decode: imgcodec.Decode}}
	if imgcodec.Backend == "pure-go" {
		ds[0].minPSNR = math.Inf(1)
		return ds
	}
	return append(ds, decoder{name: "pure-go", minPSNR: math.Inf(1), decode: pureGo})
}

func pureGo(data []byte, o *imgcodec.DecodeOptions) (*imgcodec.Image, error) {
	if o == nil {
		o = &imgcodec.DecodeOptions{}
	}
	var img *imgcodec.Image
	f, err := turbojpeg.PureGo(data, &turbojpeg.Options{ScaleDenom: o.ScaleDenom, Crop: o.Crop, Gray: o.Gray, MaxPixels: o.MaxPixels, AllowTruncated: o.AllowTruncated},
		func(n int) []byte { img = &imgcodec.Image{Pix: make([]byte, n)}; return img.Pix })
	if err != nil {
		return nil, err
	}
	img.Width, img.Height, img.Channels, img.Stride, img.Warning = f.Width, f.Height, f.Channels, f.Stride, f.Warning
	return img, nil
}

// reference decodes with image/jpeg (or another Go decoder) and converts
// to interleaved RGB or luma with image/color's formulas, independently of
// the code under test.
func reference(t testing.TB, data []byte, gray bool) *imgcodec.Image {
	t.Helper()
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("reference decode: %v", err)
	}
	b := src.Bounds()
	ch := 3
	if gray {
		ch = 1
	}
	out := &imgcodec.Image{Width: b.Dx(), Height: b.Dy(), Channels: ch, Stride: b.Dx() * ch, Pix: make([]byte, b.Dx()*b.Dy()*ch)}
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			var r, g, bl uint8
			c := src.At(b.Min.X+x, b.Min.Y+y)
			switch c := c.(type) {
			case color.YCbCr:
				if gray {
					out.Pix[y*out.Stride+x] = c.Y
					continue
				}
				r, g, bl = color.YCbCrToRGB(c.Y, c.Cb, c.Cr)
			case color.Gray:
				r, g, bl = c.Y, c.Y, c.Y
			case color.CMYK:
				r, g, bl = color.CMYKToRGB(c.C, c.M, c.Y, c.K)
			default:
				n := color.NRGBAModel.Convert(c).(color.NRGBA)
				r, g, bl = n.R, n.G, n.B
			}
			if gray {
				out.Pix[y*out.Stride+x] = uint8((19595*uint32(r) + 38470*uint32(g) + 7471*uint32(bl) + 1<<15) >> 16)
			} else {
				copy(out.Pix[y*out.Stride+3*x:], []byte{r, g, bl})
			}
		}
	}
	return out
}

// psnr compares two images of the same geometry (Inf when equal).
func psnr(t testing.TB, a, b *imgcodec.Image) float64 {
	t.Helper()
	if a.Width != b.Width || a.Height != b.Height || a.Channels != b.Channels {
		t.Fatalf("geometry %dx%dx%d != %dx%dx%d", a.Width, a.Height, a.Channels, b.Width, b.Height, b.Channels)
	}
	var se float64
	for y := 0; y < a.Height; y++ {
		ra, rb := a.Pix[y*a.Stride:][:a.Width*a.Channels], b.Pix[y*b.Stride:][:b.Width*b.Channels]
		for i := range ra {
			d := float64(ra[i]) - float64(rb[i])
			se += d * d
		}
	}
	if se == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(255*255/(se/float64(a.Width*a.Height*a.Channels)))
}

// crop copies a region of img.
func crop(img *imgcodec.Image, r image.Rectangle) *imgcodec.Image {
	out := &imgcodec.Image{Width: r.Dx(), Height: r.Dy(), Channels: img.Channels, Stride: r.Dx() * img.Channels}
	out.Pix = make([]byte, out.Stride*out.Height)
	for y := 0; y < r.Dy(); y++ {
		copy(out.Pix[y*out.Stride:][:out.Stride], img.Pix[(r.Min.Y+y)*img.Stride+r.Min.X*img.Channels:])
	}
	return out
}

// boxScale downscales by d with the edge rule of the decoders' contract.
func boxScale(img *imgcodec.Image, d int) *imgcodec.Image {
	w, h := (img.Width+d-1)/d, (img.Height+d-1)/d
	ch := img.Channels
	out := &imgcodec.Image{Width: w, Height: h, Channels: ch, Stride: w * ch, Pix: make([]byte, w*h*ch)}
	for oy := 0; oy < h; oy++ {
		for ox := 0; ox < w; ox++ {
			for c := 0; c < ch; c++ {
				sum, n := 0, 0
				for y := oy * d; y < min(oy*d+d, img.Height); y++ {
					for x := ox * d; x < min(ox*d+d, img.Width); x++ {
						sum += int(img.Pix[y*img.Stride+x*ch+c])
						n++
					}
				}
				out.Pix[oy*out.Stride+ox*ch+c] = uint8((sum + n/2) / n)
			}
		}
	}
	return out
}

func readGolden(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// photoDir holds real photographs installed by scripts/setup.sh (Debian
// mate-backgrounds).
const photoDir = testenv.PhotoDir

// photos returns the named real photographs, skipping the test when they
// are missing unless FASTER_REQUIRE_DATA=1, which makes it fail.
func photos(t testing.TB, names ...string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(photoDir, n))
		if err != nil {
			testenv.Missing(t, "test photo missing (run scripts/setup.sh): %v", err)
		}
		out[n] = b
	}
	return out
}
