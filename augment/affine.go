package augment

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/faster-training/faster/augment/internal/simd"
	"github.com/faster-training/faster/imgcodec"
)

// Interp selects how the geometric ops (rotate, affine) sample the source:
// torchvision's InterpolationMode.NEAREST or BILINEAR on the tensor path
// (torch.nn.functional.grid_sample, align_corners=False, zero padding),
// or BICUBIC, which torchvision warps on PIL images only: PIL's (WarpPIL);
// or NEAREST and BILINEAR on a PIL image (an op before PILToTensor or
// ToTensor, as the classification reference runs its policy): PIL's too
// (WarpNearestPIL, WarpBilinearPIL), whose bilinear blends the picture's
// edge with its clamped neighbours where the tensor path blends it with
// the fill, and whose nearest picks its own neighbour at rounding ties.
type Interp uint8

const (
	WarpNearest Interp = iota
	WarpBilinear
	WarpBicubic
	WarpBilinearPIL
	// WarpNearestPIL is nearest on a PIL image: PIL's nearest affine
	// (nearestPIL) and the policies' colour ops PIL's.
	WarpNearestPIL
)

// onPIL says whether an op with interpolation i runs on a PIL image (its
// colour ops PIL's: pilcolor.go).
func (i Interp) onPIL() bool { return i == WarpBicubic || i == WarpBilinearPIL || i == WarpNearestPIL }

// packRows copies m's pixels into buf as tight rows (width·channels
// bytes each), grown to at least n bytes, and returns it.
func packRows(buf []uint8, m *imgcodec.Image, n int) []uint8 {
	rowLen := m.Width * m.Channels
	buf = grow(buf, max(n, rowLen*m.Height))
	for y := 0; y < m.Height; y++ {
		copy(buf[y*rowLen:][:rowLen], m.Pix[y*m.Stride:][:rowLen])
	}
	return buf
}

func (i Interp) String() string {
	switch i {
	case WarpNearest:
		return "nearest"
	case WarpBilinear:
		return "bilinear"
	case WarpBicubic:
		return "bicubic"
	case WarpBilinearPIL:
		return "bilinear (PIL)"
	case WarpNearestPIL:
		return "nearest (PIL)"
	}
	return fmt.Sprintf("Interp(%d)", uint8(i))
}

// Scratch holds the buffers of the ops that cannot work in place (the
// geometric warps, the blurs). The zero value is ready to use; keep one
// per goroutine, so that steady-state augmentation allocates nothing.
type Scratch struct {
	src []uint8
	f32 []float32
	mix []float32 // AugMix's sum
	aug []uint8   // AugMix's chain
	pil []uint8   // the PIL colour ops' degenerate picture
	// Warp's per-column products, and the pixels the SIMD kernel left
	colX, colY []float32
	slow       []int32
	fill       [3]float32
	fillPIL    [3]uint8 // WarpPILBilinear's fill, for the SIMD kernel
}

// InverseAffine is torchvision's _get_inverse_affine_matrix on the tensor
// path: the matrix that maps an output pixel, in coordinates centred on
// the image centre, to the source pixel it samples, for a rotation by
// angle degrees (counter-clockwise on screen for a positive angle, as
// torchvision's affine), a translation in pixels, a scale and shears in
// degrees, about center (pixel coordinates with (0, 0) the top-left
// corner; nil means the image centre). It returns the six coefficients
// [a, b, c, d, e, f] of x' = a x + b y + c, y' = d x + e y + f.
func InverseAffine(w, h int, center *[2]float64, angle float64, translate [2]float64, scale float64, shear [2]float64) [6]float64 {
	var cx, cy float64
	if center != nil {
		cx, cy = center[0]-float64(w)*0.5, center[1]-float64(h)*0.5
	}
	rot := angle * math.Pi / 180
	sx, sy := shear[0]*math.Pi/180, shear[1]*math.Pi/180
	tx, ty := translate[0], translate[1]
	a := math.Cos(rot-sy) / math.Cos(sy)
	b := -math.Cos(rot-sy)*math.Tan(sx)/math.Cos(sy) - math.Sin(rot)
	c := math.Sin(rot-sy) / math.Cos(sy)
	d := -math.Sin(rot-sy)*math.Tan(sx)/math.Cos(sy) + math.Cos(rot)
	m := [6]float64{d, -b, 0, -c, a, 0}
	for i := range m {
		m[i] /= scale
	}
	m[2] += m[0]*(-cx-tx) + m[1]*(-cy-ty)
	m[5] += m[3]*(-cx-tx) + m[4]*(-cy-ty)
	m[2] += cx
	m[5] += cy
	return m
}

