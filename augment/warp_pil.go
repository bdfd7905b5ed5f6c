package augment

import (
	"fmt"
	"math"
	"strconv"

	"github.com/faster-training/faster/augment/internal/simd"
	"github.com/faster-training/faster/imgcodec"
)

// The bicubic warps are PIL's: torchvision 0.14 warps bicubic on PIL
// images only (its tensor rotate and affine raise "Interpolation mode
// 'bicubic' is unsupported with Tensor input"), through Image.rotate and
// Image.transform(AFFINE, BICUBIC). With WarpBicubic, Rotate, Affine and
// ApplyAugOp take that path whole: torchvision's matrices for PIL images
// (the centre in pixels, Image.rotate's own matrix), PIL's sampling
// (libImaging/Geometry.c: ImagingGenericTransform with the bicubic
// filter) and PIL's fill (every pixel whose sampling position falls
// outside the picture takes the fill, no blending). So do the bilinear
// warps of ops on PIL images (WarpBilinearPIL: a recipe's ops before its
// PILToTensor or ToTensor, other than AugMix, which torchvision runs on a
// tensor of the picture), with PIL's bilinear filter.

// degToRad and radToDeg are CPython's math.radians and math.degrees
// factors, pi/180 and 180/pi rounded from the float64 pi (a variable: Go
// would fold a constant expression exactly).
var (
	pilPi    = math.Pi
	degToRad = pilPi / 180
	radToDeg = 180 / pilPi
)

// PILAffineMatrix is the matrix torchvision's affine hands PIL's
// Image.transform: _get_inverse_affine_matrix about center in pixel
// coordinates ((0, 0) the top-left corner; nil: the picture's centre,
// width/2, height/2), in Python's float64 order. It maps an output
// position (x + 0.5, y + 0.5) to the source position it samples:
// [a, b, c, d, e, f] with x' = a x + b y + c, y' = d x + e y + f.
func PILAffineMatrix(w, h int, center *[2]float64, angle float64, translate [2]float64, scale float64, shear [2]float64) [6]float64 {
	cx, cy := float64(w)*0.5, float64(h)*0.5
	if center != nil {
		cx, cy = center[0], center[1]
	}
	rot := angle * degToRad
	sx, sy := shear[0]*degToRad, shear[1]*degToRad
	tx, ty := translate[0], translate[1]
	cosRS, sinRS, cosSY, tanSX := pilCos(rot-sy), pilSin(rot-sy), pilCos(sy), pilTan(sx)
	a := cosRS / cosSY
	b := float64(-cosRS*tanSX)/cosSY - pilSin(rot)
	c := sinRS / cosSY
	d := float64(-sinRS*tanSX)/cosSY + pilCos(rot)
	m := [6]float64{d, -b, 0, -c, a, 0}
	for i := range m {
		m[i] /= scale
	}
	// The explicit conversions keep each product rounded (no fused
	// multiply-add), as CPython computes it.
	m[2] += float64(m[0]*(-cx-tx)) + float64(m[1]*(-cy-ty))
	m[5] += float64(m[3]*(-cx-tx)) + float64(m[4]*(-cy-ty))
	m[2] += cx
	m[5] += cy
	return m
}

// PILRotateMatrix is the matrix PIL's Image.rotate(angle, center=center)
// hands Image.transform (expand=False, no translation): the angle taken
// modulo 360 as Python does, its cosine and sine rounded to 15 decimals,
// about center (nil: width/2, height/2).
func PILRotateMatrix(w, h int, angle float64, center *[2]float64) [6]float64 {
	cx, cy := float64(w)/2, float64(h)/2
	if center != nil {
		cx, cy = center[0], center[1]
	}
	// Python's float %: fmod, then the divisor's sign.
	a := math.Mod(angle, 360)
	if a < 0 {
		a += 360
	}
	if a == 0 {
		a = 0 // +0, as Python's
	}
	a = -(a * degToRad)
	cos, sin := round15(pilCos(a)), round15(pilSin(a))
	m := [6]float64{cos, sin, 0, round15(-pilSin(a)), cos, 0}
	x, y := -cx, -cy
	m[2] = float64(m[0]*x) + float64(m[1]*y) + m[2]
	m[5] = float64(m[3]*x) + float64(m[4]*y) + m[5]
	m[2] += cx
	m[5] += cy
	return m
}

