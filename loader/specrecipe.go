package loader

import (
	"fmt"
	"math"

	"github.com/faster-training/faster/augment"
)

// recipeProblems checks the fixed recipes' parameters (Spec.Recipe) as
// torchvision checks its transforms' (torch draws in float32: a NaN, an
// infinity or a bound beyond float32 raises "out of bounds for float"),
// each problem named recipe.<field>; the bounds that size allocations
// (resize, magnitude bins) before anything is sized by them.
func (s *Spec) recipeProblems() []augment.Problem {
	p := &s.Recipe
	var ps []augment.Problem
	add := func(field, format string, a ...any) {
		ps = append(ps, augment.Problem{Field: "recipe." + field, Msg: fmt.Sprintf(format, a...)})
	}
	pair := func(field string, v augment.Nums) bool {
		if v != nil && len(v) != 2 {
			add(field, "%v: want two numbers LO,HI", []float64(v))
			return false
		}
		return v != nil
	}
	if p.Name != "" {
		if _, err := augment.NamedRecipe(p.Name); err != nil {
			add("augment_recipe", "%q: want one of %s", p.Name, joinComma(augment.RecipeNames))
		}
	}
	if v := p.CropScale; pair("crop_scale", v) && !(v[0] >= 0 && v[0] <= v[1] && v[1] <= 1) {
		add("crop_scale", "%v: want LO,HI with 0 <= LO <= HI <= 1 (fractions of the image's area)", []float64(v))
	}
	if r := p.CropRatio; pair("crop_ratio", r) && !(float32(r[0]) > 0 && r[0] <= r[1] && r[1] <= math.MaxFloat32) {
		add("crop_ratio", "%v: want LO,HI with 0 < LO <= HI <= %g (torchvision draws log(ratio) in float32: 0, NaN or Inf raise \"out of bounds for float\")",
			[]float64(r), float32(math.MaxFloat32))
	}
	if f := p.FlipP(); !(f >= 0 && f <= 1) {
		add("flip_prob", "%g: want a probability in [0, 1]", f)
	}
	if p.Resize != 0 && (p.Resize < s.Resolution || p.Resize > MaxResolution) {
		add("resize", "%d: want 0 (resolution*256/224) or %d to %d: at least the resolution (torchvision would pad the crop), at most the side of the decoder's limit of %d pixels",
			p.Resize, s.Resolution, MaxResolution, MaxResolution*MaxResolution)
	}
	switch p.Interpolation {
	case "", "bilinear", "bicubic", "nearest":
	default:
		add("interpolation", "%q: want bilinear, bicubic or nearest", p.Interpolation)
	}
	switch {
	case (p.Mean == nil) != (p.Std == nil):
		add("mean", "mean and std go together")
	case p.Mean != nil && len(p.Mean) != 3, p.Std != nil && len(p.Std) != 3:
		add("mean", "mean %v, std %v: want three numbers R,G,B", []float64(p.Mean), []float64(p.Std))
	default:
		for i := range p.Mean {
			if m := p.Mean[i]; !(math.Abs(m) <= math.MaxFloat32) {
				add("mean", "%v: want finite numbers (float32s)", []float64(p.Mean))
				break
			}
		}
		for i := range p.Std {
			// torchvision: "std evaluated to zero after conversion to
			// torch.float32, leading to division by zero".
			if sd := p.Std[i]; !(sd <= math.MaxFloat32 && float32(sd) > 0) {
				add("std", "%v: want positive numbers, finite and above 0 as float32s", []float64(p.Std))
				break
			}
		}
	}
	ps = append(ps, s.augmentParamProblems()...)
	if p.ErasingProb > 0 && s.Layout == U8HWC {
		add("erasing_prob", "RandomErasing works on the normalised tensor: it needs layout f32-chw")
	}
	return ps
}

