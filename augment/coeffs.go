package augment

import "math"

// Fixed-point precisions of the weight tables.
const (
	// triangleBits is Pillow's PRECISION_BITS (32 - 8 - 2) for 8-bit images.
	triangleBits = 22
	// areaHBits and areaVBits are the precisions of the area filter's
	// horizontal and vertical weights; areaFrac is the number of fraction
	// bits kept in its 16-bit intermediate (255<<7 fits in int16).
	areaHBits = 14
	areaFrac  = 7
	areaVBits = 14
)

// coeffs is the weight table of one axis: output i reads count[i] source
// samples from start[i] with weights w[i*ksize:][:count[i]] in fixed point.
type coeffs struct {
	n     int
	ksize int
	start []int32
	count []int32
	w     []int32
	fixed bool      // every count equals ksize (see pad)
	fw    []float64 // scratch
}

func (c *coeffs) reset(n, ksize int) {
	c.n, c.ksize, c.fixed = n, ksize, false
	c.start = grow(c.start, n)
	c.count = grow(c.count, n)
	c.w = grow(c.w, n*ksize)
	clear(c.w)
	c.fw = grow(c.fw, ksize)
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// span returns the first source index used and one past the last.
func (c *coeffs) span() (lo, hi int) {
	lo, hi = math.MaxInt, 0
	for i := 0; i < c.n; i++ {
		s := int(c.start[i])
		lo = min(lo, s)
		hi = max(hi, s+int(c.count[i]))
	}
	return lo, hi
}

// reverse mirrors the table so that output i takes the weights of output
// n-1-i: a horizontal flip of the result at no cost.
func (c *coeffs) reverse() {
	for i, j := 0, c.n-1; i < j; i, j = i+1, j-1 {
		c.start[i], c.start[j] = c.start[j], c.start[i]
		c.count[i], c.count[j] = c.count[j], c.count[i]
		wi := c.w[i*c.ksize : (i+1)*c.ksize]
		wj := c.w[j*c.ksize : (j+1)*c.ksize]
		for k := range wi {
			wi[k], wj[k] = wj[k], wi[k]
		}
	}
}

// triangle fills c like Pillow's precompute_coeffs with the bilinear
// filter (support 1, widened by the downscale factor) and
// normalize_coeffs_8bpc, for the source interval [in0, in1) of an axis of
// inSize samples mapped onto outSize outputs.
func (c *coeffs) triangle(inSize int, in0, in1 float64, outSize int) {
	c.pillow(inSize, in0, in1, outSize, 1, triangleFilter)
}

// bicubic is triangle with Pillow's bicubic filter (support 2, a = -0.5:
// Image.BICUBIC, which torch's antialiased bicubic also follows).
func (c *coeffs) bicubic(inSize int, in0, in1 float64, outSize int) {
	c.pillow(inSize, in0, in1, outSize, 2, bicubicFilter)
}

func triangleFilter(x float64) float64 {
	if x < 0 {
		x = -x
	}
	if x < 1 {
		return 1 - x
	}
	return 0
}

// bicubicFilter is Pillow's bicubic_filter, written in its order of
// operations.
func bicubicFilter(x float64) float64 {
	const a = -0.5
	if x < 0 {
		x = -x
	}
	if x < 1 {
		return ((a+2.0)*x-(a+3.0))*x*x + 1
	}
	if x < 2 {
		return (((x-5)*x+8)*x - 4) * a
	}
	return 0
}

// pillow is Pillow's precompute_coeffs and normalize_coeffs_8bpc for a
// filter of the given support (widened by the downscale factor).
func (c *coeffs) pillow(inSize int, in0, in1 float64, outSize int, fsupport float64, filter func(float64) float64) {
	scale := (in1 - in0) / float64(outSize)
	filterscale := max(scale, 1.0)
	support := fsupport * filterscale
	ksize := int(math.Ceil(support))*2 + 1
	c.reset(outSize, ksize)
	ss := 1.0 / filterscale
	for xx := 0; xx < outSize; xx++ {
		center := in0 + (float64(xx)+0.5)*scale
		xmin := int(center - support + 0.5) // C truncation, as Pillow
		xmin = max(xmin, 0)
		xmax := int(center + support + 0.5)
		xmax = min(xmax, inSize)
		n := max(xmax-xmin, 0)
		n = min(n, ksize)
		fw := c.fw[:n]
		ww := 0.0
		for x := range fw {
			w := filter((float64(x+xmin) - center + 0.5) * ss)
			fw[x] = w
			ww += w
		}
		wi := c.w[xx*ksize : xx*ksize+n]
		for x, w := range fw {
			if ww != 0 {
				w /= ww
			}
			if w < 0 {
				wi[x] = int32(-0.5 + w*(1<<triangleBits))
			} else {
				wi[x] = int32(0.5 + w*(1<<triangleBits))
			}
		}
		c.start[xx] = int32(xmin)
		c.count[xx] = int32(n)
	}
}

// nearest fills c like Pillow's resize with NEAREST, an affine transform
// (ImagingScaleAffine): output x reads the source sample
// trunc(in0 + scale/2 + x*scale), the position accumulated by repeated
// addition as Pillow does, with one weight of 1 in the triangle filter's
// precision (so the triangle kernels copy it exactly).
func (c *coeffs) nearest(inSize int, in0, in1 float64, outSize int) {
	c.reset(outSize, 1)
	a := (in1 - in0) / float64(outSize)
	xo := in0 + a*0.5
	for x := 0; x < outSize; x++ {
		xin := -1
		if xo >= 0 {
			xin = int(xo)
		}
		// Pillow leaves outputs outside the source black; a box within
		// the source never gets there, but stay inside it.
		xin = min(max(xin, 0), inSize-1)
		c.start[x] = int32(xin)
		c.count[x] = 1
		c.w[x] = 1 << triangleBits
		xo += a
	}
}

// window keeps the outputs [lo, hi) of the table, as outputs 0 to hi-lo:
// the part of a larger resize that a crop of its result keeps.
func (c *coeffs) window(lo, hi int) {
	if lo == 0 && hi == c.n {
		return
	}
	ks := c.ksize
	copy(c.start, c.start[lo:hi])
	copy(c.count, c.count[lo:hi])
	copy(c.w, c.w[lo*ks:hi*ks])
	c.n = hi - lo
	c.start, c.count, c.w = c.start[:c.n], c.count[:c.n], c.w[:c.n*ks]
}

// area fills c with OpenCV's INTER_AREA weights for downscaling
// (computeResizeAreaTab: the exact overlap of each output cell with each
// source sample), over the source interval [in0, in1) of an axis of inSize
// samples, quantised to bits with the weights of each output summing to
// exactly 1<<bits.
func (c *coeffs) area(inSize int, in0, in1 float64, outSize int, bits uint) {
	scale := (in1 - in0) / float64(outSize)
	ksize := int(math.Ceil(scale)) + 2
	c.reset(outSize, ksize)
	end := min(in1, float64(inSize))
	last := min(int(math.Ceil(end))-1, inSize-1)
	for dx := 0; dx < outSize; dx++ {
		fsx1 := in0 + float64(dx)*scale
		fsx2 := fsx1 + scale
		cell := min(scale, end-fsx1)
		sx1 := int(math.Ceil(fsx1))
		sx2 := min(int(math.Floor(fsx2)), last)
		sx1 = min(sx1, sx2)
		fw := c.fw[:0]
		first := sx1
		if float64(sx1)-fsx1 > 1e-3 {
			first = sx1 - 1
			fw = append(fw, (float64(sx1)-fsx1)/cell)
		}
		for sx := sx1; sx < sx2; sx++ {
			fw = append(fw, 1/cell)
		}
		if fsx2-float64(sx2) > 1e-3 {
			fw = append(fw, min(min(fsx2-float64(sx2), 1), cell)/cell)
		}
		c.start[dx] = int32(first)
		c.count[dx] = int32(len(fw))
		c.quantise(c.w[dx*ksize:dx*ksize+len(fw)], fw, bits)
	}
}

// areaUp fills c with OpenCV's INTER_AREA rule when enlarging (cv2.resize
// falls back to its linear kernel with these weights): output dx reads
// samples sx and sx+1 (clamped to the border) with weights 1-fx and fx.
// A fractional in0 is truncated: enlarging is not the crop path.
func (c *coeffs) areaUp(inSize int, in0, in1 float64, outSize int, bits uint) {
	invScale := float64(outSize) / (in1 - in0)
	scale := 1 / invScale
	c.reset(outSize, 2)
	base := int(math.Floor(in0))
	for dx := 0; dx < outSize; dx++ {
		sx := int(math.Floor(float64(dx) * scale))
		fx := float64(float32(float64(dx+1) - float64(sx+1)*invScale))
		if fx <= 0 {
			fx = 0
		} else {
			fx -= math.Floor(fx)
		}
		sx += base
		s0, s1 := sx, sx+1
		w0, w1 := 1-fx, fx
		s0 = min(max(s0, 0), inSize-1)
		s1 = min(max(s1, 0), inSize-1)
		fw := c.fw[:2]
		if s0 == s1 {
			fw = fw[:1]
			fw[0] = 1
		} else {
			fw[0], fw[1] = w0, w1
		}
		c.start[dx] = int32(s0)
		c.count[dx] = int32(len(fw))
		c.quantise(c.w[dx*2:dx*2+len(fw)], fw, bits)
	}
}

// quantise rounds the weights fw to fixed point with bits of fraction and
// moves the rounding residue onto the largest weight, so that a flat input
// stays exactly flat.
func (c *coeffs) quantise(dst []int32, fw []float64, bits uint) {
	one := int32(1) << bits
	sum := int32(0)
	big := 0
	for i, w := range fw {
		q := int32(math.Round(w * float64(one)))
		dst[i] = q
		sum += q
		if q > dst[big] {
			big = i
		}
	}
	if len(dst) > 0 {
		dst[big] += one - sum
	}
}

// pad gives every output the same number of taps, the table's largest
// count, so the unrolled kernels apply: short rows get zero weights, and
// rows that would run past the end of the axis start earlier instead. It
// reports false (leaving the table as it was) when the axis is shorter
// than that width.
func (c *coeffs) pad(inSize int) bool {
	kmax := 0
	for _, n := range c.count[:c.n] {
		kmax = max(kmax, int(n))
	}
	if kmax > inSize || kmax == 0 || kmax > 64 {
		return false
	}
	ks := c.ksize
	for i := 0; i < c.n; i++ {
		n, s := int(c.count[i]), int(c.start[i])
		src := c.w[i*ks : i*ks+n]
		dst := c.w[i*kmax : i*kmax+kmax] // i*kmax <= i*ks: moving down is safe in order
		shift := 0
		if s+kmax > inSize {
			shift = s + kmax - inSize
			c.start[i] = int32(s - shift)
		}
		var tmp [64]int32
		if n > len(tmp) {
			return false
		}
		copy(tmp[:n], src)
		clear(dst)
		copy(dst[shift:], tmp[:n])
		c.count[i] = int32(kmax)
	}
	c.ksize = kmax
	return true
}
