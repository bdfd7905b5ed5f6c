package main

import (
	"cmp"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/loader"
)

// augmentFlags are the train recipe's augmentations (package augment, after
// the crop and flip) and RandomErasing (after normalising), shared by
// `faster serve`, `faster bench load` and `faster train`; --augment-recipe
// names a set of them (torchvision's classification references). The
// flags have torchvision's meanings and defaults; a flag given explicitly
// overrides the recipe's value.
//
// The ops run in one fixed order, which a torchvision Compose handed to
// faster.Loader must follow: the auto-augment policy, RandomAffine,
// RandomRotation, ColorJitter, RandomGrayscale, GaussianBlur;
// RandomErasing last, on the normalised tensor.
type augmentFlags struct {
	recipe         string
	autoAugment    string
	raN, raM, bins int
	augmixSeverity int
	interp         string
	fill           []float64
	colorJitter    []float64
	grayscale      float64
	rotate         []float64 // RandomRotation's degrees
	affineDegrees  []float64 // RandomAffine's
	affineTrans    []float64
	affineScale    []float64
	affineShear    []float64
	blurKernel     []int // GaussianBlur's kernel_size
	blurSigma      []float64
	erasingProb    float64
	erasingScale   []float64
	erasingRatio   []float64
	erasingValue   string
	fs             *pflag.FlagSet
}

// augmentRecipeNames are the names --augment-recipe takes
// (augment.NamedRecipe; docs/pipeline.md "Named recipes" says the same).
// --recipe is taken by `faster train`'s training recipes (fast), hence the
// longer name.
func augmentRecipeNames() string { return strings.Join(augment.RecipeNames, ", ") }

func (af *augmentFlags) register(f *pflag.FlagSet) {
	af.fs = f
	f.StringVar(&af.recipe, "augment-recipe", "", "train and eval: a named input recipe of torchvision's classification references, "+augmentRecipeNames()+" (docs/pipeline.md; flags given explicitly override its values)")
	f.StringVar(&af.autoAugment, "auto-augment", "", "train: the auto-augment policy after the crop and flip: ta-wide (TrivialAugmentWide), ra (RandAugment), imagenet (AutoAugment's ImageNet policy) or augmix (AugMix); default none")
	f.IntVar(&af.raN, "ra-n", 2, "train: RandAugment's num_ops")
	f.IntVar(&af.raM, "ra-m", 9, "train: RandAugment's magnitude (a bin below --magnitude-bins)")
	f.IntVar(&af.bins, "magnitude-bins", 31, "train: num_magnitude_bins of TrivialAugmentWide and RandAugment (2 to 1024)")
	f.IntVar(&af.augmixSeverity, "augmix-severity", 3, "train: AugMix's severity (1 to 10)")
	f.StringVar(&af.interp, "augment-interpolation", "nearest", "train: the auto-augment policy's interpolation, nearest (torchvision's default) or bilinear (what the references pass)")
	f.Float64SliceVar(&af.fill, "augment-fill", nil, "train: the policy's fill for pixels its warps leave, one number or R,G,B in 0..255 (default torchvision's fill=None: 0)")
	f.Float64SliceVar(&af.colorJitter, "color-jitter", nil, "train: ColorJitter(brightness, contrast, saturation, hue) after the policy: four numbers B,C,S,H as torchvision's scalars, or eight, each a LO,HI range (0,0: off)")
	f.Float64Var(&af.grayscale, "grayscale-prob", 0, "train: RandomGrayscale's p, after ColorJitter")
	f.Float64SliceVar(&af.affineDegrees, "affine-degrees", nil, "train: RandomAffine's degrees after the policy: D (uniform in -D..D) or LO,HI; 0 with --affine-translate/-scale/-shear alone (warps with --augment-interpolation and --augment-fill)")
	f.Float64SliceVar(&af.affineTrans, "affine-translate", nil, "train: RandomAffine's translate TX,TY: up to TX of the width and TY of the height each way")
	f.Float64SliceVar(&af.affineScale, "affine-scale", nil, "train: RandomAffine's scale LO,HI")
	f.Float64SliceVar(&af.affineShear, "affine-shear", nil, "train: RandomAffine's shear: S (x in -S..S), XLO,XHI, or XLO,XHI,YLO,YHI")
	f.Float64SliceVar(&af.rotate, "rotate-degrees", nil, "train: RandomRotation's degrees after RandomAffine: D (uniform in -D..D) or LO,HI (warps with --augment-interpolation and --augment-fill)")
	f.IntSliceVar(&af.blurKernel, "blur-kernel", nil, "train: GaussianBlur's kernel_size after RandomGrayscale: K or KW,KH, odd; default off")
	f.Float64SliceVar(&af.blurSigma, "blur-sigma", nil, "train: GaussianBlur's sigma: S, or LO,HI drawn uniformly per sample (default 0.1,2.0)")
	f.Float64Var(&af.erasingProb, "erasing-prob", 0, "train: RandomErasing's p, on the normalised tensor (f32-chw)")
	f.Float64SliceVar(&af.erasingScale, "erasing-scale", nil, "train: RandomErasing's scale LO,HI (default 0.02,0.33)")
	f.Float64SliceVar(&af.erasingRatio, "erasing-ratio", nil, "train: RandomErasing's ratio LO,HI (default 0.3,3.3)")
	f.StringVar(&af.erasingValue, "erasing-value", "", "train: RandomErasing's value: one number, R,G,B, or random (normal noise); default 0")
}