// augmentParamProblems checks the train recipe's augmentations
// (auto_augment … erasing_value).
func (s *Spec) augmentParamProblems() []augment.Problem {
	p := &s.Recipe
	var ps []augment.Problem
	add := func(field, format string, a ...any) {
		ps = append(ps, augment.Problem{Field: "recipe." + field, Msg: fmt.Sprintf(format, a...)})
	}
	prob := func(field string, v float64) {
		if !(v >= 0 && v <= 1) {
			add(field, "%g: want a probability in [0, 1]", v)
		}
	}
	switch p.AutoAugment {
	case "", "none", "ta-wide", "ta_wide", "ra", "imagenet", "augmix":
	default:
		add("auto_augment", "%q: want ta-wide, ra, imagenet or augmix", p.AutoAugment)
	}
	n, bins, sev := cmpOr(p.RaN, 2), cmpOr(p.MagnitudeBins, 31), cmpOr(p.AugMixSeverity, 3)
	m := 9
	if p.RaM != nil {
		m = *p.RaM
	}
	if n < 1 || n > augment.MaxRandAugmentOps {
		add("ra_n", "%d: want 1 to %d ops", n, augment.MaxRandAugmentOps)
	}
	if bins < 2 || bins > augment.MaxMagnitudeBins {
		// Every draw builds a table of the bins for each op.
		add("magnitude_bins", "%d: want 2 to %d", bins, augment.MaxMagnitudeBins)
	} else if m < 0 || m >= bins {
		add("ra_m", "%d: want a bin in [0, %d) (magnitude_bins)", m, bins)
	}
	if sev < 1 || sev > 10 {
		add("augmix_severity", "%d: want 1 to 10", sev)
	}
	switch p.AugmentInterpolation {
	case "", "nearest", "bilinear":
	case "bicubic": // PIL's warps: the fixed recipe's policy and warps come before ToTensor
		if p.AutoAugment == "augmix" {
			add("augment_interpolation", "\"bicubic\" with auto_augment augmix: torchvision's AugMix warps tensors, which it refuses bicubic (Interpolation mode 'bicubic' is unsupported with Tensor input); want nearest or bilinear")
		}
	default:
		add("augment_interpolation", "%q: want nearest, bilinear or bicubic", p.AugmentInterpolation)
	}
	if f := p.AugmentFill; f != nil {
		if len(f) != 1 && len(f) != 3 {
			add("augment_fill", "%v: want one number or R,G,B", []float64(f))
		} else {
			for _, v := range f {
				if !(v >= 0 && v <= 255) {
					add("augment_fill", "%v: want values in 0..255", []float64(f))
					break
				}
			}
		}
	}
	if j := p.ColorJitter; j != nil {
		if len(j) != 4 && len(j) != 8 {
			add("color_jitter", "%v: want four numbers B,C,S,H or eight (LO,HI each)", []float64(j))
		} else if err := jitterOp(j).Check(); err != nil || !jitterScalarsOK(j) {
			add("color_jitter", "%v: out of range (want B,C,S >= 0 and hue in [0, 0.5]; ranges LO <= HI, hue within [-0.5, 0.5], B,C,S at most %g: torchvision draws them in float32)",
				[]float64(j), float32(math.MaxFloat32))
		}
	}
	prob("grayscale_prob", p.GrayscaleProb)
	ps = append(ps, s.geometryProblems()...)
	prob("erasing_prob", p.ErasingProb)
	if v := p.ErasingScale; v != nil && (len(v) != 2 || !(v[0] >= 0 && v[0] <= v[1] && v[1] <= 1)) {
		add("erasing_scale", "%v: want LO,HI with 0 <= LO <= HI <= 1", []float64(v))
	}
	// torchvision takes log(ratio) in float32: inf or 1e300 raise "out of
	// bounds for float".
	if r := p.ErasingRatio; r != nil && (len(r) != 2 || !(r[0] >= 1e-9 && r[0] <= r[1] && r[1] <= math.MaxFloat32)) {
		add("erasing_ratio", "%v: want LO,HI with 1e-09 <= LO <= HI <= %g (torchvision draws log(ratio) in float32: Inf or 1e300 raise \"out of bounds for float\")",
			[]float64(r), float32(math.MaxFloat32))
	}
	if _, err := augment.ParseErasingValue(p.ErasingValue); err != nil {
		add("erasing_value", "%q: want one number, R,G,B or random", p.ErasingValue)
	}
	if s.Transform != Train && p.Name == "" && augmentsOn(p) {
		ps = append(ps, augment.Problem{Field: "recipe", Msg: "auto_augment, affine_*, rotate_degrees, color_jitter, grayscale_prob, blur_* and erasing_prob apply to transform train"})
	}
	return ps
}

