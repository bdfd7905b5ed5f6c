package augment

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Params are the parameters of the loader's two fixed recipes, train and
// eval (what `faster serve --transform train|eval` and its recipe flags
// set), typed: Build turns them into the Recipe they mean, in the fixed
// order. A nil slice, an empty string or a zero count is torchvision's
// default (the flags' defaults); FlipProb and RaM are pointers because 0
// is a value of theirs.
type Params struct {
	// Name is the named recipe the values came from (NamedRecipe; "" for
	// none). It carries the eval resize of torchvision-v2 (232 at 224).
	Name string `json:"augment_recipe,omitempty"`

	// Both recipes.
	Interpolation string `json:"interpolation,omitempty"` // bilinear (""), bicubic, nearest
	Mean          Nums   `json:"mean,omitempty"`          // R,G,B in [0, 1] units; nil: ImageNet's
	Std           Nums   `json:"std,omitempty"`

	// Train: RandomResizedCrop, RandomHorizontalFlip.
	CropScale Nums     `json:"crop_scale,omitempty"` // [lo, hi]; nil: (0.08, 1)
	CropRatio Nums     `json:"crop_ratio,omitempty"` // [lo, hi]; nil: (3/4, 4/3)
	FlipProb  *float64 `json:"flip_prob,omitempty"`  // nil: 0.5; 0: no flip

	// Eval: Resize's shorter edge before CenterCrop (0: resolution·256/224,
	// or the named recipe's rule).
	Resize int `json:"resize,omitempty"`

	// Train, after the crop and flip, in this order: the policy,
	// RandomAffine, RandomRotation, ColorJitter, RandomGrayscale,
	// GaussianBlur; RandomErasing on the normalised tensor.
	AutoAugment          string  `json:"auto_augment,omitempty"` // ta-wide, ra, imagenet, augmix ("" or none: off)
	RaN                  int     `json:"ra_n,omitempty"`         // 0: 2
	RaM                  *int    `json:"ra_m,omitempty"`         // nil: 9
	MagnitudeBins        int     `json:"magnitude_bins,omitempty"`
	AugMixSeverity       int     `json:"augmix_severity,omitempty"`       // 0: 3
	AugmentInterpolation string  `json:"augment_interpolation,omitempty"` // nearest (""), bilinear
	AugmentFill          Nums    `json:"augment_fill,omitempty"`          // one number or R,G,B in 0..255
	ColorJitter          Nums    `json:"color_jitter,omitempty"`          // B,C,S,H or eight (LO,HI each)
	GrayscaleProb        float64 `json:"grayscale_prob,omitempty"`
	AffineDegrees        Nums    `json:"affine_degrees,omitempty"` // D or LO,HI
	AffineTranslate      Nums    `json:"affine_translate,omitempty"`
	AffineScale          Nums    `json:"affine_scale,omitempty"`
	AffineShear          Nums    `json:"affine_shear,omitempty"`
	RotateDegrees        Nums    `json:"rotate_degrees,omitempty"`
	BlurKernel           []int   `json:"blur_kernel,omitempty"`
	BlurSigma            Nums    `json:"blur_sigma,omitempty"`
	ErasingProb          float64 `json:"erasing_prob,omitempty"`
	ErasingScale         Nums    `json:"erasing_scale,omitempty"`
	ErasingRatio         Nums    `json:"erasing_ratio,omitempty"`
	ErasingValue         string  `json:"erasing_value,omitempty"` // one number, R,G,B, or random
}

// namedRecipe is what a recipe's name sets: the policy, its
// interpolation, RandomErasing's p and the eval resize per 224 pixels (0:
// 256).
type namedRecipe struct {
	auto, interp string
	erasing      float64
	evalPer224   int
}

// namedRecipes are torchvision's classification references' inputs
// (docs/pipeline.md "Named recipes" says the same).
var namedRecipes = map[string]namedRecipe{
	// ClassificationPresetTrain with auto_augment_policy=None:
	// RandomResizedCrop(bilinear), flip 0.5, PILToTensor, ConvertImageDtype,
	// Normalize; eval Resize(256) + CenterCrop(224). The loader's defaults.
	"torchvision": {},
	// ... with the policy, interpolation=bilinear as the reference passes
	// its --interpolation (default bilinear) to it; random_erase 0 (the
	// reference's default).
	"torchvision-ta-wide": {auto: "ta-wide", interp: "bilinear"},
	"torchvision-ra":      {auto: "ra", interp: "bilinear"},
	"torchvision-aa":      {auto: "imagenet", interp: "bilinear"},
	"torchvision-augmix":  {auto: "augmix", interp: "bilinear"},
	// The reference's v2 ("new training recipe") input: TrivialAugmentWide,
	// RandomErasing(0.1), eval Resize(232) + CenterCrop(224) (resize
	// resolution*232/224; train at resolution 176 as the recipe does).
	"torchvision-v2": {auto: "ta-wide", interp: "bilinear", erasing: 0.1, evalPer224: 232},
}