// resolve sets the recipe's values on the flags not given explicitly, and
// checks them all: a usage error naming the flag.
func (af *augmentFlags) resolve() error {
	if af.fs == nil { // built in Go, not from flags: the zero values are the defaults
		af.raN, af.raM, af.bins, af.augmixSeverity, af.interp = cmp.Or(af.raN, 2), cmp.Or(af.raM, 9), cmp.Or(af.bins, 31),
			cmp.Or(af.augmixSeverity, 3), cmp.Or(af.interp, "nearest")
	}
	if af.recipe != "" {
		// The named recipe's values, on the flags not given explicitly.
		flag := map[string]string{"auto_augment": "auto-augment", "augment_interpolation": "augment-interpolation", "erasing_prob": "erasing-prob"}
		p := augment.Params{AutoAugment: af.autoAugment, AugmentInterpolation: af.interp, ErasingProb: af.erasingProb}
		if err := p.UseNamed(af.recipe, func(field string) bool { return af.fs != nil && af.fs.Changed(flag[field]) }); err != nil {
			return usagef("--augment-recipe %q: want one of %s", af.recipe, augmentRecipeNames())
		}
		af.autoAugment, af.interp, af.erasingProb = p.AutoAugment, p.AugmentInterpolation, p.ErasingProb
	}
	return af.check()
}

func (af *augmentFlags) check() error {
	switch af.autoAugment {
	case "", "none", "ta-wide", "ta_wide", "ra", "imagenet", "augmix":
	default:
		return usagef("--auto-augment %q: want ta-wide, ra, imagenet or augmix", af.autoAugment)
	}
	prob := func(name string, p float64) error {
		if !(p >= 0 && p <= 1) {
			return usagef("--%s %g: want a probability in [0, 1]", name, p)
		}
		return nil
	}
	rng := func(name string, v []float64, lo, hi float64) error {
		if v != nil && (len(v) != 2 || !(v[0] >= lo && v[0] <= v[1] && v[1] <= hi)) {
			return usagef("--%s %v: want LO,HI with %g <= LO <= HI <= %g", name, v, lo, hi)
		}
		return nil
	}
	switch {
	case af.raN < 1 || af.raN > 16:
		return usagef("--ra-n %d: want 1 to 16 ops", af.raN)
	case af.bins < 2 || af.bins > augment.MaxMagnitudeBins:
		// Every draw builds a table of the bins for each op.
		return usagef("--magnitude-bins %d: want 2 to %d", af.bins, augment.MaxMagnitudeBins)
	case af.raM < 0 || af.raM >= af.bins:
		return usagef("--ra-m %d: want a bin in [0, %d) (--magnitude-bins)", af.raM, af.bins)
	case af.augmixSeverity < 1 || af.augmixSeverity > 10:
		return usagef("--augmix-severity %d: want 1 to 10", af.augmixSeverity)
	case af.interp != "nearest" && af.interp != "bilinear":
		return usagef("--augment-interpolation %q: want nearest or bilinear (torchvision's tensor path warps with these)", af.interp)
	case af.fill != nil && len(af.fill) != 1 && len(af.fill) != 3:
		return usagef("--augment-fill %v: want one number or R,G,B", af.fill)
	case af.colorJitter != nil && len(af.colorJitter) != 4 && len(af.colorJitter) != 8:
		return usagef("--color-jitter %v: want four numbers B,C,S,H or eight (LO,HI each)", af.colorJitter)
	}
	for _, v := range af.fill {
		if !(v >= 0 && v <= 255) {
			return usagef("--augment-fill %v: want values in 0..255", af.fill)
		}
	}
	if j := af.colorJitter; j != nil {
		r := af.jitter()
		for k, name := range []string{"brightness", "contrast", "saturation", "hue"} {
			x := [][2]float64{r.Brightness, r.Contrast, r.Saturation, r.Hue}[k]
			// torchvision draws the factors in float32: a bound beyond
			// it (brightness 3.5e38: 1+3.5e38) raises "to is out of
			// bounds for float".
			lo, hi := 0.0, float64(math.MaxFloat32)
			if k == 3 {
				lo, hi = -0.5, 0.5
			}
			if len(j) == 4 && !(j[k] >= 0 && (k != 3 || j[k] <= 0.5)) || !(x[0] >= lo && x[0] <= x[1] && x[1] <= hi) {
				return usagef("--color-jitter %v: %s out of range (want B,C,S >= 0 and hue in [0, 0.5]; ranges LO <= HI, hue within [-0.5, 0.5], B,C,S at most %g: torchvision draws them in float32)",
					j, name, float32(math.MaxFloat32))
			}
		}
	}
	if err := prob("grayscale-prob", af.grayscale); err != nil {
		return err
	}
	if err := af.checkGeometry(); err != nil {
		return err
	}
	if err := prob("erasing-prob", af.erasingProb); err != nil {
		return err
	}
	if err := rng("erasing-scale", af.erasingScale, 0, 1); err != nil {
		return err
	}
	// torchvision takes log(ratio) in float32: inf or 1e300 raise "out of
	// bounds for float".
	if r := af.erasingRatio; r != nil && (len(r) != 2 || !(r[0] >= 1e-9 && r[0] <= r[1] && r[1] <= math.MaxFloat32)) {
		return usagef("--erasing-ratio %v: want LO,HI with 1e-09 <= LO <= HI <= %g (torchvision draws log(ratio) in float32: Inf or 1e300 raise \"out of bounds for float\")",
			r, float32(math.MaxFloat32))
	}
	if _, _, err := af.value(); err != nil {
		return err
	}
	return nil
}

