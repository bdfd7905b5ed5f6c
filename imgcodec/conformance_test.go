package imgcodec_test

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/faster-training/faster/imgcodec"
)

// goldens are small JPEGs made from a real photograph by testdata/gen.sh:
// every chroma subsampling Go supports, progressive, gray, Adobe RGB, CMYK,
// YCCK, restart markers and a tiny odd-sized image.
var goldens = []string{
	"ycc420.jpg", "ycc444.jpg", "ycc422.jpg", "ycc440.jpg", "ycc411.jpg",
	"progressive.jpg", "gray.jpg", "gray_progressive.jpg", "rgb.jpg",
	"restart.jpg", "tiny.jpg", "cmyk.jpg", "ycck.jpg",
}

// Real photographs: two progressive, one baseline 4:2:0, of 1.3-1.9 Mpixel.
var conformancePhotos = []string{"FreshFlower.jpg", "GreenMeadow.jpg", "Dune.jpg"}

// refCache holds reference decodes of the photographs, shared by the
// decoders under test (the reference is the slow part under -race).
var refCache sync.Map // string -> *imgcodec.Image

func cachedReference(t *testing.T, name string, data []byte, gray bool) *imgcodec.Image {
	key := fmt.Sprint(name, gray, len(data))
	if v, ok := refCache.Load(key); ok {
		return v.(*imgcodec.Image)
	}
	ref := reference(t, data, gray)
	refCache.Store(key, ref)
	return ref
}

func checkAgainstReference(t *testing.T, d decoder, name string, data []byte, minPSNR float64) {
	for _, gray := range []bool{false, true} {
		want := cachedReference(t, name, data, gray)
		img, err := d.decode(data, &imgcodec.DecodeOptions{Gray: gray})
		if err != nil {
			t.Fatalf("%s gray=%v: %v", name, gray, err)
		}
		if img.Warning != nil {
			t.Errorf("%s: unexpected warning %v", name, img.Warning)
		}
		if img.Stride != img.Width*img.Channels || len(img.Pix) != img.Stride*img.Height {
			t.Errorf("%s: stride %d, len %d for %dx%dx%d", name, img.Stride, len(img.Pix), img.Width, img.Height, img.Channels)
		}
		p := psnr(t, img, want)
		if p < minPSNR {
			t.Errorf("%s gray=%v: PSNR %.1f dB against image/jpeg, want >= %.0f", name, gray, p, minPSNR)
		}
		t.Logf("%s gray=%v: %dx%d PSNR %.1f dB", name, gray, img.Width, img.Height, p)
		img.Release()
	}
}

func TestConformanceGolden(t *testing.T) {
	for _, d := range decoders() {
		t.Run(d.name, func(t *testing.T) {
			for _, name := range goldens {
				checkAgainstReference(t, d, name, readGolden(t, name), d.minPSNR)
			}
		})
	}
}

func TestConformancePhotos(t *testing.T) {
	ph := photos(t, conformancePhotos...)
	for _, d := range decoders() {
		t.Run(d.name, func(t *testing.T) {
			for _, name := range conformancePhotos {
				checkAgainstReference(t, d, name, ph[name], d.minPSNR)
			}
		})
	}
}

