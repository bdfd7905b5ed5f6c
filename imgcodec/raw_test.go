package imgcodec_test

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"testing"

	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/imgcodec/rawpix"
)

// rawOf returns img as a raw-pixel image in the given layout, built by
// hand from the Go image (not by the decoder under test).
func rawOf(img image.Image, layout rawpix.Layout) []byte {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if g, ok := img.(*image.Gray); ok {
		return append(rawpix.Header{Width: w, Height: h, Channels: 1, Layout: layout}.Append(nil), g.Pix...)
	}
	out := rawpix.Header{Width: w, Height: h, Channels: 3, Layout: layout}.Append(nil)
	px := make([]byte, 3*w*h)
	for y := range h {
		for x := range w {
			c := color.RGBAModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.RGBA)
			if layout == rawpix.PlanarBGR {
				px[y*w+x], px[w*h+y*w+x], px[2*w*h+y*w+x] = c.B, c.G, c.R
			} else {
				copy(px[3*(y*w+x):], []byte{c.R, c.G, c.B})
			}
		}
	}
	return append(out, px...)
}

func randomPicture(rng *rand.Rand, w, h int, gray bool) image.Image {
	if gray {
		g := image.NewGray(image.Rect(0, 0, w, h))
		for i := range g.Pix {
			g.Pix[i] = uint8(rng.IntN(256))
		}
		return g
	}
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range m.Pix {
		m.Pix[i] = uint8(rng.IntN(256))
		if i%4 == 3 {
			m.Pix[i] = 255
		}
	}
	return m
}

// TestRawMatchesPNG: a raw-pixel image (interleaved RGB, planar BGR, gray)
// decodes to the bytes a PNG of the same pixels decodes to, for every
// scale, with and without a crop, to RGB and to gray; DecodeConfig agrees.
func TestRawMatchesPNG(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sz := range [][2]int{{1, 1}, {17, 9}, {64, 48}, {93, 131}} {
		for _, gray := range []bool{false, true} {
			pic := randomPicture(rng, sz[0], sz[1], gray)
			var pb bytes.Buffer
			if err := png.Encode(&pb, pic); err != nil {
				t.Fatal(err)
			}
			for _, layout := range []rawpix.Layout{rawpix.Interleaved, rawpix.PlanarBGR} {
				raw := rawOf(pic, layout)
				cfg, err := imgcodec.DecodeConfig(raw)
				if err != nil || cfg.Format != "raw" || cfg.Width != sz[0] || cfg.Height != sz[1] {
					t.Fatalf("config %+v, %v", cfg, err)
				}
				for _, d := range []int{1, 2, 4, 8} {
					sw, sh := (sz[0]+d-1)/d, (sz[1]+d-1)/d
					for _, crop := range []image.Rectangle{{}, image.Rect(sw/3, sh/4, sw, sh-sh/5)} {
						if crop.Empty() != (crop == image.Rectangle{}) {
							continue // too small to crop
						}
						for _, toGray := range []bool{false, true} {
							o := imgcodec.DecodeOptions{ScaleDenom: d, Crop: crop, Gray: toGray}
							want, err := imgcodec.Decode(pb.Bytes(), &o)
							if err != nil {
								t.Fatal(err)
							}
							got, err := imgcodec.Decode(raw, &o)
							if err != nil {
								t.Fatalf("%v layout %d %+v: %v", sz, layout, o, err)
							}
							if got.Width != want.Width || got.Height != want.Height || got.Channels != want.Channels || !bytes.Equal(got.Pix, want.Pix) {
								t.Fatalf("%v gray %v layout %d %+v: raw decodes to %dx%dx%d, PNG to %dx%dx%d, or the pixels differ",
									sz, gray, layout, o, got.Width, got.Height, got.Channels, want.Width, want.Height, want.Channels)
							}
							got.Release()
							want.Release()
						}
					}
				}
			}
		}
	}
}

// TestRawBadData: damaged raw-pixel images are errors of the documented
// kinds, never a panic.
func TestRawBadData(t *testing.T) {
	good := rawOf(randomPicture(rand.New(rand.NewPCG(3, 4)), 5, 4, false), rawpix.PlanarBGR)
	mod := func(i int, v byte) []byte { b := bytes.Clone(good); b[i] = v; return b }
	for _, c := range []struct {
		name string
		data []byte
		want error
	}{
		{"magic only", good[:8], imgcodec.ErrTruncated},
		{"magic cut", good[:5], imgcodec.ErrTruncated},
		{"pixels cut", good[:len(good)-1], imgcodec.ErrTruncated},
		{"trailing byte", append(bytes.Clone(good), 0), imgcodec.ErrCorrupt},
		{"zero width", mod(8, 0), imgcodec.ErrCorrupt},
		{"4 channels", mod(16, 4), imgcodec.ErrCorrupt},
		{"layout 2", mod(17, 2), imgcodec.ErrCorrupt},
		{"reserved", mod(19, 1), imgcodec.ErrCorrupt},
	} {
		_, err := imgcodec.Decode(c.data, nil)
		_, cerr := imgcodec.DecodeConfig(c.data)
		if !errors.Is(err, c.want) || !errors.Is(cerr, c.want) {
			t.Errorf("%s: decode %v, config %v; want %v", c.name, err, cerr, c.want)
		}
	}
	big := rawpix.Header{Width: 1 << 15, Height: 1 << 15, Channels: 1}.Append(nil)
	if _, err := imgcodec.Decode(big, &imgcodec.DecodeOptions{MaxPixels: 1 << 20}); !errors.Is(err, imgcodec.ErrCorrupt) {
		t.Errorf("header announcing 1 GiB with no pixels: %v", err)
	}
}
