package kernels

import (
	"fmt"
	"image"
	"math"

	"github.com/faster-training/faster/augment"
)

// NDesc is the int64s of one image's descriptor (resize.cu's NDESC).
const NDesc = 10

// Prec is the fixed-point precision of the weights (Pillow's
// PRECISION_BITS for 8-bit images, resize.cu's PREC).
const Prec = 22

// Image is one picture's resample in a batch: the region Box of the
// decoded W×H picture at byte offset Src of the source memory (Stride
// bytes a row, Ch channels interleaved), resized to FullW×FullH, of which
// View is kept (the batch's output size), mirrored when Flip, into the
// row at element offset Dst of the destination.
type Image struct {
	Src          int64
	W, H, Stride int
	Box          augment.Box
	FullW, FullH int
	View         image.Rectangle
	Flip         bool
	Filter       augment.Filter
	Dst          int64
}

// Batch is a batch described for the kernels: the descriptors, the
// weight tables, and the scratch the horizontal pass needs.
type Batch struct {
	Desc           []int64
	Tab            []int32
	TmpBytes       int64
	OutW, OutH, Ch int
}

// Plan builds the tables and descriptors of imgs, each resampled to an
// outW×outH view with ch channels, as augment.Resizer.ResizeView would
// (bilinear, bicubic or nearest: the loader's interpolations).
func Plan(imgs []Image, outW, outH, ch int) (*Batch, error) {
	b := &Batch{OutW: outW, OutH: outH, Ch: ch}
	for i, m := range imgs {
		if m.View.Dx() != outW || m.View.Dy() != outH || !m.View.In(image.Rect(0, 0, m.FullW, m.FullH)) {
			return nil, fmt.Errorf("image %d: view %v of a %dx%d resize, want %dx%d", i, m.View, m.FullW, m.FullH, outW, outH)
		}
		bx := m.Box
		if !(bx.X0 >= 0 && bx.Y0 >= 0 && bx.X1 <= float64(m.W) && bx.Y1 <= float64(m.H) && bx.X0 < bx.X1 && bx.Y0 < bx.Y1) || m.Stride < m.W*ch {
			return nil, fmt.Errorf("image %d: box %v of a %dx%d picture (stride %d)", i, bx, m.W, m.H, m.Stride)
		}
		var h, v axis
		switch m.Filter {
		case augment.Triangle:
			h.pillow(m.W, bx.X0, bx.X1, m.FullW, 1, triangle)
			v.pillow(m.H, bx.Y0, bx.Y1, m.FullH, 1, triangle)
		case augment.Bicubic:
			h.pillow(m.W, bx.X0, bx.X1, m.FullW, 2, bicubic)
			v.pillow(m.H, bx.Y0, bx.Y1, m.FullH, 2, bicubic)
		case augment.Nearest:
			h.nearest(m.W, bx.X0, bx.X1, m.FullW)
			v.nearest(m.H, bx.Y0, bx.Y1, m.FullH)
		default:
			return nil, fmt.Errorf("image %d: filter %v: the GPU decode resamples bilinear, bicubic or nearest", i, m.Filter)
		}
		h.window(m.View.Min.X, m.View.Max.X)
		v.window(m.View.Min.Y, m.View.Max.Y)
		if m.Flip {
			h.reverse()
		}
		ylo, yhi := v.span()
		hoff := int64(len(b.Tab))
		b.Tab = h.append(b.Tab)
		voff := int64(len(b.Tab))
		b.Tab = v.append(b.Tab)
		b.Desc = append(b.Desc, m.Src, int64(m.Stride), int64(ylo), int64(yhi-ylo), b.TmpBytes,
			hoff, int64(h.k), voff, int64(v.k), m.Dst)
		b.TmpBytes += int64(yhi-ylo) * int64(outW*ch)
	}
	return b, nil
}

// NormLUT is the float32 of every (channel, value): (v/255 - mean) / std,
// rounded as augment.NewNormalizer rounds it (resize_v_f32's table).
func NormLUT(mean, std [3]float32) []float32 {
	lut := make([]float32, 3*256)
	for c := range 3 {
		for v := range 256 {
			x := float32(v) / 255
			x -= mean[c]
			lut[c*256+v] = x / std[c]
		}
	}
	return lut
}