// RotateMatrix is the matrix torchvision's rotate(angle, center) uses on
// the tensor path (the affine of -angle: rotate turns counter-clockwise
// for a positive angle as well, its matrix convention being the opposite
// of affine's).
func RotateMatrix(w, h int, angle float64, center *[2]float64) [6]float64 {
	return InverseAffine(w, h, center, -angle, [2]float64{}, 1, [2]float64{})
}

// Warp resamples m in place through the inverse matrix mat (from
// InverseAffine or RotateMatrix), as torchvision's tensor affine/rotate
// (expand=False) does: the grid of _gen_affine_grid in float32, then
// grid_sample with align_corners=False and zero padding, then rounding
// half to even. fill nil is torchvision's fill=None (outside pixels are
// black, and bilinear samples that straddle the border are blended with
// black); otherwise fill holds one value per channel (or one for all) and
// outside pixels take it through torchvision's mask (nearest: fill where
// the sampled mask is below 1/2; bilinear: img*mask + (1-mask)*fill).
func (s *Scratch) Warp(m *imgcodec.Image, mat [6]float64, interp Interp, fill []float64) error {
	if err := checkImage(m); err != nil {
		return err
	}
	if interp != WarpNearest && interp != WarpBilinear {
		return fmt.Errorf("augment: Warp samples as grid_sample, nearest or bilinear, not %v (bicubic warps are PIL's: WarpPIL)", interp)
	}
	w, h, ch := m.Width, m.Height, m.Channels
	rowLen := w * ch
	s.src = packRows(s.src, m, rowLen*h+4) // 4 bytes for the SIMD kernel's last gather
	src := s.src
	var fillv [3]float32
	if fill != nil {
		if len(fill) != 1 && len(fill) != ch {
			return fmt.Errorf("augment: %d fill values for %d channels", len(fill), ch)
		}
		for c := range ch {
			fillv[c] = float32(fill[min(c, len(fill)-1)])
		}
	}
	// _gen_affine_grid: theta^T / [w/2, h/2], applied to the centred
	// pixel coordinates (x + 0.5 - w/2, y + 0.5 - h/2, 1).
	hw, hh := float32(0.5*float64(w)), float32(0.5*float64(h))
	var t [6]float32
	for i := range t {
		t[i] = float32(mat[i])
	}
	ax, bx, cx := t[0]/hw, t[1]/hw, t[2]/hw
	ay, by, cy := t[3]/hh, t[4]/hh, t[5]/hh
	// grid_sample's unnormalize: (g + 1) * size/2 - 0.5
	sw, sh := float32(w)/2, float32(h)/2
	// gxb*ax and gxb*ay depend on the column only, gyb*bx and gyb*by on
	// the row: computed once each, they are the same float32 products the
	// per-pixel expression forms, so the sums below round as they did.
	s.colX = grow(s.colX, w)
	s.colY = grow(s.colY, w)
	for ox := range w {
		gxb := float32(ox) + 0.5 - hw
		s.colX[ox] = float32(gxb * ax)
		s.colY[ox] = float32(gxb * ay)
	}
	colX, colY := s.colX[:w], s.colY[:w]
	for oy := 0; oy < h; oy++ {
		gyb := float32(oy) + 0.5 - hh
		rowX, rowY := float32(gyb*bx), float32(gyb*by)
		out := m.Pix[oy*m.Stride:][:rowLen]
		if interp == WarpNearest {
			warpNearestRow(out, src, colX, colY, rowX, rowY, cx, cy, sw, sh, w, h, ch, fill != nil, &fillv)
			continue
		}
		if ch == 3 && warpSIMD {
			var fp *[3]float32
			if fill != nil {
				s.fill = fillv // in the Scratch: a pointer to a local would escape
				fp = &s.fill
			}
			s.slow = grow(s.slow, w)
			if ns, ok := simd.WarpBilinear3(out, src, colX, colY, rowX, rowY, cx, cy, sw, sh, w, h, fp, s.slow); ok {
				for _, ox := range s.slow[:ns] {
					ix, iy := warpPos(colX[ox], colY[ox], rowX, rowY, cx, cy, sw, sh)
					bilinearPixel(out[ox*3:ox*3+3:ox*3+3], src, ix, iy, w, h, 3, fill != nil, &fillv)
				}
				continue
			}
		}
		if ch == 3 {
			warpBilinearRow3(out, src, colX, colY, rowX, rowY, cx, cy, sw, sh, w, h, fill != nil, &fillv)
			continue
		}
		for ox := 0; ox < w; ox++ {
			ix, iy := warpPos(colX[ox], colY[ox], rowX, rowY, cx, cy, sw, sh)
			bilinearPixel(out[ox*ch:ox*ch+ch:ox*ch+ch], src, ix, iy, w, h, ch, fill != nil, &fillv)
		}
	}
	return nil
}