// Arithmetic coding: libjpeg-turbo decodes it to exactly the pixels of the
// same image Huffman-coded; image/jpeg does not support it.
func TestArithmetic(t *testing.T) {
	huff, err := imgcodec.Decode(readGolden(t, "ycc420.jpg"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range decoders() {
		img, err := d.decode(readGolden(t, "arithmetic.jpg"), nil)
		if d.minPSNR == math.Inf(1) { // pure Go
			if !errors.Is(err, imgcodec.ErrUnsupported) {
				t.Errorf("%s: err %v, want ErrUnsupported", d.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", d.name, err)
		}
		if p := psnr(t, img, huff); !math.IsInf(p, 1) {
			t.Errorf("%s: arithmetic-coded decode differs from Huffman-coded (%.1f dB)", d.name, p)
		}
	}
}

func TestScaledDecode(t *testing.T) {
	inputs := map[string][]byte{}
	for _, n := range []string{"ycc420.jpg", "progressive.jpg", "gray.jpg", "cmyk.jpg", "tiny.jpg", "png_named.JPEG"} {
		inputs[n] = readGolden(t, n)
	}
	for _, d := range decoders() {
		for name, data := range inputs {
			if name == "png_named.JPEG" && d.name == "pure-go" {
				continue
			}
			for _, gray := range []bool{false, true} {
				full := reference(t, data, gray)
				for _, s := range []int{1, 2, 4, 8} {
					img, err := d.decode(data, &imgcodec.DecodeOptions{ScaleDenom: s, Gray: gray})
					if err != nil {
						t.Fatalf("%s %s 1/%d: %v", d.name, name, s, err)
					}
					w, h := (full.Width+s-1)/s, (full.Height+s-1)/s
					if img.Width != w || img.Height != h {
						t.Fatalf("%s %s 1/%d: %dx%d, want %dx%d", d.name, name, s, img.Width, img.Height, w, h)
					}
					// DCT scaling is close to, not equal to, a box filter.
					p := psnr(t, img, boxScale(full, s))
					bound := 30.0
					if d.minPSNR == math.Inf(1) || name == "png_named.JPEG" {
						bound = math.Inf(1)
					}
					if p < bound {
						t.Errorf("%s %s gray=%v 1/%d: PSNR %.1f dB against box-scaled reference, want >= %.0f", d.name, name, gray, s, p, bound)
					}
					img.Release()
				}
			}
		}
	}
}

func TestScaledDecodePhoto(t *testing.T) {
	ph := photos(t, "GreenMeadow.jpg")["GreenMeadow.jpg"]
	full := cachedReference(t, "GreenMeadow.jpg", ph, false)
	for _, d := range decoders() {
		for _, s := range []int{2, 4, 8} {
			img, err := d.decode(ph, &imgcodec.DecodeOptions{ScaleDenom: s})
			if err != nil {
				t.Fatal(err)
			}
			p := psnr(t, img, boxScale(full, s))
			t.Logf("%s 1/%d: %dx%d, PSNR %.1f dB against box-scaled reference", d.name, s, img.Width, img.Height, p)
			if p < 30 {
				t.Errorf("%s 1/%d: PSNR %.1f dB", d.name, s, p)
			}
		}
	}
}

// A cropped decode equals the full decode at the same scale, cropped.
func TestCropDecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, d := range decoders() {
		for _, name := range []string{"ycc420.jpg", "ycc422.jpg", "ycc440.jpg", "ycc411.jpg", "ycc444.jpg", "progressive.jpg", "gray.jpg", "cmyk.jpg", "ycck.jpg", "restart.jpg", "png_named.JPEG"} {
			if name == "png_named.JPEG" && d.name == "pure-go" {
				continue
			}
			data := readGolden(t, name)
			for _, s := range []int{1, 2, 4, 8} {
				for _, gray := range []bool{false, true} {
					full, err := d.decode(data, &imgcodec.DecodeOptions{ScaleDenom: s, Gray: gray})
					if err != nil {
						t.Fatal(err)
					}
					for k := 0; k < 24; k++ {
						x0, y0 := rng.IntN(full.Width), rng.IntN(full.Height)
						r := image.Rect(x0, y0, x0+1+rng.IntN(full.Width-x0), y0+1+rng.IntN(full.Height-y0))
						if k == 0 {
							r = image.Rect(0, full.Height/3, full.Width, full.Height) // full width: direct rows
						}
						img, err := d.decode(data, &imgcodec.DecodeOptions{ScaleDenom: s, Gray: gray, Crop: r})
						if err != nil {
							t.Fatalf("%s %s 1/%d crop %v: %v", d.name, name, s, r, err)
						}
						if p := psnr(t, img, crop(full, r)); !math.IsInf(p, 1) {
							t.Errorf("%s %s 1/%d gray=%v crop %v: differs from full decode cropped (%.1f dB)", d.name, name, s, gray, r, p)
						}
						img.Release()
					}
					full.Release()
				}
			}
		}
	}
}

func TestBadOptions(t *testing.T) {
	data := readGolden(t, "ycc420.jpg") // 317x203
	for _, o := range []imgcodec.DecodeOptions{
		{ScaleDenom: 3},
		{ScaleDenom: -1},
		{Crop: image.Rect(0, 0, 318, 10)},
		{ScaleDenom: 2, Crop: image.Rect(100, 100, 160, 103)}, // scaled is 159x102
		{Crop: image.Rect(-1, 0, 10, 10)},
	} {
		for _, d := range decoders() {
			if _, err := d.decode(data, &o); !errors.Is(err, imgcodec.ErrInvalidOptions) {
				t.Errorf("%s %+v: err %v, want ErrInvalidOptions", d.name, o, err)
			}
		}
	}
}

func TestPNGNamedJPEG(t *testing.T) {
	data := readGolden(t, "png_named.JPEG")
	img, err := imgcodec.Decode(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if img.Width != ref.Bounds().Dx() || img.Height != ref.Bounds().Dy() {
		t.Fatalf("size %dx%d", img.Width, img.Height)
	}
	if p := psnr(t, img, reference(t, data, false)); !math.IsInf(p, 1) {
		t.Errorf("PNG pixels differ (%.1f dB)", p)
	}
	c, err := imgcodec.DecodeConfig(data)
	if err != nil || c.Format != "png" || c.Width != img.Width || c.Components != 3 {
		t.Errorf("DecodeConfig = %+v, %v", c, err)
	}
}

func TestDecodeConfig(t *testing.T) {
	comps := map[string]int{"gray.jpg": 1, "gray_progressive.jpg": 1, "cmyk.jpg": 4, "ycck.jpg": 4}
	for _, name := range goldens {
		data := readGolden(t, name)
		c, err := imgcodec.DecodeConfig(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := 3
		if n, ok := comps[name]; ok {
			want = n
		}
		ref := reference(t, data, false)
		if c.Format != "jpeg" || c.Width != ref.Width || c.Height != ref.Height || c.Components != want {
			t.Errorf("%s: %+v, want %dx%d with %d components", name, c, ref.Width, ref.Height, want)
		}
	}
}

func TestTruncated(t *testing.T) {
	for _, name := range []string{"ycc420.jpg", "progressive.jpg", "gray.jpg", "cmyk.jpg"} {
		data := readGolden(t, name)
		full, err := imgcodec.Decode(data, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, cut := range []int{1, 2, 20, 200, len(data) / 2, len(data) - 2} {
			short := data[:cut]
			for _, d := range decoders() {
				_, err := d.decode(short, nil)
				if !errors.Is(err, imgcodec.ErrTruncated) || !errors.Is(err, imgcodec.ErrCorrupt) {
					t.Errorf("%s %s cut at %d: err %v, want ErrTruncated and ErrCorrupt", d.name, name, cut, err)
				}
				img, err := d.decode(short, &imgcodec.DecodeOptions{AllowTruncated: true})
				if err != nil {
					// The header itself is missing, or (pure Go) the
					// decoder cannot recover: still ErrTruncated.
					if !errors.Is(err, imgcodec.ErrTruncated) {
						t.Errorf("%s %s cut at %d, allowed: err %v", d.name, name, cut, err)
					}
					if cut > 1000 && d.minPSNR != math.Inf(1) {
						t.Errorf("%s %s cut at %d: libjpeg should accept truncated data: %v", d.name, name, cut, err)
					}
					continue
				}
				if !errors.Is(img.Warning, imgcodec.ErrTruncated) {
					t.Errorf("%s %s cut at %d: warning %v, want ErrTruncated", d.name, name, cut, img.Warning)
				}
				if img.Width != full.Width || img.Height != full.Height {
					t.Errorf("%s %s: truncated decode is %dx%d", d.name, name, img.Width, img.Height)
				}
				if cut == len(data)/2 && d.minPSNR != math.Inf(1) && name != "progressive.jpg" {
					// The top rows arrived whole.
					top := image.Rect(0, 0, full.Width, full.Height/5)
					if p := psnr(t, crop(img, top), crop(full, top)); p < 40 {
						t.Errorf("%s %s: top of truncated decode differs (%.1f dB)", d.name, name, p)
					}
				}
			}
		}
	}
}

func TestEmptyAndUnknown(t *testing.T) {
	for _, data := range [][]byte{nil, {}} {
		if _, err := imgcodec.Decode(data, nil); !errors.Is(err, imgcodec.ErrTruncated) {
			t.Errorf("Decode(empty): %v, want ErrTruncated", err)
		}
		if _, err := imgcodec.DecodeConfig(data); !errors.Is(err, imgcodec.ErrTruncated) {
			t.Errorf("DecodeConfig(empty): %v, want ErrTruncated", err)
		}
	}
	for _, data := range [][]byte{[]byte("hello, world"), {0xff, 0xd9}, {0x89, 'P', 'X'}} {
		if _, err := imgcodec.Decode(data, nil); !errors.Is(err, imgcodec.ErrUnknownFormat) {
			t.Errorf("Decode(%q): %v, want ErrUnknownFormat", data, err)
		}
	}
	// Data ending in or right after a signature is truncated.
	for _, s := range []string{"\x89PNG\r\n\x1a\n", "\x89PN", "\xff", "\xff\xd8", "GIF8"} {
		if _, err := imgcodec.Decode([]byte(s), nil); !errors.Is(err, imgcodec.ErrTruncated) {
			t.Errorf("Decode(%q): %v, want ErrTruncated", s, err)
		}
	}
}

func TestCorrupt(t *testing.T) {
	data := readGolden(t, "ycc420.jpg")
	for _, d := range decoders() {
		bad := append([]byte{0xff, 0xd8, 0xff, 0xc0, 0x00, 0x03}, bytes.Repeat([]byte{0x55}, 64)...)
		if _, err := d.decode(bad, nil); !errors.Is(err, imgcodec.ErrCorrupt) {
			t.Errorf("%s: garbage after SOI: %v, want ErrCorrupt", d.name, err)
		}
		var ce *imgcodec.CorruptError
		if _, err := d.decode(append([]byte{}, data[:700]...), nil); !errors.As(err, &ce) {
			t.Errorf("%s: %v is not a *CorruptError", d.name, err)
		}
		// Damaged entropy data: an error that is ErrCorrupt, or an image
		// with a warning; never a crash.
		rng := rand.New(rand.NewPCG(3, 4))
		for k := 0; k < 20; k++ {
			b := append([]byte{}, data...)
			for j := 0; j < 8; j++ {
				b[700+rng.IntN(len(b)-702)] = byte(rng.Uint32())
			}
			img, err := d.decode(b, nil)
			if err != nil {
				if !errors.Is(err, imgcodec.ErrCorrupt) && !errors.Is(err, imgcodec.ErrUnsupported) {
					t.Errorf("%s: damaged data: %v, want ErrCorrupt", d.name, err)
				}
				continue
			}
			if img.Width != 317 || img.Height != 203 {
				t.Errorf("%s: damaged data decoded to %dx%d", d.name, img.Width, img.Height)
			}
		}
	}
}

func TestTooLarge(t *testing.T) {
	data := readGolden(t, "ycc420.jpg")
	for _, d := range decoders() {
		if _, err := d.decode(data, &imgcodec.DecodeOptions{MaxPixels: 317*203 - 1}); !errors.Is(err, imgcodec.ErrTooLarge) {
			t.Errorf("%s: %v, want ErrTooLarge", d.name, err)
		}
		if _, err := d.decode(data, &imgcodec.DecodeOptions{MaxPixels: 317 * 203}); err != nil {
			t.Errorf("%s: at the limit: %v", d.name, err)
		}
		// A header claiming 65535x65535 is refused before any allocation.
		bomb := append([]byte{}, data...)
		i := bytes.Index(bomb, []byte{0xff, 0xc0})
		bomb[i+5], bomb[i+6], bomb[i+7], bomb[i+8] = 0xff, 0xff, 0xff, 0xff
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		if _, err := d.decode(bomb, nil); !errors.Is(err, imgcodec.ErrTooLarge) {
			t.Errorf("%s: bomb: %v, want ErrTooLarge", d.name, err)
		}
		runtime.ReadMemStats(&m1)
		if n := m1.TotalAlloc - m0.TotalAlloc; n > 1<<20 {
			t.Errorf("%s: %d bytes allocated refusing a bomb", d.name, n)
		}
	}
	png := readGolden(t, "png_named.JPEG")
	if _, err := imgcodec.Decode(png, &imgcodec.DecodeOptions{MaxPixels: 100}); !errors.Is(err, imgcodec.ErrTooLarge) {
		t.Errorf("png: %v, want ErrTooLarge", err)
	}
}
