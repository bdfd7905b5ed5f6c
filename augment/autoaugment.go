package augment

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/faster-training/faster/imgcodec"
)

// AugOp names an op of the automatic augmentation policies, in the order
// of torchvision 0.14's augmentation spaces (TrivialAugmentWide and
// RandAugment draw an index into the first 14).
type AugOp uint8

const (
	OpIdentity AugOp = iota
	OpShearX
	OpShearY
	OpTranslateX
	OpTranslateY
	OpRotate
	OpBrightness
	OpColor
	OpContrast
	OpSharpness
	OpPosterize
	OpSolarize
	OpAutoContrast
	OpEqualize
	OpInvert // AutoAugment only
	numAugOps
)

var augOpNames = [numAugOps]string{"Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate",
	"Brightness", "Color", "Contrast", "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize", "Invert"}

// String is torchvision's name of the op.
func (o AugOp) String() string {
	if o < numAugOps {
		return augOpNames[o]
	}
	return fmt.Sprintf("AugOp(%d)", uint8(o))
}

// signed ops take a random sign.
func (o AugOp) signed() bool { return o >= OpShearX && o <= OpSharpness }

// AugStep is one op with its magnitude (sign included), as
// torchvision's _apply_op receives them.
type AugStep struct {
	Op        AugOp
	Magnitude float64
}

// linspace32 is torch.linspace in float32 (the CPU kernel: the first half
// counted from start, the second from end).
func linspace32(start, end float32, steps int) []float32 {
	out := make([]float32, steps)
	if steps == 1 {
		out[0] = start
		return out
	}
	step := (end - start) / float32(steps-1)
	half := steps / 2
	for i := range out {
		if i < half {
			out[i] = start + float32(step*float32(i))
		} else {
			out[i] = end - float32(step*float32(steps-i-1))
		}
	}
	return out
}

// posterizeBits is 8 - round(arange(bins) / ((bins-1)/div)), torchvision's
// Posterize magnitudes (div 6 for TrivialAugmentWide, 4 otherwise).
func posterizeBits(bins int, div float64) []float32 {
	out := make([]float32, bins)
	d := float32(float64(bins-1) / div)
	for i := range out {
		out[i] = float32(8 - int(math.RoundToEven(float64(float32(i)/d))))
	}
	return out
}

// MagnitudeTable holds the magnitudes of each op of a policy (nil: the op
// takes none).
type MagnitudeTable [numAugOps][]float32

// TrivialAugmentTable is TrivialAugmentWide's augmentation space.
func TrivialAugmentTable(bins int) *MagnitudeTable {
	t := new(MagnitudeTable)
	for _, o := range []AugOp{OpShearX, OpShearY, OpBrightness, OpColor, OpContrast, OpSharpness} {
		t[o] = linspace32(0, 0.99, bins)
	}
	t[OpTranslateX] = linspace32(0, 32, bins)
	t[OpTranslateY] = linspace32(0, 32, bins)
	t[OpRotate] = linspace32(0, 135, bins)
	t[OpPosterize] = posterizeBits(bins, 6)
	t[OpSolarize] = linspace32(255, 0, bins)
	return t
}

// RandAugmentTable is RandAugment's and AutoAugment's augmentation space
// for a w x h image (translations up to 150/331 of the side).
func RandAugmentTable(bins, w, h int) *MagnitudeTable {
	t := new(MagnitudeTable)
	for _, o := range []AugOp{OpShearX, OpShearY} {
		t[o] = linspace32(0, 0.3, bins)
	}
	t[OpTranslateX] = linspace32(0, float32(150.0/331.0*float64(w)), bins)
	t[OpTranslateY] = linspace32(0, float32(150.0/331.0*float64(h)), bins)
	t[OpRotate] = linspace32(0, 30, bins)
	for _, o := range []AugOp{OpBrightness, OpColor, OpContrast, OpSharpness} {
		t[o] = linspace32(0, 0.9, bins)
	}
	t[OpPosterize] = posterizeBits(bins, 4)
	t[OpSolarize] = linspace32(255, 0, bins)
	return t
}