// round15 is Python's round(x, 15): the float64 nearest the decimal
// rounding of x to 15 places.
func round15(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 15, 64), 64)
	return v
}

// WarpPIL resamples m in place through mat (from PILAffineMatrix or
// PILRotateMatrix) as PIL's Image.transform(AFFINE, BICUBIC) does on an
// RGB or L picture: output pixel (x, y) samples the source at mat applied
// to (x + 0.5, y + 0.5); a position outside [0, width) x [0, height)
// takes the fill (PIL's fillcolor: int of each value; nil is black), any
// other the bicubic of PIL's transform filter (a = -1, its taps clamped to
// the picture's edges, computed in float64 in PIL's order, truncated to a
// byte).
func (s *Scratch) WarpPIL(m *imgcodec.Image, mat [6]float64, fill []float64) error {
	return s.warpPIL(m, mat, WarpBicubic, fill)
}

// WarpPILBilinear is WarpPIL with PIL's bilinear transform filter
// (Image.transform(AFFINE, BILINEAR), Image.rotate(BILINEAR)): the 2x2
// taps around the position, their columns and first row clamped to the
// picture, the second row the first where it falls below the picture,
// each row's blend a + (b - a) dx, then the rows' in dy, in float64 in
// PIL's order, truncated to a byte.
func (s *Scratch) WarpPILBilinear(m *imgcodec.Image, mat [6]float64, fill []float64) error {
	return s.warpPIL(m, mat, WarpBilinearPIL, fill)
}

// warpPIL is WarpPIL with interp's filter (WarpBicubic or WarpBilinearPIL).
func (s *Scratch) warpPIL(m *imgcodec.Image, mat [6]float64, interp Interp, fill []float64) error {
	if err := checkImage(m); err != nil {
		return err
	}
	if !interp.onPIL() {
		return fmt.Errorf("augment: WarpPIL filters bicubic, bilinear or nearest (PIL), not %v", interp)
	}
	bilinear := interp == WarpBilinearPIL
	w, h, ch := m.Width, m.Height, m.Channels
	rowLen := w * ch
	s.src = packRows(s.src, m, rowLen*h+4) // 4 bytes for the SIMD kernel's last gather
	src := s.src[:rowLen*h]
	var fillb [3]uint8
	if fill != nil {
		if len(fill) != 1 && len(fill) != ch {
			return fmt.Errorf("augment: %d fill values for %d channels", len(fill), ch)
		}
		for c := range ch {
			fillb[c] = uint8(int(fill[min(c, len(fill)-1)])) // PIL's int(fill)
		}
	}
	if interp == WarpNearestPIL {
		s.slow = nearestPIL(m, src, mat, fillb[:ch], s.slow)
		return nil
	}
	a0, a1, a2, a3, a4, a5 := mat[0], mat[1], mat[2], mat[3], mat[4], mat[5]
	fw, fh := float64(w), float64(h)
	simdRows := bilinear && ch == 3 && pilFast && warpSIMD
	if simdRows {
		s.fillPIL = fillb // in the Scratch: a pointer to a local would escape
		s.slow = grow(s.slow, w)
	}
	for y := 0; y < h; y++ {
		yin := float64(y) + 0.5
		rowX, rowY := float64(a1*yin), float64(a4*yin)
		out := m.Pix[y*m.Stride:][:rowLen]
		pixel := func(x int) {
			xin := float64(x) + 0.5
			// affine_transform: a0 xin + a1 yin + a2, left to right
			xx := float64(a0*xin) + rowX + a2
			yy := float64(a3*xin) + rowY + a5
			o := out[x*ch : x*ch+ch : x*ch+ch]
			if !(xx >= 0 && xx < fw && yy >= 0 && yy < fh) {
				copy(o, fillb[:ch])
				return
			}
			if bilinear {
				if ch == 3 && pilFast && bilinearPIL3(o, src, xx, yy, w, h) {
					return
				}
				bilinearPIL(o, src, xx, yy, w, h, ch)
				return
			}
			if ch == 3 && pilFast && bicubicPIL3(o, src, xx, yy, w, h) {
				return
			}
			bicubicPIL(o, src, xx, yy, w, h, ch)
		}
		if simdRows {
			if ns, ok := simd.WarpPILBilinear3(out, s.src, a0, a2, a3, a5, rowX, rowY, w, h, &s.fillPIL, s.slow); ok {
				for _, x := range s.slow[:ns] {
					pixel(int(x))
				}
				continue
			}
		}
		for x := 0; x < w; x++ {
			pixel(x)
		}
	}
	return nil
}