// degrees reads a torchvision degrees argument: D means -D..D.
func degrees(name string, v []float64) ([2]float64, error) {
	switch {
	case len(v) == 1 && v[0] >= 0 && v[0] <= 360:
		return [2]float64{-v[0], v[0]}, nil
	case len(v) == 2 && v[0] <= v[1] && v[0] >= -360 && v[1] <= 360:
		return [2]float64{v[0], v[1]}, nil
	}
	return [2]float64{}, usagef("--%s %v: want D in 0..360 (uniform in -D..D) or LO,HI with LO <= HI", name, v)
}

// checkGeometry checks the RandomAffine, RandomRotation and GaussianBlur
// flags (torchvision's checks of the same arguments).
func (af *augmentFlags) checkGeometry() error {
	if af.rotate != nil {
		if _, err := degrees("rotate-degrees", af.rotate); err != nil {
			return err
		}
	}
	if af.affineDegrees != nil {
		if _, err := degrees("affine-degrees", af.affineDegrees); err != nil {
			return err
		}
	}
	if t := af.affineTrans; t != nil && (len(t) != 2 || !(t[0] >= 0 && t[0] <= 1 && t[1] >= 0 && t[1] <= 1)) {
		return usagef("--affine-translate %v: want TX,TY, fractions in [0, 1]", t)
	}
	if sc := af.affineScale; sc != nil && (len(sc) != 2 || !(sc[0] > 0 && sc[0] <= sc[1] && sc[1] <= 100)) {
		return usagef("--affine-scale %v: want LO,HI with 0 < LO <= HI", sc)
	}
	if sh := af.affineShear; sh != nil {
		ok := len(sh) == 1 && sh[0] >= 0 && sh[0] < 90 ||
			len(sh) == 2 && sh[0] <= sh[1] && sh[0] > -90 && sh[1] < 90 ||
			len(sh) == 4 && sh[0] <= sh[1] && sh[2] <= sh[3] && sh[0] > -90 && sh[1] < 90 && sh[2] > -90 && sh[3] < 90
		if !ok {
			return usagef("--affine-shear %v: want S (-S..S in x), XLO,XHI, or XLO,XHI,YLO,YHI, in degrees within (-90, 90)", sh)
		}
	}
	if (af.affineTrans != nil || af.affineScale != nil || af.affineShear != nil) && af.affineDegrees == nil {
		return usagef("--affine-translate, --affine-scale and --affine-shear need --affine-degrees (0 for no rotation), as RandomAffine's degrees is required")
	}
	if k := af.blurKernel; k != nil {
		if len(k) != 1 && len(k) != 2 {
			return usagef("--blur-kernel %v: want K or KW,KH", k)
		}
		for _, x := range k {
			if x < 1 || x%2 == 0 || x > 255 {
				return usagef("--blur-kernel %v: want odd sizes from 1 to 255", k)
			}
		}
	}
	if sg := af.blurSigma; sg != nil {
		if af.blurKernel == nil {
			return usagef("--blur-sigma needs --blur-kernel")
		}
		// float32(LO) > 0: torchvision draws sigma in float32, and a sigma
		// of 0 raises "sigma should have positive values".
		if !(len(sg) == 1 && float32(sg[0]) > 0 && sg[0] <= 100 || len(sg) == 2 && float32(sg[0]) > 0 && sg[0] <= sg[1] && sg[1] <= 100) {
			return usagef("--blur-sigma %v: want S or LO,HI with 0 < LO <= HI <= 100 (LO above 0 as a float32)", sg)
		}
	}
	return nil
}