// warpPos is the source position output column ox samples, from its
// column products (colX[ox], colY[ox]) and its row's: grid_sample's
// unnormalised coordinates, in torch's float32 order.
func warpPos(colX, colY, rowX, rowY, cx, cy, sw, sh float32) (ix, iy float32) {
	gx := colX + rowX + cx
	gy := colY + rowY + cy
	return float32((gx+1)*sw) - 0.5, float32((gy+1)*sh) - 0.5
}

// warpNearestRow writes one output row of a nearest-neighbour warp.
func warpNearestRow(out, src []byte, colX, colY []float32, rowX, rowY, cx, cy, sw, sh float32, w, h, ch int, fill bool, fillv *[3]float32) {
	rowLen := w * ch
	for ox := range colX {
		ix, iy := warpPos(colX[ox], colY[ox], rowX, rowY, cx, cy, sw, sh)
		o := out[ox*ch : ox*ch+ch : ox*ch+ch]
		nx := math.RoundToEven(float64(ix))
		ny := math.RoundToEven(float64(iy))
		if nx >= 0 && nx < float64(w) && ny >= 0 && ny < float64(h) {
			p := src[int(ny)*rowLen+int(nx)*ch:]
			copy(o, p[:ch])
			continue
		}
		if !fill {
			clear(o)
			continue
		}
		for c := range ch {
			o[c] = round8(fillv[c])
		}
	}
}

