package augment

import (
	"fmt"
	"math"
)

// MaxSide bounds a recipe's sizes (Resize, the crops, padding): the side
// of the decoder's limit (loader.MaxResolution).
const MaxSide = 16384

// Problems checks every op's arguments as torchvision checks them, and
// the recipe as a whole (a fixed output size, the picture ops before the
// tensor ops, Normalize's channels): every problem at once, each named by
// its field path, augment[2].degrees. None is nil.
func (r Recipe) Problems() []Problem {
	var ps []Problem
	for i, op := range r {
		c := &opCheck{op: op, at: fmt.Sprintf("augment[%d]", i)}
		c.check()
		ps = append(ps, c.ps...)
	}
	if len(ps) > 0 {
		return ps // the whole recipe is judged once its ops are sound
	}
	if _, err := r.Compile(); err != nil {
		if p, ok := err.(Problem); ok {
			return []Problem{p}
		}
		return []Problem{{Field: "augment", Msg: err.Error()}}
	}
	return nil
}

// Err is Problems as an error (Problems), nil when there are none.
func (r Recipe) Err() error {
	if ps := r.Problems(); len(ps) > 0 {
		return Problems(ps)
	}
	return nil
}

// opCheck collects one op's problems.
type opCheck struct {
	op Op
	at string
	ps []Problem
}

func (c *opCheck) bad(field, format string, args ...any) {
	at := c.at
	if field != "" {
		at += "." + field
	}
	c.ps = append(c.ps, Problem{Field: at, Msg: fmt.Sprintf(format, args...)})
}

// args are the JSON names of the arguments each op takes.
var opArgs = map[string][]string{
	OpRandomResizedCrop:    {"size", "scale", "ratio", "interpolation", "antialias"},
	OpResize:               {"size", "interpolation", "max_size", "antialias"},
	OpCenterCrop:           {"size"},
	OpRandomCrop:           {"size", "padding", "pad_if_needed", "fill", "padding_mode"},
	OpRandomHorizontalFlip: {"p"},
	OpRandomVerticalFlip:   {"p"},
	OpColorJitter:          {"brightness", "contrast", "saturation", "hue"},
	OpRandomGrayscale:      {"p"},
	OpGrayscale:            {"num_output_channels"},
	OpGaussianBlur:         {"kernel_size", "sigma"},
	OpRandomRotation:       {"degrees", "interpolation", "expand", "center", "fill"},
	OpRandomAffine:         {"degrees", "translate", "scale", "shear", "interpolation", "fill", "center"},
	OpTrivialAugmentWide:   {"num_magnitude_bins", "interpolation", "fill"},
	OpRandAugment:          {"num_ops", "magnitude", "num_magnitude_bins", "interpolation", "fill"},
	OpAutoAugment:          {"policy", "interpolation", "fill"},
	OpAugMix:               {"severity", "mixture_width", "chain_depth", "alpha", "all_ops", "interpolation", "fill"},
	OpPILToTensor:          {},
	OpToTensor:             {},
	OpConvertImageDtype:    {"dtype"},
	OpNormalize:            {"mean", "std", "inplace"},
	OpRandomErasing:        {"p", "scale", "ratio", "value", "inplace"},
}