// TrivialAugmentWide is torchvision's TrivialAugmentWide(num_magnitude_bins,
// interpolation, fill): one op uniform among 14, a magnitude bin uniform
// among Bins (0 means 31), a random sign for the signed ops. Interp is
// torchvision's default NEAREST at zero; Fill nil is its fill=None.
type TrivialAugmentWide struct {
	Bins   int
	Interp Interp
	Fill   []float64
}

// trivialAugment31 is TrivialAugmentWide's default table (31 bins).
var trivialAugment31 = TrivialAugmentTable(31)

// Draw draws the op as torchvision does: the op index, then (for ops
// with magnitudes) the bin, then (for signed ops) the sign.
func (ta *TrivialAugmentWide) Draw(rng *rand.Rand) AugStep {
	table := trivialAugment31
	if ta.Bins != 0 && ta.Bins != 31 {
		table = TrivialAugmentTable(ta.Bins)
	}
	op := AugOp(rng.IntN(int(OpInvert)))
	st := AugStep{Op: op}
	if mags := table[op]; mags != nil {
		st.Magnitude = float64(mags[rng.IntN(len(mags))])
	}
	if op.signed() && rng.IntN(2) == 1 {
		st.Magnitude = -st.Magnitude
	}
	return st
}

// Apply applies a drawn step to m in place.
func (ta *TrivialAugmentWide) Apply(s *Scratch, m *imgcodec.Image, st AugStep) error {
	return s.ApplyAugOp(m, st, ta.Interp, ta.Fill)
}

// RandAugment is torchvision's RandAugment(num_ops, magnitude,
// num_magnitude_bins, interpolation, fill): N ops (0 means 2), each
// uniform among 14, at magnitude bin M (out of Bins, 0 meaning 31; M = 0
// is bin 0, use torchvision's default 9 explicitly), with a random sign for
// the signed ops.
type RandAugment struct {
	N, M, Bins int
	Interp     Interp
	Fill       []float64
}

// Draw appends the N steps for a w x h image to dst, drawn as torchvision
// does: for each op, its index, then its sign if signed.
func (ra *RandAugment) Draw(rng *rand.Rand, w, h int, dst []AugStep) []AugStep {
	n, bins := ra.N, ra.Bins
	if n == 0 {
		n = 2
	}
	if bins == 0 {
		bins = 31
	}
	t := RandAugmentTable(bins, w, h)
	for range n {
		op := AugOp(rng.IntN(int(OpInvert)))
		st := AugStep{Op: op}
		if mags := t[op]; mags != nil {
			st.Magnitude = float64(mags[min(ra.M, len(mags)-1)])
		}
		if op.signed() && rng.IntN(2) == 1 {
			st.Magnitude = -st.Magnitude
		}
		dst = append(dst, st)
	}
	return dst
}

// policyOp is one half of an AutoAugment sub-policy: an op, its
// probability and its magnitude bin (-1: none).
type policyOp struct {
	op  AugOp
	p   float64
	bin int
}