// axis is one axis's weight table: output i reads count[i] samples from
// start[i] with weights w[i*k:][:count[i]].
type axis struct {
	n, k         int
	start, count []int32
	w            []int32
}

func triangle(x float64) float64 {
	x = math.Abs(x)
	if x < 1 {
		return 1 - x
	}
	return 0
}

// bicubic is Pillow's bicubic_filter (a = -0.5), in its order of operations.
func bicubic(x float64) float64 {
	const a = -0.5
	x = math.Abs(x)
	if x < 1 {
		return ((a+2.0)*x-(a+3.0))*x*x + 1
	}
	if x < 2 {
		return (((x-5)*x+8)*x - 4) * a
	}
	return 0
}

// pillow is Pillow's precompute_coeffs and normalize_coeffs_8bpc for the
// source interval [in0, in1) of an axis of inSize samples onto outSize
// outputs, the filter's support widened by the downscale factor.
func (a *axis) pillow(inSize int, in0, in1 float64, outSize int, fsupport float64, filter func(float64) float64) {
	scale := (in1 - in0) / float64(outSize)
	filterscale := max(scale, 1.0)
	support := fsupport * filterscale
	ksize := int(math.Ceil(support))*2 + 1
	a.n, a.k = outSize, ksize
	a.start, a.count, a.w = make([]int32, outSize), make([]int32, outSize), make([]int32, outSize*ksize)
	fw := make([]float64, ksize)
	ss := 1.0 / filterscale
	for xx := range outSize {
		center := in0 + (float64(xx)+0.5)*scale
		xmin := max(int(center-support+0.5), 0) // C's truncation, as Pillow
		xmax := min(int(center+support+0.5), inSize)
		n := min(max(xmax-xmin, 0), ksize)
		ww := 0.0
		for x := range n {
			w := filter((float64(x+xmin) - center + 0.5) * ss)
			fw[x] = w
			ww += w
		}
		for x := range n {
			w := fw[x]
			if ww != 0 {
				w /= ww
			}
			if w < 0 {
				a.w[xx*ksize+x] = int32(-0.5 + w*(1<<Prec))
			} else {
				a.w[xx*ksize+x] = int32(0.5 + w*(1<<Prec))
			}
		}
		a.start[xx], a.count[xx] = int32(xmin), int32(n)
	}
}

// nearest is Pillow's NEAREST resize (an affine transform: output x reads
// trunc(in0 + scale/2 + x*scale), accumulated by repeated addition), one
// tap of weight 1.
func (a *axis) nearest(inSize int, in0, in1 float64, outSize int) {
	a.n, a.k = outSize, 1
	a.start, a.count, a.w = make([]int32, outSize), make([]int32, outSize), make([]int32, outSize)
	s := (in1 - in0) / float64(outSize)
	xo := in0 + s*0.5
	for x := range outSize {
		xin := -1
		if xo >= 0 {
			xin = int(xo)
		}
		a.start[x] = int32(min(max(xin, 0), inSize-1))
		a.count[x], a.w[x] = 1, 1<<Prec
		xo += s
	}
}

// window keeps outputs [lo, hi) as outputs 0 to hi-lo.
func (a *axis) window(lo, hi int) {
	a.start, a.count = a.start[lo:hi], a.count[lo:hi]
	a.w = a.w[lo*a.k : hi*a.k]
	a.n = hi - lo
}

// reverse mirrors the table: output i takes output n-1-i's weights.
func (a *axis) reverse() {
	for i, j := 0, a.n-1; i < j; i, j = i+1, j-1 {
		a.start[i], a.start[j] = a.start[j], a.start[i]
		a.count[i], a.count[j] = a.count[j], a.count[i]
		for k := range a.k {
			a.w[i*a.k+k], a.w[j*a.k+k] = a.w[j*a.k+k], a.w[i*a.k+k]
		}
	}
}

// span is the first source sample read and one past the last.
func (a *axis) span() (lo, hi int) {
	lo, hi = math.MaxInt, 0
	for i := range a.n {
		lo = min(lo, int(a.start[i]))
		hi = max(hi, int(a.start[i]+a.count[i]))
	}
	return lo, hi
}

// append adds the table in resize.cu's layout: start, count, w.
func (a *axis) append(t []int32) []int32 {
	t = append(t, a.start...)
	t = append(t, a.count...)
	return append(t, a.w...)
}