// given lists the arguments op sets.
func (op Op) given() []string {
	var g []string
	add := func(name string, set bool) {
		if set {
			g = append(g, name)
		}
	}
	add("size", op.Size != nil)
	add("scale", op.Scale != nil)
	add("ratio", op.Ratio != nil)
	add("interpolation", op.Interpolation != "")
	add("antialias", op.Antialias != nil)
	add("max_size", op.MaxSize != nil)
	add("padding", op.Padding != nil)
	add("pad_if_needed", op.PadIfNeeded)
	add("fill", op.Fill != nil)
	add("padding_mode", op.PaddingMode != "")
	add("p", op.P != nil)
	add("brightness", op.Brightness != nil)
	add("contrast", op.Contrast != nil)
	add("saturation", op.Saturation != nil)
	add("hue", op.Hue != nil)
	add("num_output_channels", op.NumOutputChannels != 0)
	add("kernel_size", op.KernelSize != nil)
	add("sigma", op.Sigma != nil)
	add("degrees", op.Degrees != nil)
	add("translate", op.Translate != nil)
	add("shear", op.Shear != nil)
	add("center", op.Center != nil)
	add("expand", op.Expand)
	add("num_ops", op.NumOps != nil)
	add("magnitude", op.Magnitude != nil)
	add("num_magnitude_bins", op.NumMagnitudeBins != nil)
	add("policy", op.Policy != "")
	add("severity", op.Severity != nil)
	add("mixture_width", op.MixtureWidth != nil)
	add("chain_depth", op.ChainDepth != nil)
	add("alpha", op.Alpha != nil)
	add("all_ops", op.AllOps != nil)
	add("dtype", op.Dtype != "")
	add("mean", op.Mean != nil)
	add("std", op.Std != nil)
	add("value", op.Value != nil)
	add("inplace", op.Inplace)
	return g
}

