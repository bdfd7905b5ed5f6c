package augment

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/faster-training/faster/augment/internal/simd"
	"github.com/faster-training/faster/imgcodec"
)

// simdExpected reports whether this build should resize with the SIMD
// kernels (cgo on x86).
func simdExpected() bool {
	return cgoEnabled && (runtime.GOARCH == "amd64" || runtime.GOARCH == "386")
}

// TestSIMDMatchesGo resizes random images, boxes, sizes, filters, flips
// and channel counts with the SIMD kernels (AVX2 and SSSE3 builds, as far
// as the CPU has them) and with the Go kernels and demands the same bytes,
// including the untouched bytes between rows of the destination.
func TestSIMDMatchesGo(t *testing.T) {
	for _, level := range []int{2, 1} {
		t.Run(fmt.Sprintf("level=%d", level), func(t *testing.T) {
			simd.SetLevel(level)
			defer simd.SetLevel(2)
			testSIMDMatchesGo(t, uint64(level))
		})
	}
}

func testSIMDMatchesGo(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(1, seed))
	n := 3000
	if testing.Short() {
		n = 300
	}
	var fast, ref Resizer
	ref.goSrc = true
	ran := 0
	for i := range n {
		src := randomImage(rng)
		box := randomBox(rng, src)
		w, h := randomOutSize(rng, box)
		f := Filter(rng.IntN(4))
		flip := rng.IntN(2) == 0
		pad := rng.IntN(3) * 7
		a := &imgcodec.Image{Width: w, Height: h, Channels: src.Channels, Stride: w*src.Channels + pad}
		a.Pix = make([]uint8, (h-1)*a.Stride+w*src.Channels)
		for k := range a.Pix {
			a.Pix[k] = uint8(k * 31)
		}
		b := &imgcodec.Image{Width: w, Height: h, Channels: src.Channels, Stride: a.Stride, Pix: bytes.Clone(a.Pix)}
		if err := ref.ResizeBox(a, src, box, f, flip); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		ylo, yhi := fast.prepareBox(b, src, box, f, flip)
		if fast.resizeSIMD(b, src, f, ylo, yhi) {
			ran++
		} else if err := fast.ResizeBox(b, src, box, f, flip); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if !bytes.Equal(a.Pix, b.Pix) {
			t.Fatalf("case %d: %v %dx%dx%d stride %d box %v -> %dx%d flip=%v: SIMD and Go differ (max %d)",
				i, f, src.Width, src.Height, src.Channels, src.Stride, box, w, h, flip, maxDiff(a, b))
		}
	}
	t.Logf("%d of %d cases ran the SIMD kernels", ran, n)
	if simdExpected() && ran != n {
		t.Errorf("SIMD kernels ran %d of %d cases, want all", ran, n)
	}
}

// randomImage is a source of random size, channels, stride and content
// (noise, flat black or white, or stripes), whose Pix ends exactly after
// its last pixel so that reads past it would be caught by the bounds of
// the slice... or the race detector's and the page's.
func randomImage(rng *rand.Rand) *imgcodec.Image {
	w, h := 1+rng.IntN(200), 1+rng.IntN(120)
	if rng.IntN(8) == 0 {
		w = 1 + rng.IntN(1200) // big reductions: wide kernels, unpadded tables
	}
	ch := 3
	if rng.IntN(3) == 0 {
		ch = 1
	}
	stride := w*ch + rng.IntN(2)*rng.IntN(9)
	m := &imgcodec.Image{Width: w, Height: h, Channels: ch, Stride: stride, Pix: make([]uint8, (h-1)*stride+w*ch)}
	switch rng.IntN(4) {
	case 0:
		for i := range m.Pix {
			m.Pix[i] = 255
		}
	case 1:
		for i := range m.Pix {
			m.Pix[i] = uint8(255 * ((i / 3) & 1))
		}
	default:
		for i := range m.Pix {
			m.Pix[i] = uint8(rng.Uint32())
		}
	}
	return m
}

func randomBox(rng *rand.Rand, m *imgcodec.Image) Box {
	W, H := float64(m.Width), float64(m.Height)
	if rng.IntN(4) == 0 {
		return Box{0, 0, W, H}
	}
	x0, y0 := rng.Float64()*W*0.5, rng.Float64()*H*0.5
	if rng.IntN(2) == 0 {
		x0, y0 = float64(int(x0)), float64(int(y0))
	}
	x1 := x0 + (W-x0)*(0.2+0.8*rng.Float64())
	y1 := y0 + (H-y0)*(0.2+0.8*rng.Float64())
	return Box{x0, y0, min(x1, W), min(y1, H)}
}

func randomOutSize(rng *rand.Rand, b Box) (w, h int) {
	fw, fh := rng.Float64()*1.3, rng.Float64()*1.3 // mostly reductions, some enlargements
	if rng.IntN(10) == 0 {
		fw, fh = rng.Float64()*0.05, rng.Float64()*0.05
	}
	return max(1, int(b.Dx()*fw)), max(1, int(b.Dy()*fh))
}

// TestSIMDKernelsUsed checks that the benchmark shapes take the SIMD path
// where it exists, and allocate nothing in steady state.
func TestSIMDKernelsUsed(t *testing.T) {
	src := NewImage(500, 375, 3)
	for i := range src.Pix {
		src.Pix[i] = uint8(i * 7)
	}
	var r Resizer
	for _, f := range []Filter{Triangle, Area, Bicubic, Nearest} {
		for _, c := range kernelCases {
			dst := NewImage(c.w, c.h, 3)
			ylo, yhi := r.prepareBox(dst, src, c.box, f, true)
			if got := r.resizeSIMD(dst, src, f, ylo, yhi); got != simdExpected() {
				t.Errorf("%v/%s: SIMD path ran: %v, want %v", f, c.name, got, simdExpected())
			}
			allocs := testing.AllocsPerRun(20, func() {
				if err := r.ResizeBox(dst, src, c.box, f, true); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%v/%s: %v allocations per resize, want 0", f, c.name, allocs)
			}
		}
	}
}
