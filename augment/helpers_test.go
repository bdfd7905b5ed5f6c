package augment

import (
	"image"
	"image/draw"
	_ "image/jpeg"
	_ "image/png"
	"math"
	"os"
	"testing"

	"github.com/faster-training/faster/imgcodec"
)

// loadImage decodes a PNG or JPEG with Go's image package into an
// imgcodec.Image (gray stays gray, everything else becomes RGB).
func loadImage(t testing.TB, path string) *imgcodec.Image {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return decodeStd(t, data)
}

func decodeStd(t testing.TB, data []byte) *imgcodec.Image {
	t.Helper()
	m, _, err := image.Decode(bytesReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return fromStd(m)
}

func fromStd(m image.Image) *imgcodec.Image {
	b := m.Bounds()
	if g, ok := m.(*image.Gray); ok {
		out := NewImage(b.Dx(), b.Dy(), 1)
		for y := 0; y < b.Dy(); y++ {
			copy(out.Pix[y*out.Stride:][:b.Dx()], g.Pix[y*g.Stride:])
		}
		return out
	}
	out := NewImage(b.Dx(), b.Dy(), 3)
	if yc, ok := m.(*image.YCbCr); ok {
		ycbcrToRGB(out, yc)
		return out
	}
	rgba := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(rgba, rgba.Bounds(), m, b.Min, draw.Src)
	for i, j := 0, 0; i < len(out.Pix); i, j = i+3, j+4 {
		out.Pix[i], out.Pix[i+1], out.Pix[i+2] = rgba.Pix[j], rgba.Pix[j+1], rgba.Pix[j+2]
	}
	return out
}

func psnr(a, b *imgcodec.Image) float64 {
	var se float64
	n := 0
	for y := 0; y < a.Height; y++ {
		ra := a.Pix[y*a.Stride:][:a.Width*a.Channels]
		rb := b.Pix[y*b.Stride:][:b.Width*b.Channels]
		for i := range ra {
			d := float64(ra[i]) - float64(rb[i])
			se += d * d
			n++
		}
	}
	if se == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(255*255/(se/float64(n)))
}

func maxDiff(a, b *imgcodec.Image) int {
	m := 0
	for y := 0; y < a.Height; y++ {
		ra := a.Pix[y*a.Stride:][:a.Width*a.Channels]
		rb := b.Pix[y*b.Stride:][:b.Width*b.Channels]
		for i := range ra {
			m = max(m, abs(int(ra[i])-int(rb[i])))
		}
	}
	return m
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// prepareBox is prepare for a whole-box resize (ResizeBox's tables).
func (r *Resizer) prepareBox(dst, src *imgcodec.Image, box Box, f Filter, flip bool) (ylo, yhi int) {
	return r.prepare(dst, src, box, dst.Width, dst.Height, image.Rect(0, 0, dst.Width, dst.Height), f, flip)
}