// ImageNetPolicy is AutoAugment's ImageNet policy as torchvision 0.14
// lists it: 25 sub-policies of two ops.
var ImageNetPolicy = [25][2]policyOp{
	{{OpPosterize, 0.4, 8}, {OpRotate, 0.6, 9}},
	{{OpSolarize, 0.6, 5}, {OpAutoContrast, 0.6, -1}},
	{{OpEqualize, 0.8, -1}, {OpEqualize, 0.6, -1}},
	{{OpPosterize, 0.6, 7}, {OpPosterize, 0.6, 6}},
	{{OpEqualize, 0.4, -1}, {OpSolarize, 0.2, 4}},
	{{OpEqualize, 0.4, -1}, {OpRotate, 0.8, 8}},
	{{OpSolarize, 0.6, 3}, {OpEqualize, 0.6, -1}},
	{{OpPosterize, 0.8, 5}, {OpEqualize, 1.0, -1}},
	{{OpRotate, 0.2, 3}, {OpSolarize, 0.6, 8}},
	{{OpEqualize, 0.6, -1}, {OpPosterize, 0.4, 6}},
	{{OpRotate, 0.8, 8}, {OpColor, 0.4, 0}},
	{{OpRotate, 0.4, 9}, {OpEqualize, 0.6, -1}},
	{{OpEqualize, 0.0, -1}, {OpEqualize, 0.8, -1}},
	{{OpInvert, 0.6, -1}, {OpEqualize, 1.0, -1}},
	{{OpColor, 0.6, 4}, {OpContrast, 1.0, 8}},
	{{OpRotate, 0.8, 8}, {OpColor, 1.0, 2}},
	{{OpColor, 0.8, 8}, {OpSolarize, 0.8, 7}},
	{{OpSharpness, 0.4, 7}, {OpInvert, 0.6, -1}},
	{{OpShearX, 0.6, 5}, {OpEqualize, 1.0, -1}},
	{{OpColor, 0.4, 0}, {OpEqualize, 0.6, -1}},
	{{OpEqualize, 0.4, -1}, {OpSolarize, 0.2, 4}},
	{{OpSolarize, 0.6, 5}, {OpAutoContrast, 0.6, -1}},
	{{OpInvert, 0.6, -1}, {OpEqualize, 1.0, -1}},
	{{OpColor, 0.6, 4}, {OpContrast, 1.0, 8}},
	{{OpEqualize, 0.8, -1}, {OpEqualize, 0.6, -1}},
}

// AutoAugment is torchvision's AutoAugment(AutoAugmentPolicy.IMAGENET,
// interpolation, fill).
type AutoAugment struct {
	Interp Interp
	Fill   []float64
	Policy AutoAugmentPolicy // IMAGENET (the zero value), CIFAR10 or SVHN
}

// Draw appends the steps of one sample (zero, one or two) for a w x h
// image to dst, drawn as torchvision's get_params: the sub-policy, two
// uniform numbers (op i runs when its number is <= its probability), two
// signs (a signed magnitude is negated when its sign is 0).
func (aa *AutoAugment) Draw(rng *rand.Rand, w, h int, dst []AugStep) []AugStep {
	policies := aa.Policy.subPolicies()
	pol := policies[rng.IntN(len(policies))]
	probs := [2]float64{rng.Float64(), rng.Float64()}
	signs := [2]int{rng.IntN(2), rng.IntN(2)}
	var t *MagnitudeTable
	for i, po := range pol {
		if !(probs[i] <= po.p) {
			continue
		}
		st := AugStep{Op: po.op}
		if po.bin >= 0 {
			if t == nil {
				t = RandAugmentTable(10, w, h)
			}
			st.Magnitude = float64(t[po.op][po.bin])
		}
		if po.op.signed() && signs[i] == 0 {
			st.Magnitude = -st.Magnitude
		}
		dst = append(dst, st)
	}
	return dst
}