// checkSide checks --blur-kernel against the side of the picture the
// augmentations run on (the crop, --resolution): torchvision's reflect
// padding must be below the side ("Padding size should be less than the
// corresponding input dimension"), else every image would fail.
func (af *augmentFlags) checkSide(side int) error {
	for _, k := range af.blurKernel {
		if k/2 >= side {
			return usagef("--blur-kernel %v: want sizes at most %d at --resolution %d (torchvision's padding must be below the picture's side)",
				af.blurKernel, 2*side-1, side)
		}
	}
	return nil
}

// value parses --erasing-value.
func (af *augmentFlags) value() (v []float32, random bool, err error) {
	switch s := strings.TrimSpace(af.erasingValue); s {
	case "", "0":
		return nil, false, nil
	case "random":
		return nil, true, nil
	default:
		parts := strings.Split(s, ",")
		if len(parts) != 1 && len(parts) != 3 {
			return nil, false, usagef("--erasing-value %q: want one number, R,G,B or random", s)
		}
		for _, p := range parts {
			x, err := strconv.ParseFloat(strings.TrimSpace(p), 32)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, false, usagef("--erasing-value %q: want one number, R,G,B or random", s)
			}
			v = append(v, float32(x))
		}
		if len(v) == 1 && v[0] == 0 {
			v = nil // torchvision's default value=0, as "0" ("0.0" from a Compose)
		}
		return v, false, nil
	}
}

func (af *augmentFlags) jitter() *augment.ColorJitter {
	j := af.colorJitter
	if len(j) == 4 {
		return &augment.ColorJitter{Brightness: augment.JitterRange(j[0], 1), Contrast: augment.JitterRange(j[1], 1),
			Saturation: augment.JitterRange(j[2], 1), Hue: augment.JitterRange(j[3], 0)}
	}
	return &augment.ColorJitter{Brightness: [2]float64{j[0], j[1]}, Contrast: [2]float64{j[2], j[3]},
		Saturation: [2]float64{j[4], j[5]}, Hue: [2]float64{j[6], j[7]}}
}

// any says whether a train-only augmentation is on.
func (af *augmentFlags) any() bool {
	return (af.autoAugment != "" && af.autoAugment != "none") || af.colorJitter != nil || af.grayscale > 0 || af.erasingProb > 0 ||
		af.rotate != nil || af.affineDegrees != nil || af.blurKernel != nil
}

// params are the flags' values as the recipe's parameters (augment.Params:
// those of the train recipe after its crop and flip, and the named
// recipe's eval resize). Call after resolve.
func (af *augmentFlags) params() augment.Params {
	p := augment.Params{Name: af.recipe, AutoAugment: af.autoAugment, RaN: af.raN, RaM: &af.raM, MagnitudeBins: af.bins,
		AugMixSeverity: af.augmixSeverity, AugmentInterpolation: af.interp, AugmentFill: af.fill, ColorJitter: af.colorJitter,
		GrayscaleProb: af.grayscale, AffineDegrees: af.affineDegrees, AffineTranslate: af.affineTrans, AffineScale: af.affineScale,
		AffineShear: af.affineShear, RotateDegrees: af.rotate, BlurKernel: af.blurKernel, BlurSigma: af.blurSigma,
		ErasingProb: af.erasingProb, ErasingScale: af.erasingScale, ErasingRatio: af.erasingRatio, ErasingValue: af.erasingValue}
	if p.AutoAugment == "none" {
		p.AutoAugment = ""
	}
	return p
}

// evalResize is the recipe's eval Resize for resolution res (0: the
// loader's default, res*256/224).
func (af *augmentFlags) evalResize(res int) int { return af.params().NamedEvalResize(res) }

// apply sets o.Augment and o.Erasing (and, for a recipe that says so, the
// eval Resize when --resize was not given): augment.Params.TrainOps, the
// ops of the recipe the flags build, in its fixed order. Call after
// resolve.
func (af *augmentFlags) apply(o *loader.Options) {
	o.Augment, o.Erasing, _ = af.params().TrainOps() // checked by resolve
	if o.Resize == 0 && o.Resolution > 0 {
		o.Resize = af.evalResize(o.Resolution)
	}
}