// RecipeNames are the names NamedRecipe takes.
var RecipeNames = []string{"torchvision", "torchvision-ta-wide", "torchvision-ra", "torchvision-aa", "torchvision-augmix", "torchvision-v2"}

// NamedRecipe is the Params of a named recipe of torchvision's
// classification references (torchvision, torchvision-ta-wide,
// torchvision-ra, torchvision-aa, torchvision-augmix, torchvision-v2).
func NamedRecipe(name string) (Params, error) {
	var p Params
	if err := p.UseNamed(name, nil); err != nil {
		return Params{}, err
	}
	return p, nil
}

// UseNamed sets on p the values the named recipe sets (auto_augment,
// augment_interpolation, erasing_prob) except those kept (set by the user:
// kept is called with the field's JSON name; nil keeps none), and p.Name.
func (p *Params) UseNamed(name string, kept func(field string) bool) error {
	r, ok := namedRecipes[name]
	if !ok {
		return fmt.Errorf("augment recipe %q: want one of %s", name, joinNames(RecipeNames))
	}
	keep := func(f string) bool { return kept != nil && kept(f) }
	p.Name = name
	if !keep("auto_augment") {
		p.AutoAugment = r.auto
	}
	if !keep("augment_interpolation") && r.interp != "" {
		p.AugmentInterpolation = r.interp
	}
	if !keep("erasing_prob") {
		p.ErasingProb = r.erasing
	}
	return nil
}