// bilinearPIL3 is bilinearPIL for an RGB picture at a position whose 2x2
// taps all lie inside it (false, nothing written, otherwise): the same
// arithmetic, without clamping.
func bilinearPIL3(o, src []byte, xx, yy float64, w, h int) bool {
	xs, ys := xx-0.5, yy-0.5
	xi, yi := int(xs), int(ys)
	if !(xs >= 0 && ys >= 0 && xi <= w-2 && yi <= h-2) {
		return false
	}
	rowLen := w * 3
	dx, dy := xs-float64(xi), ys-float64(yi)
	i := yi*rowLen + xi*3
	q := src[i : i+rowLen+6 : i+rowLen+6]
	r1 := q[rowLen : rowLen+6 : rowLen+6]
	for c := range 3 {
		v1 := float64(q[c]) + float64(float64(int(q[3+c])-int(q[c]))*dx)
		v2 := float64(r1[c]) + float64(float64(int(r1[3+c])-int(r1[c]))*dx)
		o[c] = uint8(int(v1 + float64((v2-v1)*dy)))
	}
	return true
}

// nearestPIL is PIL's ImagingTransformAffine with NEAREST (Geometry.c),
// writing into m from src (m's pixels, tight rows), fill outside: a
// matrix without rotation or shear (a translation) through
// ImagingScaleAffine's table of columns; else, where the four corners fit
// 16.16 fixed point, affine_fixed (the sampling position stepped in
// fixed point, floored by a shift); else the position in float64, stepped
// along the row (COORD: -1 below 0, else truncated). cols is scratch for
// the translation's column table, returned grown.
func nearestPIL(m *imgcodec.Image, src []byte, a [6]float64, fill []byte, cols []int32) []int32 {
	w, h, ch := m.Width, m.Height, m.Channels
	rowLen := w * ch
	put := func(out []byte, x, xin, yin int) {
		if xin >= 0 && xin < w && yin >= 0 && yin < h {
			copy(out[x*ch:x*ch+ch], src[yin*rowLen+xin*ch:][:ch])
		} else {
			copy(out[x*ch:x*ch+ch], fill)
		}
	}
	coord := func(v float64) int {
		if v < 0 {
			return -1
		}
		return int(v)
	}
	if a[1] == 0 && a[3] == 0 { // ImagingScaleAffine
		xo := float64(a[2] + float64(a[0]*0.5))
		yo := float64(a[5] + float64(a[4]*0.5))
		cols = grow(cols, w)
		xin := cols[:w]
		for x := range w {
			xin[x] = int32(coord(xo))
			xo += a[0]
		}
		for y := range h {
			yi := coord(yo)
			out := m.Pix[y*m.Stride:][:rowLen]
			for x := range w {
				put(out, x, int(xin[x]), yi)
			}
			yo += a[4]
		}
		return cols
	}
	fits := func(x, y int) bool {
		return math.Abs(float64(float64(float64(x)*a[0])+float64(float64(y)*a[1]))+a[2]) < 32768.0 &&
			math.Abs(float64(float64(float64(x)*a[3])+float64(float64(y)*a[4]))+a[5]) < 32768.0
	}
	if fits(0, 0) && fits(w, h) && fits(0, h) && fits(w, 0) { // affine_fixed
		fix := func(v float64) int32 {
			v = float64(v*65536.0) + 0.5
			if v < 0 {
				return int32(math.Floor(v))
			}
			return int32(v)
		}
		a0, a1, a3, a4 := fix(a[0]), fix(a[1]), fix(a[3]), fix(a[4])
		a2 := fix(float64(a[2]+float64(a[0]*0.5)) + float64(a[1]*0.5))
		a5 := fix(float64(a[5]+float64(a[3]*0.5)) + float64(a[4]*0.5))
		for y := range h {
			xx, yy := a2, a5
			out := m.Pix[y*m.Stride:][:rowLen]
			for x := range w {
				put(out, x, int(xx>>16), int(yy>>16))
				xx += a0
				yy += a3
			}
			a2 += a1
			a5 += a4
		}
		return cols
	}
	xo := float64(float64(a[2]+float64(a[1]*0.5)) + float64(a[0]*0.5))
	yo := float64(float64(a[5]+float64(a[4]*0.5)) + float64(a[3]*0.5))
	for y := range h {
		xx, yy := xo, yo
		out := m.Pix[y*m.Stride:][:rowLen]
		for x := range w {
			put(out, x, coord(xx), coord(yy))
			xx += a[0]
			yy += a[3]
		}
		xo += a[1]
		yo += a[4]
	}
	return cols
}