// warpBilinearRow3 writes one output row of a bilinear warp of an RGB
// image. A pixel whose four taps are inside the image takes the direct
// path: the same products, summed in grid_sample's order (nw, ne, sw, se)
// from zero, and the same mask, so the same bytes as bilinearPixel.
func warpBilinearRow3(out, src []byte, colX, colY []float32, rowX, rowY, cx, cy, sw, sh float32, w, h int, fill bool, fillv *[3]float32) {
	rowLen := w * 3
	out = out[:len(colX)*3]
	for ox := range colX {
		ix, iy := warpPos(colX[ox], colY[ox], rowX, rowY, cx, cy, sw, sh)
		x0, y0 := floor32(ix), floor32(iy)
		if uint(x0) >= uint(w-1) || uint(y0) >= uint(h-1) {
			bilinearPixel(out[ox*3:ox*3+3:ox*3+3], src, ix, iy, w, h, 3, fill, fillv)
			continue
		}
		wx := ix - float32(x0)
		wy := iy - float32(y0)
		ex, sy := 1-wx, 1-wy
		wnw, wne := float32(sy*ex), float32(sy*wx)
		wsw, wse := float32(wy*ex), float32(wy*wx)
		i := y0*rowLen + x0*3
		p := src[i : i+6 : i+6]
		q := src[i+rowLen : i+rowLen+6 : i+rowLen+6]
		// byteF32[b] is float32(b), read from a table instead of converted.
		v0 := float32(wnw*byteF32[p[0]]) + float32(wne*byteF32[p[3]]) + float32(wsw*byteF32[q[0]]) + float32(wse*byteF32[q[3]])
		v1 := float32(wnw*byteF32[p[1]]) + float32(wne*byteF32[p[4]]) + float32(wsw*byteF32[q[1]]) + float32(wse*byteF32[q[4]])
		v2 := float32(wnw*byteF32[p[2]]) + float32(wne*byteF32[p[5]]) + float32(wsw*byteF32[q[2]]) + float32(wse*byteF32[q[5]])
		o := out[ox*3 : ox*3+3 : ox*3+3]
		if fill {
			mask := wnw + wne + wsw + wse
			v0 = float32(v0*mask) + float32((1-mask)*fillv[0])
			v1 = float32(v1*mask) + float32((1-mask)*fillv[1])
			v2 = float32(v2*mask) + float32((1-mask)*fillv[2])
			o[0], o[1], o[2] = round8(v0), round8(v1), round8(v2)
			continue
		}
		// Without a fill each value is a convex blend of bytes: in [0, 255]
		// but for a few ulps, so round8's clamps cannot act; the same
		// rounding (half to even) without them.
		o[0], o[1], o[2] = roundBlend(v0), roundBlend(v1), roundBlend(v2)
	}
}

// warpSIMD lets Warp use the SIMD kernel (tests turn it off to compare).
var warpSIMD = true

// byteF32 maps a byte to its float32 value.
var byteF32 = func() (t [256]float32) {
	for i := range t {
		t[i] = float32(i)
	}
	return
}()

// roundBlend is round8 for a value known to lie in [0, 255.5): torch.round
// (half to even) by adding and removing 2^23.
func roundBlend(x float32) uint8 {
	const big = 1 << 23
	return uint8(int32((x + big) - big))
}

// bilinearPixel is one output pixel of a bilinear warp sampled at (ix,
// iy), torchvision's grid_sample with zero padding and its fill mask.
func bilinearPixel(o, src []byte, ix, iy float32, w, h, ch int, fill bool, fillv *[3]float32) {
	rowLen := w * ch
	x0, y0 := floor32(ix), floor32(iy)
	wx := ix - float32(x0)
	wy := iy - float32(y0)
	ex, sy := 1-wx, 1-wy
	wnw, wne := float32(sy*ex), float32(sy*wx)
	wsw, wse := float32(wy*ex), float32(wy*wx)
	inX0, inX1 := x0 >= 0 && x0 < w, x0+1 >= 0 && x0+1 < w
	inY0, inY1 := y0 >= 0 && y0 < h, y0+1 >= 0 && y0+1 < h
	var vals [3]float32
	var mask float32
	// The corners in grid_sample's order (nw, ne, sw, se); one outside
	// the image adds nothing (zero padding).
	if inX0 && inY0 {
		p := src[y0*rowLen+x0*ch:][:ch]
		for c := range p {
			vals[c] += float32(wnw * float32(p[c]))
		}
		mask += wnw
	}
	if inX1 && inY0 {
		p := src[y0*rowLen+(x0+1)*ch:][:ch]
		for c := range p {
			vals[c] += float32(wne * float32(p[c]))
		}
		mask += wne
	}
	if inX0 && inY1 {
		p := src[(y0+1)*rowLen+x0*ch:][:ch]
		for c := range p {
			vals[c] += float32(wsw * float32(p[c]))
		}
		mask += wsw
	}
	if inX1 && inY1 {
		p := src[(y0+1)*rowLen+(x0+1)*ch:][:ch]
		for c := range p {
			vals[c] += float32(wse * float32(p[c]))
		}
		mask += wse
	}
	for c := range ch {
		v := vals[c]
		if fill {
			v = float32(v*mask) + float32((1-mask)*fillv[c])
		}
		o[c] = round8(v)
	}
}

// floor32 is floor for the sampling positions (well inside int32).
func floor32(x float32) int {
	i := int(x)
	if float32(i) > x {
		i--
	}
	return i
}