// geometryProblems checks RandomAffine's, RandomRotation's and
// GaussianBlur's parameters.
func (s *Spec) geometryProblems() []augment.Problem {
	p := &s.Recipe
	var ps []augment.Problem
	add := func(field, format string, a ...any) {
		ps = append(ps, augment.Problem{Field: "recipe." + field, Msg: fmt.Sprintf(format, a...)})
	}
	for _, d := range []struct {
		field string
		v     augment.Nums
	}{{"rotate_degrees", p.RotateDegrees}, {"affine_degrees", p.AffineDegrees}} {
		if _, ok := degreeRange(d.v); d.v != nil && !ok {
			add(d.field, "%v: want D in 0..360 (uniform in -D..D) or LO,HI with LO <= HI", []float64(d.v))
		}
	}
	if t := p.AffineTranslate; t != nil && (len(t) != 2 || !(t[0] >= 0 && t[0] <= 1 && t[1] >= 0 && t[1] <= 1)) {
		add("affine_translate", "%v: want TX,TY, fractions in [0, 1]", []float64(t))
	}
	if sc := p.AffineScale; sc != nil && (len(sc) != 2 || !(sc[0] > 0 && sc[0] <= sc[1] && sc[1] <= 100)) {
		add("affine_scale", "%v: want LO,HI with 0 < LO <= HI", []float64(sc))
	}
	if sh := p.AffineShear; sh != nil {
		ok := len(sh) == 1 && sh[0] >= 0 && sh[0] < 90 ||
			len(sh) == 2 && sh[0] <= sh[1] && sh[0] > -90 && sh[1] < 90 ||
			len(sh) == 4 && sh[0] <= sh[1] && sh[2] <= sh[3] && sh[0] > -90 && sh[1] < 90 && sh[2] > -90 && sh[3] < 90
		if !ok {
			add("affine_shear", "%v: want S (-S..S in x), XLO,XHI, or XLO,XHI,YLO,YHI, in degrees within (-90, 90)", []float64(sh))
		}
	}
	if (p.AffineTranslate != nil || p.AffineScale != nil || p.AffineShear != nil) && p.AffineDegrees == nil {
		add("affine_degrees", "affine_translate, affine_scale and affine_shear need affine_degrees (0 for no rotation), as RandomAffine's degrees is required")
	}
	if k := p.BlurKernel; k != nil {
		switch {
		case len(k) != 1 && len(k) != 2:
			add("blur_kernel", "%v: want K or KW,KH", k)
		default:
			for _, x := range k {
				if x < 1 || x%2 == 0 || x > augment.MaxBlurKernel {
					add("blur_kernel", "%v: want odd sizes from 1 to %d", k, augment.MaxBlurKernel)
					break
				}
				if s.Transform == Train && x/2 >= s.Resolution && s.Resolution >= 1 {
					// torchvision's reflect padding must be below the side.
					add("blur_kernel", "%v: want sizes at most %d at resolution %d (torchvision's padding must be below the picture's side)",
						k, 2*s.Resolution-1, s.Resolution)
					break
				}
			}
		}
	}
	if sg := p.BlurSigma; sg != nil {
		// float32(LO) > 0: torchvision draws sigma in float32, and a sigma
		// of 0 raises "sigma should have positive values".
		switch {
		case p.BlurKernel == nil:
			add("blur_sigma", "needs blur_kernel")
		case !(len(sg) == 1 && float32(sg[0]) > 0 && sg[0] <= 100 || len(sg) == 2 && float32(sg[0]) > 0 && sg[0] <= sg[1] && sg[1] <= 100):
			add("blur_sigma", "%v: want S or LO,HI with 0 < LO <= HI <= 100 (LO above 0 as a float32)", []float64(sg))
		}
	}
	return ps
}