func (c *opCheck) check() {
	op := c.op
	args, ok := opArgs[op.Op]
	if !ok {
		c.bad("op", "%q: not an op faster runs (want one of torchvision's RandomResizedCrop, Resize, CenterCrop, RandomCrop, "+
			"RandomHorizontalFlip, RandomVerticalFlip, ColorJitter, RandomGrayscale, Grayscale, GaussianBlur, RandomRotation, "+
			"RandomAffine, TrivialAugmentWide, RandAugment, AutoAugment, AugMix, PILToTensor, ToTensor, ConvertImageDtype, "+
			"Normalize, RandomErasing)", op.Op)
		return
	}
	for _, g := range op.given() {
		if !contains(args, g) {
			c.bad(g, "%s takes no argument %s", op.Op, g)
		}
	}
	switch op.Op {
	case OpRandomResizedCrop:
		c.size(true)
		c.rng("scale", op.Scale, 0, 1, false, "want [min, max] with 0 <= min <= max <= 1 (fractions of the image's area)")
		c.rng("ratio", op.Ratio, 0, math.MaxFloat32, true,
			"want [min, max] with 0 < min <= max <= 3.4e38 (torchvision draws log(ratio) in float32)")
		c.resizeInterp()
	case OpResize:
		c.size(true)
		c.resizeInterp()
		if op.MaxSize != nil {
			switch {
			case len(op.Size) != 1:
				c.bad("max_size", "only with an int size (torchvision: max_size is only supported if size is an int)")
			case !(float64(*op.MaxSize) > op.Size[0]) || *op.MaxSize > MaxSide:
				c.bad("max_size", "%d: want above size %g and at most %d", *op.MaxSize, op.Size[0], MaxSide)
			}
		}
	case OpCenterCrop:
		c.size(true)
	case OpRandomCrop:
		c.size(true)
		if p := op.Padding; p != nil {
			if len(p) != 1 && len(p) != 2 && len(p) != 4 {
				c.bad("padding", "%v: want an int, [left/right, top/bottom] or [left, top, right, bottom]", []float64(p))
			}
			for _, x := range p {
				if !(x >= 0 && x <= MaxSide && x == math.Trunc(x)) {
					c.bad("padding", "%v: want whole numbers 0 to %d", []float64(p), MaxSide)
					break
				}
			}
		}
		switch op.PaddingMode {
		case "", "constant", "edge", "reflect", "symmetric":
		default:
			c.bad("padding_mode", "%q: want constant, edge, reflect or symmetric", op.PaddingMode)
		}
		c.fill(false)
	case OpRandomHorizontalFlip, OpRandomVerticalFlip, OpRandomGrayscale:
		c.prob()
	case OpColorJitter:
		for _, j := range []struct {
			name string
			v    Nums
		}{{"brightness", op.Brightness}, {"contrast", op.Contrast}, {"saturation", op.Saturation}, {"hue", op.Hue}} {
			c.jitter(j.name, j.v)
		}
	case OpGrayscale:
		if n := op.NumOutputChannels; n != 0 && n != 1 && n != 3 {
			c.bad("num_output_channels", "%d: want 1 or 3", n)
		}
	case OpGaussianBlur:
		k := op.KernelSize
		if k == nil {
			c.bad("kernel_size", "required")
		} else if len(k) != 1 && len(k) != 2 {
			c.bad("kernel_size", "%v: want an int or [kx, ky]", []float64(k))
		}
		for _, x := range k {
			if !(x >= 1 && x <= MaxBlurKernel && x == math.Trunc(x) && int(x)%2 == 1) {
				c.bad("kernel_size", "%v: want odd sizes from 1 to %d (torchvision: Kernel size value should be an odd and positive number)", []float64(k), MaxBlurKernel)
				break
			}
		}
		if s := op.Sigma; s != nil {
			ok := len(s) == 1 && float32(s[0]) > 0 && s[0] <= math.MaxFloat32 ||
				len(s) == 2 && float32(s[0]) > 0 && s[0] <= s[1] && s[1] <= math.MaxFloat32
			if !ok {
				c.bad("sigma", "%v: want a number or [min, max] with 0 < min <= max (torchvision: sigma values should be positive and of the form (min, max), drawn in float32)", []float64(s))
			}
		}
	case OpRandomRotation, OpRandomAffine:
		c.degrees("degrees", op.Degrees, true)
		c.warpInterp()
		c.fill(true)
		if ce := op.Center; ce != nil && (len(ce) != 2 || !finite(ce[0]) || !finite(ce[1])) {
			c.bad("center", "%v: want [x, y]", []float64(ce))
		}
		if op.Expand {
			c.bad("expand", "true: faster's outputs keep their size (expand=False)")
		}
		if op.Op == OpRandomRotation {
			break
		}
		if t := op.Translate; t != nil && (len(t) != 2 || !(t[0] >= 0 && t[0] <= 1 && t[1] >= 0 && t[1] <= 1)) {
			c.bad("translate", "%v: want [tx, ty], fractions in [0, 1] (torchvision: translation values should be between 0 and 1)", []float64(t))
		}
		if s := op.Scale; s != nil && (len(s) != 2 || !(s[0] > 0 && s[0] <= s[1] && s[1] <= 100)) {
			c.bad("scale", "%v: want [min, max] with 0 < min <= max <= 100 (torchvision: scale values should be positive)", []float64(s))
		}
		if sh := op.Shear; sh != nil {
			ok := len(sh) == 1 && sh[0] >= 0 && sh[0] < 90 ||
				len(sh) == 2 && sh[0] <= sh[1] && sh[0] > -90 && sh[1] < 90 ||
				len(sh) == 4 && sh[0] <= sh[1] && sh[2] <= sh[3] && sh[0] > -90 && sh[1] < 90 && sh[2] > -90 && sh[3] < 90
			if !ok {
				c.bad("shear", "%v: want S (-S..S in x), [xmin, xmax] or [xmin, xmax, ymin, ymax], degrees within (-90, 90)", []float64(sh))
			}
		}
	case OpTrivialAugmentWide, OpRandAugment:
		c.warpInterp()
		c.fill(true)
		bins := 31
		if b := op.NumMagnitudeBins; b != nil {
			bins = *b
			if bins < 2 || bins > MaxMagnitudeBins {
				c.bad("num_magnitude_bins", "%d: want 2 to %d", bins, MaxMagnitudeBins)
			}
		}
		if op.Op == OpTrivialAugmentWide {
			break
		}
		if n := op.NumOps; n != nil && (*n < 1 || *n > MaxRandAugmentOps) {
			c.bad("num_ops", "%d: want 1 to %d", *n, MaxRandAugmentOps)
		}
		if m := op.Magnitude; m != nil && (*m < 0 || *m >= bins) {
			c.bad("magnitude", "%d: want a bin in [0, %d) (num_magnitude_bins; torchvision: index out of bounds)", *m, bins)
		}
	case OpAutoAugment:
		c.warpInterp()
		c.fill(true)
		switch op.Policy {
		case "", "imagenet", "cifar10", "svhn":
		default:
			c.bad("policy", "%q: want imagenet, cifar10 or svhn (AutoAugmentPolicy)", op.Policy)
		}
	case OpAugMix:
		c.warpInterp()
		c.fill(true)
		if s := op.Severity; s != nil && (*s < 1 || *s > 10) {
			c.bad("severity", "%d: want 1 to 10 (torchvision: The severity must be between [1, 10])", *s)
		}
		if w := op.MixtureWidth; w != nil && (*w < 1 || *w > MaxAugMixChains) {
			c.bad("mixture_width", "%d: want 1 to %d", *w, MaxAugMixChains)
		}
		if d := op.ChainDepth; d != nil && (*d == 0 || *d < -1 || *d > MaxAugMixChains) {
			c.bad("chain_depth", "%d: want 1 to %d, or -1 (1 to 3 at random)", *d, MaxAugMixChains)
		}
		if a := op.Alpha; a != nil && !(*a > 0 && *a <= math.MaxFloat32) {
			c.bad("alpha", "%g: want a positive number", *a)
		}
	case OpConvertImageDtype:
		switch op.Dtype {
		case "float32", "float", "torch.float32", "torch.float":
		case "":
			c.bad("dtype", "required: float32")
		default:
			c.bad("dtype", "%q: faster converts to float32 only", op.Dtype)
		}
	case OpNormalize:
		for _, f := range []struct {
			name string
			v    Nums
		}{{"mean", op.Mean}, {"std", op.Std}} {
			switch {
			case f.v == nil:
				c.bad(f.name, "required")
			case len(f.v) != 1 && len(f.v) != 3:
				c.bad(f.name, "%v: want one number per channel (1 or 3)", []float64(f.v))
			}
			for _, x := range f.v {
				if !finite(x) || math.Abs(x) > math.MaxFloat32 || f.name == "std" && float32(x) == 0 {
					// torchvision: "std evaluated to zero after conversion
					// to torch.float32, leading to division by zero".
					c.bad(f.name, "%v: want finite float32s, std not 0", []float64(f.v))
					break
				}
			}
		}
	case OpRandomErasing:
		c.prob()
		c.rng("scale", op.Scale, 0, 1, false, "want [min, max] with 0 <= min <= max <= 1 (torchvision: Scale should be between 0 and 1)")
		c.rng("ratio", op.Ratio, 0, math.MaxFloat32, true, "want [min, max] with 0 < min <= max <= 3.4e38 (torchvision takes log(ratio) in float32)")
		if v := op.Value; v != nil && !v.Random {
			if len(v.Nums) != 1 && len(v.Nums) != 3 {
				c.bad("value", "%v: want a number, one per channel or \"random\"", []float64(v.Nums))
			}
			for _, x := range v.Nums {
				if !finite(x) || math.Abs(x) > math.MaxFloat32 {
					c.bad("value", "%v: want finite float32s", []float64(v.Nums))
					break
				}
			}
		}
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// size checks a size: an int or [h, w], 1 to MaxSide.
func (c *opCheck) size(required bool) {
	s := c.op.Size
	if s == nil {
		if required {
			c.bad("size", "required")
		}
		return
	}
	if len(s) != 1 && len(s) != 2 {
		c.bad("size", "%v: want an int or [h, w]", []float64(s))
		return
	}
	for _, x := range s {
		if !(x >= 1 && x <= MaxSide && x == math.Trunc(x)) {
			c.bad("size", "%v: want whole numbers 1 to %d (the side of the decoder's limit of %d pixels)", []float64(s), MaxSide, MaxSide*MaxSide)
			return
		}
	}
}

// rng checks a [lo, hi] pair within [lo, hi] (lo exclusive, as a float32,
// with open).
func (c *opCheck) rng(name string, v Nums, lo, hi float64, open bool, why string) {
	if v == nil {
		return
	}
	ok := len(v) == 2 && v[0] >= lo && v[0] <= v[1] && v[1] <= hi
	if ok && open {
		ok = float32(v[0]) > float32(lo)
	}
	if !ok {
		c.bad(name, "%v: %s", []float64(v), why)
	}
}

func (c *opCheck) prob() {
	if p := c.op.P; p != nil && !(*p >= 0 && *p <= 1) {
		c.bad("p", "%g: want a probability in [0, 1]", *p)
	}
}

// resizeInterp checks a resize's interpolation (PIL's filters) and
// antialias (faster antialiases bilinear and bicubic, as PIL).
func (c *opCheck) resizeInterp() {
	switch c.op.Interpolation {
	case "", "bilinear", "bicubic", "nearest":
	default:
		c.bad("interpolation", "%q: want nearest, bilinear or bicubic", c.op.Interpolation)
		return
	}
	if a := c.op.Antialias; a != nil && !*a && c.op.Interpolation != "nearest" {
		c.bad("antialias", "false: faster resizes bilinear and bicubic antialiased, as PIL does (torchvision on PIL images)")
	}
}

// warpInterp checks a warp's interpolation: nearest or bilinear
// (torchvision's tensor path, grid_sample), or bicubic (PIL's, where
// torchvision warps bicubic: on PIL images; CompileFor refuses it after
// PILToTensor). AugMix warps tensors whatever it is given, so torchvision
// refuses it bicubic.
func (c *opCheck) warpInterp() {
	switch c.op.Interpolation {
	case "", "nearest", "bilinear":
	case "bicubic":
		if c.op.Op == OpAugMix {
			c.bad("interpolation", "\"bicubic\": torchvision's AugMix warps tensors, which it refuses bicubic (Interpolation mode 'bicubic' is unsupported with Tensor input); want nearest or bilinear")
		}
	default:
		c.bad("interpolation", "%q: want nearest, bilinear or bicubic", c.op.Interpolation)
	}
}

// fill checks a fill: one number or one per channel, 0..255.
func (c *opCheck) fill(_ bool) {
	f := c.op.Fill
	if f == nil {
		return
	}
	if len(f) != 1 && len(f) != 3 {
		c.bad("fill", "%v: want a number or [r, g, b]", []float64(f))
		return
	}
	for _, x := range f {
		if !(x >= 0 && x <= 255) {
			c.bad("fill", "%v: want values in 0..255", []float64(f))
			return
		}
	}
}

// degrees checks torchvision's degrees: D (-D..D, D >= 0) or [lo, hi].
func (c *opCheck) degrees(name string, v Nums, required bool) {
	if v == nil {
		if required {
			c.bad(name, "required")
		}
		return
	}
	ok := len(v) == 1 && v[0] >= 0 && v[0] <= 360 || len(v) == 2 && v[0] <= v[1] && v[0] >= -360 && v[1] <= 360
	if !ok {
		c.bad(name, "%v: want D in 0..360 (uniform in -D..D) or [min, max] with min <= max", []float64(v))
	}
}

// jitter checks one of ColorJitter's arguments as torchvision's
// _check_input: a number (B, C, S >= 0; hue in [0, 0.5]) or [lo, hi]
// (B, C, S lo >= 0; hue within [-0.5, 0.5]), drawn in float32.
func (c *opCheck) jitter(name string, v Nums) {
	if v == nil {
		return
	}
	lo, hi := 0.0, float64(math.MaxFloat32)
	if name == "hue" {
		lo, hi = -0.5, 0.5
	}
	switch len(v) {
	case 1:
		if !(v[0] >= 0 && v[0] <= hi && (name != "hue" || v[0] <= 0.5)) || name != "hue" && 1+v[0] > math.MaxFloat32 {
			c.bad(name, "%g: want a non-negative number (hue at most 0.5)", v[0])
		}
	case 2:
		if !(v[0] >= lo && v[0] <= v[1] && v[1] <= hi) {
			c.bad(name, "%v: want [min, max] with %g <= min <= max <= %g (torchvision: %s values should be between (%g, %g), drawn in float32)",
				[]float64(v), lo, hi, name, lo, hi)
		}
	default:
		c.bad(name, "%v: want a number or [min, max]", []float64(v))
	}
}