// Rotate rotates m in place by angle degrees (counter-clockwise) about
// center (nil: the image centre), torchvision's rotate(expand=False) on
// the tensor path; see Warp for fill.
func (s *Scratch) Rotate(m *imgcodec.Image, angle float64, interp Interp, center *[2]float64, fill []float64) error {
	if interp.onPIL() { // PIL's Image.rotate (see WarpPIL)
		return s.warpPIL(m, PILRotateMatrix(m.Width, m.Height, angle, center), interp, fill)
	}
	return s.Warp(m, RotateMatrix(m.Width, m.Height, angle, center), interp, fill)
}

// AffineParams are the parameters of torchvision's affine: angle and
// shears in degrees, translation in whole pixels (as RandomAffine draws
// it), scale.
type AffineParams struct {
	Angle          float64
	Translate      [2]int
	Scale          float64
	ShearX, ShearY float64
}

// Affine applies p to m in place about center (nil: the image centre),
// torchvision's affine on the tensor path; see Warp for fill.
func (s *Scratch) Affine(m *imgcodec.Image, p AffineParams, interp Interp, center *[2]float64, fill []float64) error {
	if interp.onPIL() { // torchvision's affine on PIL images (see WarpPIL)
		mat := PILAffineMatrix(m.Width, m.Height, center, p.Angle,
			[2]float64{float64(p.Translate[0]), float64(p.Translate[1])}, p.Scale, [2]float64{p.ShearX, p.ShearY})
		return s.warpPIL(m, mat, interp, fill)
	}
	mat := InverseAffine(m.Width, m.Height, center, p.Angle,
		[2]float64{float64(p.Translate[0]), float64(p.Translate[1])}, p.Scale, [2]float64{p.ShearX, p.ShearY})
	return s.Warp(m, mat, interp, fill)
}

// RandomRotation is torchvision's RandomRotation(degrees, interpolation,
// expand=False, center, fill): an angle uniform in Degrees. torchvision's
// default fill is 0 (the mask path), given here as Fill = []float64{0}.
type RandomRotation struct {
	Degrees [2]float64
	Interp  Interp
	Center  *[2]float64
	Fill    []float64
}

// Draw draws the angle.
func (r *RandomRotation) Draw(rng *rand.Rand) float64 {
	return r.Degrees[0] + (r.Degrees[1]-r.Degrees[0])*rng.Float64()
}

// RandomAffine is torchvision's RandomAffine: an angle uniform in Degrees;
// if Translate is set, a translation of up to Translate[0]*width and
// Translate[1]*height pixels each way (rounded half to even); if Scale is
// set, a scale uniform in it; shears uniform in Shear[0:2] (x) and, with
// ShearY, Shear[2:4] (y), when Shear is set.
type RandomAffine struct {
	Degrees   [2]float64
	Translate *[2]float64
	Scale     *[2]float64
	Shear     *[4]float64
	ShearY    bool // Shear holds four values (torchvision's 4-sequence)
	Interp    Interp
	Center    *[2]float64
	Fill      []float64
}

// Draw draws the parameters for a w x h image in torchvision's order:
// angle, translation x then y, scale, shear x, shear y.
func (a *RandomAffine) Draw(rng *rand.Rand, w, h int) AffineParams {
	u := func(lo, hi float64) float64 { return lo + (hi-lo)*rng.Float64() }
	p := AffineParams{Angle: u(a.Degrees[0], a.Degrees[1]), Scale: 1}
	if a.Translate != nil {
		mx, my := a.Translate[0]*float64(w), a.Translate[1]*float64(h)
		p.Translate[0] = int(math.RoundToEven(u(-mx, mx)))
		p.Translate[1] = int(math.RoundToEven(u(-my, my)))
	}
	if a.Scale != nil {
		p.Scale = u(a.Scale[0], a.Scale[1])
	}
	if a.Shear != nil {
		p.ShearX = u(a.Shear[0], a.Shear[1])
		if a.ShearY {
			p.ShearY = u(a.Shear[2], a.Shear[3])
		}
	}
	return p
}