// ApplyAugOp applies one step to m in place as torchvision's _apply_op on
// a uint8 tensor: the geometric ops through Warp with interp and fill,
// the others through the ops of this package.
func (s *Scratch) ApplyAugOp(m *imgcodec.Image, st AugStep, interp Interp, fill []float64) error {
	if interp.onPIL() { // on a PIL image: PIL's colour ops
		if ok, err := s.applyColorPIL(m, st); ok {
			return err
		}
	}
	mag := st.Magnitude
	switch st.Op {
	case OpIdentity:
		return checkImage(m)
	case OpShearX, OpShearY:
		sh := math.Atan(mag) * 180 / math.Pi
		if interp.onPIL() {
			sh = pilAtan(mag) * radToDeg // PIL's warps: CPython's math.degrees(math.atan(mag))
		}
		p := AffineParams{Scale: 1, ShearX: sh}
		if st.Op == OpShearY {
			p = AffineParams{Scale: 1, ShearY: sh}
		}
		return s.Affine(m, p, interp, &[2]float64{0, 0}, fill)
	case OpTranslateX:
		return s.Affine(m, AffineParams{Scale: 1, Translate: [2]int{int(mag), 0}}, interp, nil, fill)
	case OpTranslateY:
		return s.Affine(m, AffineParams{Scale: 1, Translate: [2]int{0, int(mag)}}, interp, nil, fill)
	case OpRotate:
		return s.Rotate(m, mag, interp, nil, fill)
	case OpBrightness:
		return AdjustBrightness(m, 1+mag)
	case OpColor:
		return AdjustSaturation(m, 1+mag)
	case OpContrast:
		return AdjustContrast(m, 1+mag)
	case OpSharpness:
		return s.AdjustSharpness(m, 1+mag)
	case OpPosterize:
		return Posterize(m, int(mag))
	case OpSolarize:
		return Solarize(m, mag)
	case OpAutoContrast:
		return AutoContrast(m)
	case OpEqualize:
		return Equalize(m)
	case OpInvert:
		return Invert(m)
	}
	return fmt.Errorf("augment: unknown op %v", st.Op)
}

// Posterize keeps the top bits (0 to 8) of every value, torchvision's
// posterize.
func Posterize(m *imgcodec.Image, bits int) error {
	if err := checkImage(m); err != nil {
		return err
	}
	if bits < 0 || bits > 8 {
		return fmt.Errorf("augment: posterize to %d bits", bits)
	}
	mask := uint8(0xff << (8 - bits))
	var lut [256]uint8
	for v := range 256 {
		lut[v] = uint8(v) & mask
	}
	applyLUT(m, &lut)
	return nil
}

// Solarize inverts every value at or above threshold, torchvision's
// solarize.
func Solarize(m *imgcodec.Image, threshold float64) error {
	if err := checkImage(m); err != nil {
		return err
	}
	thr := float32(threshold)
	var lut [256]uint8
	for v := range 256 {
		lut[v] = uint8(v)
		if float32(v) >= thr {
			lut[v] = 255 - uint8(v)
		}
	}
	applyLUT(m, &lut)
	return nil
}

// Invert is 255 - v, torchvision's invert.
func Invert(m *imgcodec.Image) error {
	if err := checkImage(m); err != nil {
		return err
	}
	var lut [256]uint8
	for v := range 256 {
		lut[v] = 255 - uint8(v)
	}
	applyLUT(m, &lut)
	return nil
}

// channelLUT applies one table per channel.
func channelLUT(m *imgcodec.Image, luts *[3][256]uint8) {
	ch := m.Channels
	for y := 0; y < m.Height; y++ {
		row := m.Pix[y*m.Stride:][:m.Width*ch]
		if ch == 1 {
			for i, v := range row {
				row[i] = luts[0][v]
			}
			continue
		}
		for x := 0; x < len(row); x += 3 {
			p := row[x : x+3 : x+3]
			p[0], p[1], p[2] = luts[0][p[0]], luts[1][p[1]], luts[2][p[2]]
		}
	}
}

func histograms(m *imgcodec.Image) (h [3][256]int) {
	ch := m.Channels
	for y := 0; y < m.Height; y++ {
		row := m.Pix[y*m.Stride:][:m.Width*ch]
		if ch == 1 {
			for _, v := range row {
				h[0][v]++
			}
			continue
		}
		for x := 0; x < len(row); x += 3 {
			p := row[x : x+3 : x+3]
			h[0][p[0]]++
			h[1][p[1]]++
			h[2][p[2]]++
		}
	}
	return h
}