// pilHead is the head of PIL's bilinear and bicubic filters (Geometry.c's
// BILINEAR_HEAD, BICUBIC_HEAD): the position less half a pixel, its floor
// and the remainders.
func pilHead(xx, yy float64) (x, y int, dx, dy float64) {
	xx -= 0.5
	yy -= 0.5
	x, y = int(math.Floor(xx)), int(math.Floor(yy))
	return x, y, xx - float64(x), yy - float64(y)
}

// bilinearPIL is PIL's bilinear transform filter (Geometry.c's
// BILINEAR_HEAD and BILINEAR_BODY) at (xx, yy), a position inside the
// picture. The conversions to float64 keep each product and sum rounded
// as C's doubles are (no fused multiply-add).
func bilinearPIL(o, src []byte, xx, yy float64, w, h, ch int) {
	x, y, dx, dy := pilHead(xx, yy)
	rowLen := w * ch
	x0, x1 := min(max(x, 0), w-1)*ch, min(max(x+1, 0), w-1)*ch
	r0 := src[min(max(y, 0), h-1)*rowLen:][:rowLen]
	var r1 []byte
	if y+1 >= 0 && y+1 < h {
		r1 = src[(y+1)*rowLen:][:rowLen]
	}
	for c := range ch {
		a, b := int(r0[x0+c]), int(r0[x1+c])
		v1 := float64(a) + float64(float64(b-a)*dx)
		v2 := v1
		if r1 != nil {
			a, b = int(r1[x0+c]), int(r1[x1+c])
			v2 = float64(a) + float64(float64(b-a)*dx)
		}
		v1 = v1 + float64((v2-v1)*dy)
		o[c] = uint8(int(v1)) // (UINT8)v1: v1 is within [0, 255]
	}
}

// pilFast lets WarpPIL take bicubicPIL3 and the inline bilinear interior
// path (tests turn it off to compare).
var pilFast = true

