//go:build cgo

package augment

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/faster-training/faster/augment/internal/cref"
	"github.com/faster-training/faster/imgcodec"
)

// resizeC runs the C build of the same kernels on r's tables.
func (r *Resizer) resizeC(dst, src *imgcodec.Image, box Box, f Filter, flip bool) {
	ylo, yhi := r.prepareBox(dst, src, box, f, flip)
	tab := func(c *coeffs) cref.Table {
		return cref.Table{N: c.n, KSize: c.ksize, Start: c.start, Count: c.count, W: c.w}
	}
	rowLen := dst.Width * src.Channels
	if f.pillowKernel() {
		r.tmp8 = grow(r.tmp8, (yhi-ylo)*rowLen)
		cref.Resize(dst.Pix, dst.Stride, dst.Height, src.Pix, src.Stride, src.Channels, tab(&r.h), tab(&r.v),
			ylo, yhi, r.tmp8, nil, triangleBits, 255, triangleBits)
		return
	}
	r.tmp16 = grow(r.tmp16, (yhi-ylo)*rowLen)
	cref.Resize(dst.Pix, dst.Stride, dst.Height, src.Pix, src.Stride, src.Channels, tab(&r.h), tab(&r.v),
		ylo, yhi, nil, r.tmp16, areaHBits-areaFrac, 255<<areaFrac, areaVBits+areaFrac)
}

// TestKernelMatchesC checks that the Go kernels and their C build give the
// same bytes.
func TestKernelMatchesC(t *testing.T) {
	src := loadImage(t, "testdata/photo.png")
	gray := loadImage(t, "testdata/photo_gray.png")
	var r Resizer
	for _, m := range []*imgcodec.Image{src, gray} {
		for _, f := range []Filter{Triangle, Area, Bicubic, Nearest} {
			for _, sz := range [][2]int{{37, 29}, {80, 60}, {224, 200}, {13, 120}} {
				a, c := NewImage(sz[0], sz[1], m.Channels), NewImage(sz[0], sz[1], m.Channels)
				box := Box{2.5, 1, 150, 119.5}
				if err := r.ResizeBox(a, m, box, f, true); err != nil {
					t.Fatal(err)
				}
				r.resizeC(c, m, box, f, true)
				if !bytes.Equal(a.Pix, c.Pix) {
					t.Errorf("%v %v ch=%d: Go and C differ (max %d)", f, sz, m.Channels, maxDiff(a, c))
				}
			}
		}
	}
}

// BenchmarkKernelVsC measures, on the same tables, the Go kernels (go),
// the C build of the same loops (gcc -O3, c) and the SIMD kernels that
// Resizer uses (simd), alternating within each iteration so that all see
// the same machine load. It reports each side's images/s and the speed of
// c and simd as multiples of Go's.
func BenchmarkKernelVsC(b *testing.B) {
	src := benchSource(b)
	for _, f := range []Filter{Triangle, Area, Bicubic, Nearest} {
		for _, c := range kernelCases {
			b.Run(fmt.Sprintf("%v/%s", f, c.name), func(b *testing.B) {
				var r, rg Resizer
				rg.goSrc = true
				dst := NewImage(c.w, c.h, 3)
				b.ReportAllocs()
				var tGo, tC, tSIMD time.Duration
				for b.Loop() {
					t0 := time.Now()
					if err := rg.ResizeBox(dst, src, c.box, f, true); err != nil {
						b.Fatal(err)
					}
					t1 := time.Now()
					r.resizeC(dst, src, c.box, f, true)
					t2 := time.Now()
					if err := r.ResizeBox(dst, src, c.box, f, true); err != nil {
						b.Fatal(err)
					}
					tSIMD += time.Since(t2)
					tC += t2.Sub(t1)
					tGo += t1.Sub(t0)
				}
				b.ReportMetric(float64(b.N)/tGo.Seconds(), "go-images/s")
				b.ReportMetric(float64(b.N)/tC.Seconds(), "c-images/s")
				b.ReportMetric(float64(b.N)/tSIMD.Seconds(), "simd-images/s")
				b.ReportMetric(tGo.Seconds()/tC.Seconds(), "c/go")
				b.ReportMetric(tGo.Seconds()/tSIMD.Seconds(), "simd/go")
			})
		}
	}
}
