package augment

import (
	"fmt"
	"math"
)

// The ops' parameter checks. Each op's Check refuses, before any sample,
// the parameters torchvision refuses (at construction, or at its first
// draw: torch's uniform_ takes its bounds as float32 and raises "from/to
// is out of bounds for float" for a NaN, an infinity or a value beyond
// float32's range) and the counts that would be allocated or looped over
// per sample without bound. The zero values (torchvision's defaults) pass.
// A loader checks its ops with Check and CheckSize before it opens.

const (
	// MaxMagnitudeBins bounds num_magnitude_bins (TrivialAugmentWide,
	// RandAugment): every draw builds a table of that many magnitudes for
	// each op (torchvision's linspace). 31 is torchvision's default.
	MaxMagnitudeBins = 1024
	// MaxRandAugmentOps bounds RandAugment's num_ops (each sample runs
	// them in turn).
	MaxRandAugmentOps = 16
	// MaxAugMixChains bounds AugMix's mixture_width and chain_depth (each
	// sample runs width x depth ops on copies of the image).
	MaxAugMixChains = 16
	// MaxBlurKernel bounds GaussianBlur's kernel_size.
	MaxBlurKernel = 255
)

// float32Max is the largest bound torch's uniform_ takes.
const float32Max = math.MaxFloat32

// checker is an op with parameters to check.
type checker interface{ Check() error }

// Check checks op's parameters (each op of a Sequence): nil for an op
// without any.
func Check(op ImageOp) error {
	if c, ok := op.(checker); ok && op != nil {
		return c.Check()
	}
	return nil
}

// CheckSize checks op against the side of the square picture it will
// augment: GaussianBlur's kernel must be below twice the side, as
// torchvision's reflect padding requires ("Padding size should be less
// than the corresponding input dimension").
func CheckSize(op ImageOp, side int) error {
	switch o := op.(type) {
	case Sequence:
		for _, x := range o {
			if err := CheckSize(x, side); err != nil {
				return err
			}
		}
	case *GaussianBlurOp:
		if o.KernelW/2 >= side || o.KernelH/2 >= side {
			return fmt.Errorf("augment: GaussianBlur kernel %dx%d on a %dx%d picture: want kernel sizes at most %d (torchvision's reflect padding must be below the side)",
				o.KernelW, o.KernelH, side, side, 2*side-1)
		}
	}
	return nil
}

// Check checks each op.
func (q Sequence) Check() error {
	for _, op := range q {
		if err := Check(op); err != nil {
			return err
		}
	}
	return nil
}

// rangeIn says lo <= r[0] <= r[1] <= hi, false for NaN.
func rangeIn(r [2]float64, lo, hi float64) bool {
	return r[0] >= lo && r[0] <= r[1] && r[1] <= hi
}

// checkFill checks a warp's fill: none, or one or three values in 0..255
// (the picture is uint8).
func checkFill(op string, fill []float64) error {
	if len(fill) != 0 && len(fill) != 1 && len(fill) != 3 {
		return fmt.Errorf("augment: %s fill %v: want one value or three", op, fill)
	}
	for _, v := range fill {
		if !(v >= 0 && v <= 255) {
			return fmt.Errorf("augment: %s fill %v: want values in 0..255", op, fill)
		}
	}
	return nil
}

func checkBins(op string, bins int) error {
	if bins != 0 && (bins < 2 || bins > MaxMagnitudeBins) {
		return fmt.Errorf("augment: %s num_magnitude_bins %d: want 2 to %d", op, bins, MaxMagnitudeBins)
	}
	return nil
}

// Check checks the bins and the fill.
func (ta *TrivialAugmentWide) Check() error {
	if err := checkBins("TrivialAugmentWide", ta.Bins); err != nil {
		return err
	}
	return checkFill("TrivialAugmentWide", ta.Fill)
}

// Check checks num_ops, the magnitude bin and the fill.
func (ra *RandAugment) Check() error {
	if err := checkBins("RandAugment", ra.Bins); err != nil {
		return err
	}
	bins := ra.Bins
	if bins == 0 {
		bins = 31
	}
	switch {
	case ra.N < 0 || ra.N > MaxRandAugmentOps:
		return fmt.Errorf("augment: RandAugment num_ops %d: want 1 to %d (0: 2)", ra.N, MaxRandAugmentOps)
	case ra.M < 0 || ra.M >= bins:
		// torchvision: "index out of bounds" for M >= bins.
		return fmt.Errorf("augment: RandAugment magnitude %d: want a bin in [0, %d)", ra.M, bins)
	}
	return checkFill("RandAugment", ra.Fill)
}

// Check checks the fill.
func (aa *AutoAugment) Check() error { return checkFill("AutoAugment", aa.Fill) }

// Check checks severity (torchvision: "The severity must be between [1,
// 10]"), the chains and alpha.
func (a *AugMix) Check() error {
	switch {
	case a.Severity < 0 || a.Severity > 10:
		return fmt.Errorf("augment: AugMix severity %d: want 1 to 10 (0: 3)", a.Severity)
	case a.Width < 0 || a.Width > MaxAugMixChains || a.Depth > MaxAugMixChains:
		return fmt.Errorf("augment: AugMix mixture_width %d, chain_depth %d: want at most %d each (0: torchvision's defaults)", a.Width, a.Depth, MaxAugMixChains)
	case !(a.Alpha >= 0 && a.Alpha <= float32Max):
		return fmt.Errorf("augment: AugMix alpha %g: want a positive number (0: 1)", a.Alpha)
	}
	return checkFill("AugMix", a.Fill)
}

