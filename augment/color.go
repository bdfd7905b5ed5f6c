package augment

import (
	"math/rand/v2"

	"github.com/faster-training/faster/imgcodec"
)

// The photometric ops of this file work in place on 8-bit images (RGB or
// gray) and compute what torchvision 0.14's tensor path computes on a
// uint8 tensor: its float32 arithmetic in the same order, then the same
// conversion back to uint8 (truncation after a clamp to [0, 255] for
// blends, as Tensor.to(torch.uint8) does). Products are wrapped in
// float32() so that no fused multiply-add changes a rounding.

// blendLUT fills lut with torchvision's _blend of each value v with the
// constant other: trunc(clamp(ratio*v + (1-ratio)*other, 0, 255)).
func blendLUT(lut *[256]uint8, ratio float64, other float32) {
	a, b := float32(ratio), float32(1-ratio)
	o := float32(b * other)
	for v := range 256 {
		lut[v] = clamp8(float32(a*float32(v)) + o)
	}
}

// clamp8 is clamp(x, 0, 255) then a truncating conversion to uint8.
func clamp8(x float32) uint8 {
	if !(x > 0) { // NaN too
		return 0
	}
	if x >= 255 {
		return 255
	}
	return uint8(x)
}

// round8 is torch.round (half to even) then a conversion to uint8, as
// torchvision's grid transforms and convolutions end.
func round8(x float32) uint8 {
	if !(x > 0) {
		return 0
	}
	if x >= 255 {
		return 255
	}
	// Adding and removing 2^23 rounds a float32 in (0, 255) to an integer,
	// half to even (IEEE round-to-nearest), as torch.round.
	const big = 1 << 23
	return uint8((x + big) - big)
}

func applyLUT(m *imgcodec.Image, lut *[256]uint8) {
	n := m.Width * m.Channels
	for y := 0; y < m.Height; y++ {
		row := m.Pix[y*m.Stride:][:n]
		for i, v := range row {
			row[i] = lut[v]
		}
	}
}

// AdjustBrightness multiplies every value by factor (>= 0), torchvision's
// adjust_brightness (a blend with black).
func AdjustBrightness(m *imgcodec.Image, factor float64) error {
	if err := checkImage(m); err != nil {
		return err
	}
	var lut [256]uint8
	blendLUT(&lut, factor, 0)
	applyLUT(m, &lut)
	return nil
}

// grayLUTs are float32(0.2989)*v, float32(0.587)*v and float32(0.114)*v,
// the products of torchvision's rgb_to_grayscale.
var grayLUTs = func() (t [3][256]float32) {
	w := [3]float32{0.2989, 0.587, 0.114}
	for c := range 3 {
		for v := range 256 {
			t[c][v] = float32(w[c] * float32(v))
		}
	}
	return
}()

// gray8 is torchvision's rgb_to_grayscale of one uint8 pixel:
// (0.2989*r + 0.587*g + 0.114*b) in float32, truncated.
func gray8(r, g, b uint8) uint8 {
	return uint8(grayLUTs[0][r] + grayLUTs[1][g] + grayLUTs[2][b])
}

// ToGrayscale replaces each RGB pixel by its luma, torchvision's
// rgb_to_grayscale with num_output_channels=3 (ITU-R 601-2 weights
// 0.2989, 0.587, 0.114; truncated). A gray image is left alone.
func ToGrayscale(m *imgcodec.Image) error { return grayInPlace(m, false) }

// grayInPlace puts each RGB pixel's luma in its three channels: torch's
// truncated luma (gray8), or with pil PIL's rounded one (pilLuma).
func grayInPlace(m *imgcodec.Image, pil bool) error {
	if err := checkImage(m); err != nil || m.Channels == 1 {
		return err
	}
	for y := 0; y < m.Height; y++ {
		row := m.Pix[y*m.Stride:][:m.Width*3]
		for x := 0; x < len(row); x += 3 {
			p := row[x : x+3 : x+3]
			var l uint8
			if pil {
				l = pilLuma(p[0], p[1], p[2])
			} else {
				l = gray8(p[0], p[1], p[2])
			}
			p[0], p[1], p[2] = l, l, l
		}
	}
	return nil
}

