package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/faster-training/faster/augment"
)

// augmentFlags are the train recipe's augmentations (package augment, after
// the crop and flip) and RandomErasing (after normalising), shared by
// `faster serve`, `faster bench load` and `faster train`; --augment-recipe
// names a set of them (torchvision's classification references). The
// flags have torchvision's meanings and defaults; a flag given explicitly
// overrides the recipe's value. They fill the spec's augment.Params
// (loaderFlags.spec, flagtable.go), which the loader's Spec checks and
// builds in the fixed order: the auto-augment policy, RandomAffine,
// RandomRotation, ColorJitter, RandomGrayscale, GaussianBlur; RandomErasing
// last, on the normalised tensor.
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
	f.StringVar(&af.interp, "augment-interpolation", "nearest", "train: the auto-augment policy's and the warps' interpolation, nearest (torchvision's default), bilinear (what the references pass) or bicubic (the Swin and MaxViT recipes; PIL's warps, as torchvision runs them on PIL images; not with augmix)")
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