// bicubicPIL3 is bicubicPIL for an RGB picture at a position whose 4x4
// taps all lie inside it (false, nothing written, otherwise): the taps of
// a row are 12 contiguous bytes, no clamping; the same arithmetic.
func bicubicPIL3(o, src []byte, xx, yy float64, w, h int) bool {
	xx -= 0.5
	yy -= 0.5
	// xx, yy >= -0.5 here: int() truncation is floor but in [-0.5, 0)
	x, y := int(xx), int(yy)
	if x < 1 || y < 1 || x > w-3 || y > h-3 {
		return false
	}
	dx, dy := xx-float64(x), yy-float64(y)
	rowLen := w * 3
	i := (y-1)*rowLen + (x-1)*3
	r0 := src[i : i+12 : i+12]
	r1 := src[i+rowLen : i+rowLen+12 : i+rowLen+12]
	r2 := src[i+2*rowLen : i+2*rowLen+12 : i+2*rowLen+12]
	r3 := src[i+3*rowLen : i+3*rowLen+12 : i+3*rowLen+12]
	o = o[:3:3]
	for c := range 3 {
		v0 := cubicBytes(int(r0[c]), int(r0[3+c]), int(r0[6+c]), int(r0[9+c]), dx)
		v1 := cubicBytes(int(r1[c]), int(r1[3+c]), int(r1[6+c]), int(r1[9+c]), dx)
		v2 := cubicBytes(int(r2[c]), int(r2[3+c]), int(r2[6+c]), int(r2[9+c]), dx)
		v3 := cubicBytes(int(r3[c]), int(r3[3+c]), int(r3[6+c]), int(r3[9+c]), dx)
		r := cubicPIL(v0, v1, v2, v3, dy)
		switch {
		case r <= 0:
			o[c] = 0
		case r >= 255:
			o[c] = 255
		default:
			o[c] = uint8(r)
		}
	}
	return true
}

// bicubicPIL is PIL's bicubic transform filter at (xx, yy), a position
// inside the picture: the 4x4 taps around it, their rows and columns
// clamped to the picture, each row's cubic from its bytes, then the cubic
// of the four rows.
func bicubicPIL(o, src []byte, xx, yy float64, w, h, ch int) {
	x, y, dx, dy := pilHead(xx, yy)
	var cols [4]int
	var rows [4]int
	for k := range 4 {
		cols[k] = min(max(x-1+k, 0), w-1) * ch
		rows[k] = min(max(y-1+k, 0), h-1) * w * ch
	}
	for c := range ch {
		var v [4]float64
		for k, r := range rows {
			p := src[r+c:]
			v[k] = cubicBytes(int(p[cols[0]]), int(p[cols[1]]), int(p[cols[2]]), int(p[cols[3]]), dx)
		}
		r := cubicPIL(v[0], v[1], v[2], v[3], dy)
		switch {
		case r <= 0:
			o[c] = 0
		case r >= 255:
			o[c] = 255
		default:
			o[c] = uint8(r) // truncated, as C's (UINT8) cast
		}
	}
}

// cubicBytes is PIL's BICUBIC macro on four bytes: its coefficients are
// integer sums (C's integer promotion), exact.
func cubicBytes(v1, v2, v3, v4 int, d float64) float64 {
	p1 := float64(v2)
	p2 := float64(-v1 + v3)
	p3 := float64(2*(v1-v2) + v3 - v4)
	p4 := float64(-v1 + v2 - v3 + v4)
	return horner(p1, p2, p3, p4, d)
}

// cubicPIL is PIL's BICUBIC macro on four float64 values, in its order.
func cubicPIL(v1, v2, v3, v4, d float64) float64 {
	p1 := v2
	p2 := -v1 + v3
	p3 := float64(2*(v1-v2)) + v3 - v4
	p4 := -v1 + v2 - v3 + v4
	return horner(p1, p2, p3, p4, d)
}

// horner is p1 + d (p2 + d (p3 + d p4)), each product rounded (no fused
// multiply-add, as C on x86-64 computes it).
func horner(p1, p2, p3, p4, d float64) float64 {
	t := p3 + float64(d*p4)
	t = p2 + float64(d*t)
	return p1 + float64(d*t)
}