// grayMean is torchvision's contrast reference: the mean of the truncated
// luma (the values themselves for a gray image) as a float32, the sum
// rounded to float32 and divided by the count in float32.
func grayMean(m *imgcodec.Image) float32 {
	var sum uint64
	for y := 0; y < m.Height; y++ {
		row := m.Pix[y*m.Stride:][:m.Width*m.Channels]
		if m.Channels == 1 {
			for _, v := range row {
				sum += uint64(v)
			}
			continue
		}
		for x := 0; x < len(row); x += 3 {
			sum += uint64(gray8(row[x], row[x+1], row[x+2]))
		}
	}
	return float32(sum) / float32(m.Width*m.Height)
}

// AdjustContrast blends every value with the image's mean luma,
// torchvision's adjust_contrast (factor 0 gives a flat gray image, 1 the
// image itself).
func AdjustContrast(m *imgcodec.Image, factor float64) error {
	if err := checkImage(m); err != nil {
		return err
	}
	var lut [256]uint8
	blendLUT(&lut, factor, grayMean(m))
	applyLUT(m, &lut)
	return nil
}

// AdjustSaturation blends every RGB pixel with its luma, torchvision's
// adjust_saturation (0 gives the grayscale image, 1 the image itself). A
// gray image is left alone, as torchvision does.
func AdjustSaturation(m *imgcodec.Image, factor float64) error {
	if err := checkImage(m); err != nil || m.Channels == 1 {
		return err
	}
	a, b := float32(factor), float32(1-factor)
	var la, lb [256]float32
	for v := range 256 {
		la[v] = float32(a * float32(v))
		lb[v] = float32(b * float32(v))
	}
	for y := 0; y < m.Height; y++ {
		row := m.Pix[y*m.Stride:][:m.Width*3]
		for x := 0; x < len(row); x += 3 {
			p := row[x : x+3 : x+3]
			o := lb[gray8(p[0], p[1], p[2])]
			p[0] = clamp8(la[p[0]] + o)
			p[1] = clamp8(la[p[1]] + o)
			p[2] = clamp8(la[p[2]] + o)
		}
	}
	return nil
}

// AdjustHue rotates the hue of every RGB pixel by factor turns (in
// [-0.5, 0.5]), torchvision's adjust_hue on a uint8 tensor: to float32 in
// [0, 1], RGB to HSV, hue shifted modulo 1, back to RGB, times 255,
// truncated. A gray image is left alone.
func AdjustHue(m *imgcodec.Image, factor float64) error {
	if err := checkImage(m); err != nil || m.Channels == 1 {
		return err
	}
	hf := float32(factor)
	for y := 0; y < m.Height; y++ {
		row := m.Pix[y*m.Stride:][:m.Width*3]
		for x := 0; x < len(row); x += 3 {
			p := row[x : x+3 : x+3]
			p[0], p[1], p[2] = hueShift(p[0], p[1], p[2], hf)
		}
	}
	return nil
}

func hueShift(r8, g8, b8 uint8, hf float32) (uint8, uint8, uint8) {
	r, g, b := float32(r8)/255, float32(g8)/255, float32(b8)/255
	maxc, minc := max(r, g, b), min(r, g, b)
	eqc := maxc == minc
	cr := maxc - minc
	var s, h float32
	if !eqc {
		s = cr / maxc
		rc, gc, bc := (maxc-r)/cr, (maxc-g)/cr, (maxc-b)/cr
		switch {
		case maxc == r:
			h = bc - gc
		case maxc == g:
			h = 2.0 + rc - bc
		default:
			h = 4.0 + gc - rc
		}
	}
	h = fmod1(h/6.0 + 1.0)
	h = h + hf
	if h2 := fmod1(h); h2 < 0 { // torch.remainder(h, 1.0)
		h = h2 + 1
	} else {
		h = h2
	}
	v := maxc
	h6 := float32(h * 6.0)
	fi := float32(int32(h6)) // floor: h6 >= 0
	f := h6 - fi
	pp := clampUnit(float32(v * (1.0 - s)))
	q := clampUnit(float32(v * (1.0 - float32(s*f))))
	t := clampUnit(float32(v * (1.0 - float32(s*(1.0-f)))))
	i := int32(fi) % 6
	if i < 0 {
		i += 6
	}
	var ro, gout, bo float32
	switch i {
	case 0:
		ro, gout, bo = v, t, pp
	case 1:
		ro, gout, bo = q, v, pp
	case 2:
		ro, gout, bo = pp, v, t
	case 3:
		ro, gout, bo = pp, q, v
	case 4:
		ro, gout, bo = t, pp, v
	default:
		ro, gout, bo = v, pp, q
	}
	return uint8(float32(ro * 255.0)), uint8(float32(gout * 255.0)), uint8(float32(bo * 255.0))
}