// degreeRange reads a torchvision degrees argument: D means -D..D.
func degreeRange(v augment.Nums) ([2]float64, bool) {
	switch {
	case len(v) == 1 && v[0] >= 0 && v[0] <= 360:
		return [2]float64{-v[0], v[0]}, true
	case len(v) == 2 && v[0] <= v[1] && v[0] >= -360 && v[1] <= 360:
		return [2]float64{v[0], v[1]}, true
	}
	return [2]float64{}, false
}

// jitterScalarsOK checks ColorJitter's four scalars: B, C, S >= 0, hue
// in [0, 0.5].
func jitterScalarsOK(j augment.Nums) bool {
	if len(j) != 4 {
		return true
	}
	for k, v := range j {
		if !(v >= 0 && (k != 3 || v <= 0.5)) {
			return false
		}
	}
	return true
}

// jitterOp is ColorJitter of the flag's four scalars or eight bounds.
func jitterOp(j augment.Nums) *augment.ColorJitter {
	if len(j) == 4 {
		return &augment.ColorJitter{Brightness: augment.JitterRange(j[0], 1), Contrast: augment.JitterRange(j[1], 1),
			Saturation: augment.JitterRange(j[2], 1), Hue: augment.JitterRange(j[3], 0)}
	}
	return &augment.ColorJitter{Brightness: [2]float64{j[0], j[1]}, Contrast: [2]float64{j[2], j[3]},
		Saturation: [2]float64{j[4], j[5]}, Hue: [2]float64{j[6], j[7]}}
}

// augmentsOn says whether a train-only augmentation is on.
func augmentsOn(p *augment.Params) bool {
	return (p.AutoAugment != "" && p.AutoAugment != "none") || p.ColorJitter != nil || p.GrayscaleProb > 0 || p.ErasingProb > 0 ||
		p.RotateDegrees != nil || p.AffineDegrees != nil || p.BlurKernel != nil
}

// applyRecipe sets the fixed recipes' options of o from p (checked by
// recipeProblems): the crop, flip, resize, interpolation, normalisation,
// and the augmentations as augment ops in the recipe's fixed order, as
// cmd/faster's flags set them.
func applyRecipe(p augment.Params, o *Options) {
	if p.CropScale != nil {
		o.CropScale = [2]float64{p.CropScale[0], p.CropScale[1]}
	}
	if p.CropRatio != nil {
		o.CropRatio = [2]float64{p.CropRatio[0], p.CropRatio[1]}
	}
	o.FlipProb = p.FlipP()
	o.NoFlip = o.FlipProb == 0
	o.Resize, o.Interpolation = p.Resize, p.Interpolation
	if o.Interpolation == "" {
		o.Interpolation = "bilinear" // the flags' default, the loader's ""
	}
	if p.Mean != nil {
		for i := range 3 {
			o.Mean[i], o.Std[i] = float32(p.Mean[i]), float32(p.Std[i])
		}
	}
	// The augmentations as the flags build them (augment.Params.TrainOps:
	// the ops of Build's recipe, in the fixed order); checked by
	// recipeProblems.
	o.Augment, o.Erasing, _ = p.TrainOps()
	if o.Resize == 0 && o.Resolution > 0 {
		o.Resize = p.NamedEvalResize(o.Resolution)
	}
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}