func joinNames(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// EvalResize is the eval recipe's Resize (the shorter edge) at
// resolution res: Resize if set, else the named recipe's rule
// (torchvision-v2: round(res·232/224)), else res·256/224.
func (p Params) EvalResize(res int) int {
	if p.Resize != 0 {
		return p.Resize
	}
	if r := namedRecipes[p.Name]; r.evalPer224 != 0 {
		return int(math.Round(float64(res) * float64(r.evalPer224) / 224))
	}
	return res * 256 / 224
}

// FlipP is RandomHorizontalFlip's p (0.5 unless set).
func (p Params) FlipP() float64 {
	if p.FlipProb == nil {
		return 0.5
	}
	return *p.FlipProb
}

// Equal says whether p and q are the same parameters.
func (p Params) Equal(q Params) bool {
	eq := slices.Equal[Nums]
	ptrF := func(a, b *float64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
	ptrI := func(a, b *int) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
	return p.Name == q.Name && p.Interpolation == q.Interpolation && eq(p.Mean, q.Mean) && eq(p.Std, q.Std) &&
		eq(p.CropScale, q.CropScale) && eq(p.CropRatio, q.CropRatio) && ptrF(p.FlipProb, q.FlipProb) &&
		p.Resize == q.Resize && p.AutoAugment == q.AutoAugment && p.RaN == q.RaN && ptrI(p.RaM, q.RaM) &&
		p.MagnitudeBins == q.MagnitudeBins && p.AugMixSeverity == q.AugMixSeverity &&
		p.AugmentInterpolation == q.AugmentInterpolation && eq(p.AugmentFill, q.AugmentFill) &&
		eq(p.ColorJitter, q.ColorJitter) && p.GrayscaleProb == q.GrayscaleProb &&
		eq(p.AffineDegrees, q.AffineDegrees) && eq(p.AffineTranslate, q.AffineTranslate) &&
		eq(p.AffineScale, q.AffineScale) && eq(p.AffineShear, q.AffineShear) && eq(p.RotateDegrees, q.RotateDegrees) &&
		slices.Equal(p.BlurKernel, q.BlurKernel) && eq(p.BlurSigma, q.BlurSigma) && p.ErasingProb == q.ErasingProb &&
		eq(p.ErasingScale, q.ErasingScale) && eq(p.ErasingRatio, q.ErasingRatio) && p.ErasingValue == q.ErasingValue
}

// Build is the recipe p means for transform "train" or "eval" at
// resolution res, in the loader's fixed order (train: RandomResizedCrop,
// RandomHorizontalFlip, the policy, RandomAffine, RandomRotation,
// ColorJitter, RandomGrayscale, GaussianBlur, ToTensor, Normalize,
// RandomErasing; eval: Resize, CenterCrop, ToTensor, Normalize), the
// draws the same as the loader's fixed recipes make. "none" is the empty
// recipe. Build does not check the values: Recipe.Problems does.
func (p Params) Build(transform string, res int) (Recipe, error) {
	mean, std := p.Mean, p.Std
	if mean == nil {
		mean = f32s(ImageNetMean)
	}
	if std == nil {
		std = f32s(ImageNetStd)
	}
	interp := p.Interpolation
	if interp == "" {
		interp = "bilinear"
	}
	tail := Recipe{{Op: OpToTensor}, {Op: OpNormalize, Mean: mean, Std: std}}
	switch transform {
	case "none":
		return nil, nil
	case "eval":
		r := Recipe{{Op: OpResize, Size: Nums{float64(p.EvalResize(res))}, Interpolation: interp},
			{Op: OpCenterCrop, Size: Nums{float64(res)}}}
		return append(r, tail...), nil
	case "train":
	default:
		return nil, fmt.Errorf("transform %q: want train, eval or none", transform)
	}
	crop := Op{Op: OpRandomResizedCrop, Size: Nums{float64(res)}, Scale: Nums{0.08, 1}, Ratio: Nums{3.0 / 4, 4.0 / 3}, Interpolation: interp}
	if p.CropScale != nil {
		crop.Scale = slices.Clone(p.CropScale)
	}
	if p.CropRatio != nil {
		crop.Ratio = slices.Clone(p.CropRatio)
	}
	r := Recipe{crop}
	if f := p.FlipP(); f > 0 {
		r = append(r, Op{Op: OpRandomHorizontalFlip, P: &f})
	}
	warp := p.AugmentInterpolation
	if warp == "" {
		warp = "nearest"
	}
	fill := slices.Clone(p.AugmentFill)
	bins := cmpOr(p.MagnitudeBins, 31)
	switch p.AutoAugment {
	case "ta-wide", "ta_wide":
		r = append(r, Op{Op: OpTrivialAugmentWide, NumMagnitudeBins: &bins, Interpolation: warp, Fill: fill})
	case "ra":
		n, m := cmpOr(p.RaN, 2), 9
		if p.RaM != nil {
			m = *p.RaM
		}
		r = append(r, Op{Op: OpRandAugment, NumOps: &n, Magnitude: &m, NumMagnitudeBins: &bins, Interpolation: warp, Fill: fill})
	case "imagenet":
		r = append(r, Op{Op: OpAutoAugment, Policy: "imagenet", Interpolation: warp, Fill: fill})
	case "augmix":
		sev := cmpOr(p.AugMixSeverity, 3)
		r = append(r, Op{Op: OpAugMix, Severity: &sev, Interpolation: warp, Fill: fill})
	case "", "none":
	default:
		return nil, fmt.Errorf("auto_augment %q: want ta-wide, ra, imagenet or augmix", p.AutoAugment)
	}
	// RandomAffine's and RandomRotation's fill defaults to 0 (left out).
	if p.AffineDegrees != nil {
		r = append(r, Op{Op: OpRandomAffine, Degrees: slices.Clone(p.AffineDegrees), Translate: slices.Clone(p.AffineTranslate),
			Scale: slices.Clone(p.AffineScale), Shear: slices.Clone(p.AffineShear), Interpolation: warp, Fill: fill})
	}
	if p.RotateDegrees != nil {
		r = append(r, Op{Op: OpRandomRotation, Degrees: slices.Clone(p.RotateDegrees), Interpolation: warp, Fill: fill})
	}
	if j := p.ColorJitter; j != nil {
		op := Op{Op: OpColorJitter}
		if len(j) == 8 {
			op.Brightness, op.Contrast, op.Saturation, op.Hue = Nums{j[0], j[1]}, Nums{j[2], j[3]}, Nums{j[4], j[5]}, Nums{j[6], j[7]}
		} else if len(j) == 4 {
			op.Brightness, op.Contrast, op.Saturation, op.Hue = Nums{j[0]}, Nums{j[1]}, Nums{j[2]}, Nums{j[3]}
		} else {
			return nil, fmt.Errorf("color_jitter %v: want four numbers B,C,S,H or eight (LO,HI each)", j)
		}
		r = append(r, op)
	}
	if g := p.GrayscaleProb; g > 0 {
		r = append(r, Op{Op: OpRandomGrayscale, P: &g})
	}
	if k := p.BlurKernel; k != nil {
		op := Op{Op: OpGaussianBlur, Sigma: Nums{0.1, 2.0}}
		for _, x := range k {
			op.KernelSize = append(op.KernelSize, float64(x))
		}
		if p.BlurSigma != nil {
			op.Sigma = slices.Clone(p.BlurSigma)
		}
		r = append(r, op)
	}
	r = append(r, tail...)
	if e := p.ErasingProb; e > 0 {
		op := Op{Op: OpRandomErasing, P: &e, Scale: Nums{0.02, 0.33}, Ratio: Nums{0.3, 3.3}}
		if p.ErasingScale != nil {
			op.Scale = slices.Clone(p.ErasingScale)
		}
		if p.ErasingRatio != nil {
			op.Ratio = slices.Clone(p.ErasingRatio)
		}
		v, err := ParseErasingValue(p.ErasingValue)
		if err != nil {
			return nil, err
		}
		if v.Random || v.Nums != nil {
			op.Value = &v
		}
		r = append(r, op)
	}
	return r, nil
}

func f32s(v [3]float32) Nums { return Nums{float64(v[0]), float64(v[1]), float64(v[2])} }

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// ParseErasingValue reads RandomErasing's value as the flag takes it: one
// number, R,G,B, or random ("" and 0 are torchvision's default value=0,
// the zero Value).
func ParseErasingValue(s string) (Value, error) {
	switch s = strings.TrimSpace(s); s {
	case "", "0":
		return Value{}, nil
	case "random":
		return Value{Random: true}, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) != 1 && len(parts) != 3 {
		return Value{}, fmt.Errorf("erasing value %q: want one number, R,G,B or random", s)
	}
	var v Value
	for _, p := range parts {
		x, err := strconv.ParseFloat(strings.TrimSpace(p), 32)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return Value{}, fmt.Errorf("erasing value %q: want one number, R,G,B or random", s)
		}
		v.Nums = append(v.Nums, float64(float32(x)))
	}
	if len(v.Nums) == 1 && v.Nums[0] == 0 {
		v.Nums = nil // torchvision's default value=0, as "0" ("0.0" from a Compose)
	}
	return v, nil
}

// NamedEvalResize is the named recipe's eval Resize at resolution res
// (torchvision-v2: round(res·232/224)); 0 when it has no rule of its own
// (the loader's res·256/224).
func (p Params) NamedEvalResize(res int) int {
	if r := namedRecipes[p.Name]; r.evalPer224 != 0 {
		return int(math.Round(float64(res) * float64(r.evalPer224) / 224))
	}
	return 0
}

// TrainOps are the train recipe's ops after the crop and flip, as the
// loader's fixed train recipe runs them (loader.Options.Augment, one op or
// a Sequence, nil for none), and its RandomErasing (nil for none): the
// ops of Build's recipe, built by the same code as a Recipe's.
func (p Params) TrainOps() (ImageOp, *RandomErasing, error) {
	r, err := p.Build("train", 1)
	if err != nil {
		return nil, nil, err
	}
	var seq Sequence
	var erasing *RandomErasing
	onPIL := true // the reference's ops before its PILToTensor run on PIL images
	for _, op := range r {
		switch op.Op {
		case OpToTensor, OpPILToTensor:
			onPIL = false
		case OpRandomResizedCrop, OpRandomHorizontalFlip, OpNormalize:
		case OpRandomErasing:
			erasing = erasingOf(op)
		default:
			w, h := 0, 0 // the picture's size is checked by the loader
			st, err := stepOf(op, &w, &h, onPIL)
			if err != nil {
				return nil, nil, err
			}
			p, ok := st.(inPlace)
			if !ok {
				return nil, nil, fmt.Errorf("%s: not an op of the fixed train recipe", op.Op)
			}
			seq = append(seq, p.op)
		}
	}
	switch len(seq) {
	case 0:
		return nil, erasing, nil
	case 1:
		return seq[0], erasing, nil
	}
	return seq, erasing, nil
}