// Check checks the four ranges as torchvision's _check_input, and that
// each bound is a float32 (torchvision draws the factors in float32: a
// brightness of 3.5e38 raises "to is out of bounds for float").
func (j *ColorJitter) Check() error {
	for k, name := range [4]string{"brightness", "contrast", "saturation", "hue"} {
		r := [4][2]float64{j.Brightness, j.Contrast, j.Saturation, j.Hue}[k]
		lo, hi := 0.0, float32Max
		if k == 3 {
			lo, hi = -0.5, 0.5
		}
		if r != ([2]float64{}) && !rangeIn(r, lo, hi) {
			return fmt.Errorf("augment: ColorJitter %s %v: want %g <= lo <= hi <= %g (torchvision: %s values should be between (%g, %g), drawn in float32)",
				name, r, lo, hi, name, lo, hi)
		}
	}
	return nil
}

// Check checks p.
func (g RandomGrayscale) Check() error {
	if !(g.P >= 0 && g.P <= 1) {
		return fmt.Errorf("augment: RandomGrayscale p %g: want a probability in [0, 1]", g.P)
	}
	return nil
}

// Check checks the kernel (odd, positive: torchvision's "Kernel size value
// should be an odd and positive number") and sigma ("sigma values should be
// positive and of the form (min, max)", drawn in float32).
func (g *GaussianBlurOp) Check() error {
	for _, k := range [2]int{g.KernelW, g.KernelH} {
		if k < 1 || k%2 == 0 || k > MaxBlurKernel {
			return fmt.Errorf("augment: GaussianBlur kernel %dx%d: want odd sizes from 1 to %d", g.KernelW, g.KernelH, MaxBlurKernel)
		}
	}
	if s := g.Sigma; s != ([2]float64{}) && !(float32(s[0]) > 0 && rangeIn(s, 0, float32Max)) {
		// A sigma of 0 as a float32 (1e-300): torchvision raises "sigma
		// should have positive values".
		return fmt.Errorf("augment: GaussianBlur sigma %v: want 0 < min <= max <= %g (min above 0 as a float32)", s, float32Max)
	}
	return nil
}

// checkDegrees checks an angle range drawn by torch's uniform_.
func checkDegrees(op, name string, r [2]float64) error {
	if !rangeIn(r, -float32Max, float32Max) {
		return fmt.Errorf("augment: %s %s %v: want finite (float32) min <= max", op, name, r)
	}
	return nil
}

// Check checks the degrees and the fill.
func (r *RandomRotation) Check() error {
	if err := checkDegrees("RandomRotation", "degrees", r.Degrees); err != nil {
		return err
	}
	return checkFill("RandomRotation", r.Fill)
}

// Check checks degrees, translate ("translation values should be between
// 0 and 1"), scale ("scale values should be positive"), shear and fill.
func (a *RandomAffine) Check() error {
	if err := checkDegrees("RandomAffine", "degrees", a.Degrees); err != nil {
		return err
	}
	if t := a.Translate; t != nil && !(t[0] >= 0 && t[0] <= 1 && t[1] >= 0 && t[1] <= 1) {
		return fmt.Errorf("augment: RandomAffine translate %v: want fractions in [0, 1]", *t)
	}
	if s := a.Scale; s != nil && !(s[0] > 0 && rangeIn(*s, 0, float32Max)) {
		return fmt.Errorf("augment: RandomAffine scale %v: want 0 < min <= max <= %g", *s, float32Max)
	}
	if sh := a.Shear; sh != nil {
		if err := checkDegrees("RandomAffine", "shear", [2]float64{sh[0], sh[1]}); err != nil {
			return err
		}
		if a.ShearY {
			if err := checkDegrees("RandomAffine", "shear", [2]float64{sh[2], sh[3]}); err != nil {
				return err
			}
		}
	}
	return checkFill("RandomAffine", a.Fill)
}

// Check checks p ("Random erasing probability should be between 0 and
// 1"), scale ("Scale should be between 0 and 1"), ratio (log(ratio) is
// drawn in float32: above 0 and at most float32's largest) and the values.
func (e *RandomErasing) Check() error {
	switch {
	case !(e.P >= 0 && e.P <= 1):
		return fmt.Errorf("augment: RandomErasing p %g: want a probability in [0, 1]", e.P)
	case e.Scale != ([2]float64{}) && !rangeIn(e.Scale, 0, 1):
		return fmt.Errorf("augment: RandomErasing scale %v: want 0 <= min <= max <= 1", e.Scale)
	case e.Ratio != ([2]float64{}) && !(float32(e.Ratio[0]) > 0 && rangeIn(e.Ratio, 0, float32Max)):
		return fmt.Errorf("augment: RandomErasing ratio %v: want 0 < min <= max <= %g (torchvision takes log(ratio) in float32)", e.Ratio, float32Max)
	case len(e.Value) != 0 && len(e.Value) != 1 && len(e.Value) != 3:
		return fmt.Errorf("augment: RandomErasing value %v: want one value or three", e.Value)
	}
	for _, v := range e.Value {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("augment: RandomErasing value %v: want finite numbers", e.Value)
		}
	}
	return nil
}