// AutoContrast stretches each channel to [0, 255], torchvision's
// autocontrast: (v - min) * (255 / (max - min)) in float32, truncated; a
// flat channel is left alone.
func AutoContrast(m *imgcodec.Image) error {
	if err := checkImage(m); err != nil {
		return err
	}
	hist := histograms(m)
	var luts [3][256]uint8
	for c := range m.Channels {
		lo, hi := 0, 255
		for lo < 255 && hist[c][lo] == 0 {
			lo++
		}
		for hi > 0 && hist[c][hi] == 0 {
			hi--
		}
		mn, scale := float32(lo), float32(255)/float32(hi-lo)
		if hi == lo {
			mn, scale = 0, 1
		}
		for v := range 256 {
			luts[c][v] = clamp8(float32((float32(v) - mn) * scale))
		}
	}
	channelLUT(m, &luts)
	return nil
}

// Equalize equalises the histogram of each channel, torchvision's
// equalize (PIL's ImageOps.equalize rule).
func Equalize(m *imgcodec.Image) error {
	if err := checkImage(m); err != nil {
		return err
	}
	hist := histograms(m)
	var luts [3][256]uint8
	for c := range m.Channels {
		h := &hist[c]
		last, total := -1, 0
		for v := range 256 {
			if h[v] != 0 {
				last = v
			}
			total += h[v]
		}
		step := 0
		if last >= 0 {
			step = (total - h[last]) / 255
		}
		if step == 0 {
			for v := range 256 {
				luts[c][v] = uint8(v)
			}
			continue
		}
		cum := 0
		luts[c][0] = 0
		for v := range 255 {
			cum += h[v]
			luts[c][v+1] = uint8(min((cum+step/2)/step, 255))
		}
	}
	channelLUT(m, &luts)
	return nil
}

// AdjustSharpness blends m with its smoothed copy (3x3 kernel
// [1 1 1; 1 5 1; 1 1 1]/13, borders kept), torchvision's adjust_sharpness:
// factor 0 gives the smoothed image, 1 the image, 2 a sharpened one.
func (s *Scratch) AdjustSharpness(m *imgcodec.Image, factor float64) error {
	if err := checkImage(m); err != nil {
		return err
	}
	w, h, ch := m.Width, m.Height, m.Channels
	if w <= 2 || h <= 2 {
		return nil
	}
	rowLen := w * ch
	s.src = packRows(s.src, m, rowLen*h)
	src := s.src
	k1 := float32(1) / 13
	k5 := float32(5) / 13
	var l1, l5 [256]float32
	for v := range 256 {
		l1[v] = float32(k1 * float32(v))
		l5[v] = float32(k5 * float32(v))
	}
	a, b := float32(factor), float32(1-factor)
	var la [256]float32
	for v := range 256 {
		la[v] = float32(a * float32(v))
	}
	for y := 0; y < h; y++ {
		mid := src[y*rowLen:][:rowLen]
		out := m.Pix[y*m.Stride:][:rowLen]
		if y == 0 || y == h-1 { // the border keeps its values, then blends with itself
			for i, v := range mid {
				out[i] = clamp8(la[v] + float32(b*float32(v)))
			}
			continue
		}
		up, dn := src[(y-1)*rowLen:][:rowLen], src[(y+1)*rowLen:][:rowLen]
		for i := range rowLen {
			blur := mid[i]
			if i >= ch && i < rowLen-ch {
				acc := l1[up[i-ch]] + l1[up[i]] + l1[up[i+ch]] +
					l1[mid[i-ch]] + l5[mid[i]] + l1[mid[i+ch]] +
					l1[dn[i-ch]] + l1[dn[i]] + l1[dn[i+ch]]
				blur = round8(acc)
			}
			out[i] = clamp8(la[mid[i]] + float32(b*float32(blur)))
		}
	}
	return nil
}
