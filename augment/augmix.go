package augment

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/faster-training/faster/imgcodec"
)

// augMixOps is AugMix's augmentation space in torchvision 0.14's order
// (the last four only with AllOps).
var augMixOps = [...]AugOp{OpShearX, OpShearY, OpTranslateX, OpTranslateY, OpRotate, OpPosterize,
	OpSolarize, OpAutoContrast, OpEqualize, OpBrightness, OpColor, OpContrast, OpSharpness}

// AugMixTable is AugMix's magnitude table (10 bins) for a w x h image.
func AugMixTable(w, h int) *MagnitudeTable {
	t := RandAugmentTable(10, w, h)
	t[OpTranslateX] = linspace32(0, float32(float64(w)/3), 10)
	t[OpTranslateY] = linspace32(0, float32(float64(h)/3), 10)
	p := make([]float32, 10)
	d := float32(9.0 / 4)
	for i := range p {
		p[i] = float32(4 - int(math.RoundToEven(float64(float32(i)/d))))
	}
	t[OpPosterize] = p
	return t
}

// AugMix is torchvision's AugMix(severity, mixture_width, chain_depth,
// alpha, all_ops, interpolation, fill): Width chains of Depth ops (0: 1
// to 3, drawn per chain), each op uniform in the augmentation space, its
// magnitude bin uniform below Severity; the chains mixed with Dirichlet(Alpha)
// weights, and the mix with the image by a Beta(Alpha, Alpha) weight. The
// zero values mean torchvision's defaults: severity 3, width 3, random
// depth, alpha 1. NoBrightnessEtc is all_ops=False. torchvision's default
// interpolation here is BILINEAR: set Interp.
type AugMix struct {
	Severity, Width, Depth int
	Alpha                  float64
	NoBrightnessEtc        bool
	Interp                 Interp
	Fill                   []float64
}

// AugMixParams are one draw of AugMix: the image's weight M0, the
// chains' weights (the Dirichlet draw times the Beta draw's other half,
// in float32 as torchvision multiplies them) and the chains.
type AugMixParams struct {
	M0      float32
	Weights []float32
	Chains  [][]AugStep
}

func (a *AugMix) defaults() (sev, width int, alpha float64) {
	sev, width, alpha = a.Severity, a.Width, a.Alpha
	if sev == 0 {
		sev = 3
	}
	if width == 0 {
		width = 3
	}
	if alpha == 0 {
		alpha = 1
	}
	return
}

// Draw draws the parameters for a w x h image in torchvision's order: the
// Beta weight, the Dirichlet weights, then chain by chain its depth (if
// random) and for each op its index, bin and sign.
func (a *AugMix) Draw(rng *rand.Rand, w, h int) AugMixParams {
	sev, width, alpha := a.defaults()
	g0, g1 := gamma(rng, alpha), gamma(rng, alpha)
	m0, m1 := float32(g0/(g0+g1)), float32(g1/(g0+g1))
	p := AugMixParams{M0: m0, Weights: make([]float32, width), Chains: make([][]AugStep, width)}
	var sum float64
	gs := make([]float64, width)
	for i := range gs {
		gs[i] = gamma(rng, alpha)
		sum += gs[i]
	}
	for i, g := range gs {
		p.Weights[i] = float32(float32(g/sum) * m1)
	}
	t := AugMixTable(w, h)
	nops := len(augMixOps)
	if a.NoBrightnessEtc {
		nops = 9
	}
	for i := range width {
		depth := a.Depth
		if depth <= 0 {
			depth = 1 + rng.IntN(3)
		}
		for range depth {
			op := augMixOps[rng.IntN(nops)]
			st := AugStep{Op: op}
			if mags := t[op]; mags != nil {
				st.Magnitude = float64(mags[rng.IntN(sev)])
			}
			if op.signed() && rng.IntN(2) == 1 {
				st.Magnitude = -st.Magnitude
			}
			p.Chains[i] = append(p.Chains[i], st)
		}
	}
	return p
}

// gamma draws from Gamma(alpha, 1) (Marsaglia and Tsang; alpha < 1 by
// the usual boost).
func gamma(rng *rand.Rand, alpha float64) float64 {
	if alpha < 1 {
		return gamma(rng, alpha+1) * math.Pow(1-rng.Float64(), 1/alpha)
	}
	d := alpha - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := 1 - rng.Float64()
		if math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}

// Apply mixes m with its augmented chains in place, as torchvision's
// forward on a uint8 tensor: M0*img in float32, plus Weights[i]*chain_i(img)
// for each chain in turn, truncated to uint8.
func (a *AugMix) Apply(s *Scratch, m *imgcodec.Image, p AugMixParams) error {
	if err := checkImage(m); err != nil {
		return err
	}
	if len(p.Weights) != len(p.Chains) {
		return fmt.Errorf("augment: AugMix with %d weights for %d chains", len(p.Weights), len(p.Chains))
	}
	w, h, ch := m.Width, m.Height, m.Channels
	rowLen := w * ch
	s.mix = grow(s.mix, rowLen*h)
	s.aug = grow(s.aug, rowLen*h)
	mix := s.mix
	for y := 0; y < h; y++ {
		row := m.Pix[y*m.Stride:][:rowLen]
		out := mix[y*rowLen:][:rowLen]
		for i, v := range row {
			out[i] = float32(p.M0 * float32(v))
		}
	}
	aug := &imgcodec.Image{Pix: s.aug, Width: w, Height: h, Channels: ch, Stride: rowLen}
	for i, chain := range p.Chains {
		for y := 0; y < h; y++ {
			copy(s.aug[y*rowLen:][:rowLen], m.Pix[y*m.Stride:][:rowLen])
		}
		for _, st := range chain {
			if err := s.ApplyAugOp(aug, st, a.Interp, a.Fill); err != nil {
				return err
			}
		}
		wt := p.Weights[i]
		for j, v := range s.aug {
			mix[j] += float32(wt * float32(v))
		}
	}
	for y := 0; y < h; y++ {
		row := m.Pix[y*m.Stride:][:rowLen]
		for i, v := range mix[y*rowLen:][:rowLen] {
			row[i] = clamp8(v)
		}
	}
	return nil
}