// fmod1 is C's fmodf(x, 1) (exact).
func fmod1(x float32) float32 { return x - float32(int32(x)) } // |x| < 2^31 here

func clampUnit(x float32) float32 { return min(max(x, 0), 1) }

// ColorJitter is torchvision's ColorJitter: brightness, contrast and
// saturation factors uniform in their ranges, hue uniform in its range (in
// [-0.5, 0.5]), applied in a random order. A zero range (the zero value)
// turns that adjustment off and draws nothing for it, as torchvision's
// None. Build the ranges from torchvision's scalar arguments with
// JitterRange.
type ColorJitter struct {
	Brightness, Contrast, Saturation, Hue [2]float64
	// PIL: on a PIL image (before a recipe's PILToTensor or ToTensor):
	// PIL's ImageEnhance and HSV arithmetic (applyJitterPIL), as
	// torchvision runs ColorJitter there.
	PIL bool
}

// JitterRange is the range torchvision makes of a scalar ColorJitter
// argument: [max(0, center-v), center+v] (center 1 for brightness, contrast
// and saturation; 0 for hue, without the clip at 0). v = 0 gives the zero
// range (off).
func JitterRange(v, center float64) [2]float64 {
	if v == 0 {
		return [2]float64{}
	}
	lo := center - v
	if center == 1 {
		lo = max(lo, 0)
	}
	return [2]float64{lo, center + v}
}

// JitterParams are one draw of a ColorJitter: the order of the four
// adjustments (0 brightness, 1 contrast, 2 saturation, 3 hue) and their
// factors; an adjustment whose Has bit is clear is skipped.
type JitterParams struct {
	Order                                 [4]uint8
	Brightness, Contrast, Saturation, Hue float64
	Has                                   [4]bool
}

func jitterOn(r [2]float64, center float64) bool {
	return r != ([2]float64{}) && !(r[0] == center && r[1] == center)
}

// Draw draws the parameters of one sample as torchvision's get_params
// does: a permutation of the four first, then the factors of the
// adjustments that are on, in the order brightness, contrast, saturation,
// hue.
func (j *ColorJitter) Draw(rng *rand.Rand) JitterParams {
	var p JitterParams
	perm := [4]uint8{0, 1, 2, 3}
	for i := 3; i > 0; i-- { // Fisher-Yates
		k := rng.IntN(i + 1)
		perm[i], perm[k] = perm[k], perm[i]
	}
	p.Order = perm
	ranges := [4][2]float64{j.Brightness, j.Contrast, j.Saturation, j.Hue}
	out := [4]*float64{&p.Brightness, &p.Contrast, &p.Saturation, &p.Hue}
	for k, r := range ranges {
		center := 1.0
		if k == 3 {
			center = 0
		}
		if jitterOn(r, center) {
			p.Has[k] = true
			*out[k] = r[0] + (r[1]-r[0])*rng.Float64()
		}
	}
	return p
}

// ApplyJitter applies the drawn adjustments to m in place, in p's order.
func ApplyJitter(m *imgcodec.Image, p JitterParams) error {
	for _, k := range p.Order {
		if !p.Has[k] {
			continue
		}
		var err error
		switch k {
		case 0:
			err = AdjustBrightness(m, p.Brightness)
		case 1:
			err = AdjustContrast(m, p.Contrast)
		case 2:
			err = AdjustSaturation(m, p.Saturation)
		case 3:
			err = AdjustHue(m, p.Hue)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// RandomGrayscale is torchvision's RandomGrayscale(p): with probability P
// the image becomes its luma, kept in 3 channels (ToGrayscale; with PIL,
// on a PIL image, PIL's rounded luma: pilGray).
type RandomGrayscale struct {
	P   float64
	PIL bool
}

// Draw says whether this sample is converted (one uniform draw, as
// torch.rand(1) < p).
func (g RandomGrayscale) Draw(rng *rand.Rand) bool { return rng.Float64() < g.P }
