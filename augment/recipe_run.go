package augment

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/faster-training/faster/imgcodec"
)

// Compiled is a Recipe ready to run on decoded pictures: a head fused
// with the decode (a leading RandomResizedCrop, with the flip right after
// it, or a leading Resize + CenterCrop), the picture steps after it in
// order, then the tensor: ToTensor's [0, 1] normalised by Mean and Std
// (Normalize; 0 and 1 without), RandomErasing last. Every sample comes out
// Width x Height with Channels channels (1 after Grayscale(1), or from
// one-channel data). It is read-only once compiled and safe for concurrent
// use.
type Compiled struct {
	Head          Head
	Steps         []Step
	Width, Height int
	Channels      int
	// Float: the recipe converts to float (ToTensor, or PILToTensor +
	// ConvertImageDtype); Normalized: it has a Normalize.
	Float, Normalized bool
	Mean, Std         [3]float32
	// Erasing is RandomErasing, on the float tensor; ErasingFirst when it
	// comes before Normalize (its values are then normalised too).
	Erasing      *RandomErasing
	ErasingFirst bool
	// OwnSize: no op fixes the output size (ToTensor + Normalize alone,
	// flips, colour ops, a Resize(int) without a crop after it): each
	// sample's size follows its picture's, so the data's pictures must
	// all have one size, InWidth x InHeight. Width and Height are the
	// output for it when CompileSized was given it, else all four are 0
	// (the loader takes the size from the data: the source's own, or its
	// first sample's).
	OwnSize           bool
	InWidth, InHeight int
}

// HeadKind says how a recipe starts.
type HeadKind uint8

const (
	// HeadDecode decodes the whole picture at full size; every op is a step.
	HeadDecode HeadKind = iota
	// HeadRandomResizedCrop plans the crop (and the flip after it) before
	// decoding: Train's Plan, at a DCT scale that covers the output.
	HeadRandomResizedCrop
	// HeadResizeCenterCrop is Resize(int) + CenterCrop, one resample of
	// the crop's part of the resize (ResizeView).
	HeadResizeCenterCrop
)

// Head is a recipe's fused start.
type Head struct {
	Kind HeadKind
	// Train is the RandomResizedCrop (+ flip) of HeadRandomResizedCrop.
	Train TrainTransform
	// Resize is HeadResizeCenterCrop's shorter edge, Filter its
	// interpolation; the crop is Width x Height of Crop.
	Resize       int
	Filter       Filter
	CropW, CropH int
}

// Step is one picture op after the head: it returns the picture it made
// (m itself, changed in place, or a new one, m released).
type Step interface {
	Run(a *Augmenter, s *Scratch, rng *rand.Rand, m *imgcodec.Image) (*imgcodec.Image, error)
}

// Augment is the steps as one ImageOp when every one works in place (nil
// for none): what the loader's fixed train recipe runs after its crop.
func (c *Compiled) Augment() (ImageOp, bool) {
	var seq Sequence
	for _, s := range c.Steps {
		p, ok := s.(inPlace)
		if !ok {
			return nil, false
		}
		seq = append(seq, p.op)
	}
	switch len(seq) {
	case 0:
		return nil, true
	case 1:
		return seq[0], true
	}
	return seq, true
}

// inPlace is an ImageOp as a step.
type inPlace struct{ op ImageOp }

func (p inPlace) Run(_ *Augmenter, s *Scratch, rng *rand.Rand, m *imgcodec.Image) (*imgcodec.Image, error) {
	return m, p.op.Augment(s, rng, m)
}

// Compile checks the recipe as a whole and plans it for three-channel
// pictures (CompileFor).
func (r Recipe) Compile() (*Compiled, error) { return r.CompileFor(3) }

// CompileFor plans the recipe for pictures of in channels (1: one-channel
// data, served as one channel unless Grayscale(3) makes three), of sizes
// not known before they are decoded (CompileSized). Its error is a
// Problem naming the op. It assumes the ops' own arguments were checked
// (Problems).
func (r Recipe) CompileFor(in int) (*Compiled, error) { return r.CompileSized(in, 0, 0) }

// CompileSized is CompileFor for data whose pictures are all w x h (0, 0:
// not known): the ops' sizes are checked against it (a crop larger than
// the picture, a blur kernel wider than it), and a recipe that keeps each
// picture's size (OwnSize) comes out w x h.
func (r Recipe) CompileSized(in, w, h int) (*Compiled, error) {
	c := &Compiled{Channels: in, Std: [3]float32{1, 1, 1}}
	at := func(i int) string { return fmt.Sprintf("augment[%d]", i) }
	// w, h: the size after the ops so far (0: each picture's own, not
	// known here).
	if w <= 0 || h <= 0 {
		w, h = 0, 0
	}
	inW, inH := w, h
	fixed := false          // fixed: an op set the output size, whatever the picture's
	tensor, float := -1, -1 // where the picture became a tensor, a float one
	normAt, eraseAt := -1, -1
	i := 0
	switch {
	case len(r) >= 1 && r[0].Op == OpRandomResizedCrop:
		op := r[0]
		w, h = sizeOf(op.Size)
		f, _ := ParseFilter(orDefault(op.Interpolation, "bilinear"))
		c.Head = Head{Kind: HeadRandomResizedCrop, Train: TrainTransform{Width: w, Height: h, Scale: pair(op.Scale, DefaultScale),
			Ratio: pair(op.Ratio, DefaultRatio), NoFlip: true, Filter: f}}
		i, fixed = 1, true
		if len(r) >= 2 && r[1].Op == OpRandomHorizontalFlip {
			if p := probOr(r[1].P, 0.5); p > 0 {
				c.Head.Train.NoFlip, c.Head.Train.FlipProb = false, p
			}
			i = 2
		}
	case len(r) >= 2 && r[0].Op == OpResize && len(r[0].Size) == 1 && r[0].MaxSize == nil && r[1].Op == OpCenterCrop:
		cw, ch := sizeOf(r[1].Size)
		short := int(r[0].Size[0])
		if cw <= short && ch <= short { // within every resize: no padding
			f, _ := ParseFilter(orDefault(r[0].Interpolation, "bilinear"))
			c.Head = Head{Kind: HeadResizeCenterCrop, Resize: short, Filter: f, CropW: cw, CropH: ch}
			w, h, i, fixed = cw, ch, 2, true
		}
	}
	for ; i < len(r); i++ {
		op := r[i]
		picture := tensor < 0 || float < 0 // a uint8 picture or tensor
		switch op.Op {
		case OpPILToTensor, OpToTensor:
			if tensor >= 0 {
				return nil, Problem{at(i), fmt.Sprintf("%s after %s (%s): the picture is a tensor already", op.Op, r[tensor].Op, at(tensor))}
			}
			tensor = i
			if op.Op == OpToTensor {
				float = i
			}
			continue
		case OpConvertImageDtype:
			if tensor < 0 {
				return nil, Problem{at(i), "ConvertImageDtype before ToTensor or PILToTensor: torchvision takes tensors only (Input img should be Tensor Image)"}
			}
			if float < 0 {
				float = i
			}
			continue
		case OpNormalize:
			if float < 0 {
				return nil, Problem{at(i), "Normalize before ToTensor (or PILToTensor + ConvertImageDtype(float32)): torchvision normalises float tensors only"}
			}
			if normAt >= 0 {
				return nil, Problem{at(i), fmt.Sprintf("a second Normalize (the first is %s): faster normalises once", at(normAt))}
			}
			normAt = i
			if len(op.Mean) != len(op.Std) && len(op.Mean) != 1 && len(op.Std) != 1 {
				return nil, Problem{at(i) + ".mean", fmt.Sprintf("%d means and %d stds: want one per channel", len(op.Mean), len(op.Std))}
			}
			for _, v := range [][]float64{op.Mean, op.Std} {
				if len(v) != 1 && len(v) != c.Channels {
					return nil, Problem{at(i) + ".mean", fmt.Sprintf("%d values on a %d-channel picture: want 1 or %d", len(v), c.Channels, c.Channels)}
				}
			}
			for k := range 3 {
				c.Mean[k], c.Std[k] = float32(op.Mean[min(k, len(op.Mean)-1)]), float32(op.Std[min(k, len(op.Std)-1)])
			}
			c.Normalized = true
			continue
		case OpRandomErasing:
			if float < 0 {
				return nil, Problem{at(i), "RandomErasing before ToTensor (or ConvertImageDtype(float32)): faster erases the float tensor"}
			}
			if eraseAt >= 0 {
				return nil, Problem{at(i), fmt.Sprintf("a second RandomErasing (the first is %s): faster erases once", at(eraseAt))}
			}
			eraseAt = i
			if v := op.Value; v != nil && !v.Random && len(v.Nums) != 1 && len(v.Nums) != c.Channels {
				return nil, Problem{at(i) + ".value", fmt.Sprintf("%d values on a %d-channel picture", len(v.Nums), c.Channels)}
			}
			c.Erasing = erasingOf(op)
			c.ErasingFirst = normAt < 0
			continue
		}
		if !picture {
			return nil, Problem{at(i), fmt.Sprintf("%s after %s (%s): faster runs the picture ops on uint8 pixels, before the float conversion; move it before", op.Op, r[float].Op, at(float))}
		}
		if tensor >= 0 && op.Interpolation == "bicubic" && warps(op.Op) {
			return nil, Problem{at(i) + ".interpolation", fmt.Sprintf("bicubic after %s (%s): torchvision warps bicubic on PIL images only "+
				"(on tensors it raises Interpolation mode 'bicubic' is unsupported with Tensor input); move %s before %s, or warp bilinear",
				r[tensor].Op, at(tensor), op.Op, r[tensor].Op)}
		}
		st, err := stepOf(op, &w, &h, tensor < 0)
		if err != nil {
			if a, ok := err.(argError); ok {
				return nil, Problem{at(i) + "." + a.arg, a.msg}
			}
			return nil, Problem{at(i), err.Error()}
		}
		switch op.Op {
		case OpRandomResizedCrop, OpCenterCrop, OpRandomCrop:
			fixed = true
		case OpResize:
			if len(op.Size) == 2 {
				fixed = true
			} // Resize(int): the output still follows the picture's size
		}
		if op.Op == OpGrayscale {
			c.Channels = cmpOr(op.NumOutputChannels, 1)
		}
		if st != nil {
			c.Steps = append(c.Steps, st)
		}
	}
	// A recipe no op of which fixes the size (a Resize(int) without a
	// crop after it included) serves the size the data's pictures all
	// have: planned for it when it is known, else left to the loader.
	c.OwnSize = !fixed
	if c.OwnSize {
		c.InWidth, c.InHeight = inW, inH
	}
	if c.OwnSize && inW == 0 {
		w, h = 0, 0
	}
	c.Width, c.Height = w, h
	if normAt >= 0 && c.Channels == 1 && len(r[normAt].Mean) != 1 {
		return nil, Problem{at(normAt) + ".mean", "3 values on a 1-channel picture: want 1"}
	}
	c.Float = float >= 0
	return c, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func probOr(p *float64, def float64) float64 {
	if p == nil {
		return def
	}
	return *p
}

// pair is a [lo, hi] argument, def when left out.
func pair(v Nums, def [2]float64) [2]float64 {
	if len(v) != 2 {
		return def
	}
	return [2]float64{v[0], v[1]}
}

// sizeOf is a size argument's width and height (an int: square).
func sizeOf(s Nums) (w, h int) {
	if len(s) == 1 {
		return int(s[0]), int(s[0])
	}
	return int(s[1]), int(s[0])
}

// fillOf is a warp's fill as the ops take it: nil (torchvision's None) or
// three values; def when left out.
func fillOf(f Nums, def []float64) []float64 {
	switch len(f) {
	case 1:
		return []float64{f[0], f[0], f[0]}
	case 3:
		return []float64{f[0], f[1], f[2]}
	}
	return def
}

func warpOf(s string) Interp {
	switch s {
	case "bilinear":
		return WarpBilinear
	case "bicubic":
		return WarpBicubic // PIL's: CompileFor allows it before the tensor only
	}
	return WarpNearest
}

// warps says whether op warps with its interpolation (the rotations,
// affines and policies).
func warps(op string) bool {
	switch op {
	case OpRandomRotation, OpRandomAffine, OpTrivialAugmentWide, OpRandAugment, OpAutoAugment, OpAugMix:
		return true
	}
	return false
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

func erasingOf(op Op) *RandomErasing {
	e := &RandomErasing{P: probOr(op.P, 0.5), Scale: pair(op.Scale, [2]float64{}), Ratio: pair(op.Ratio, [2]float64{})}
	if v := op.Value; v != nil {
		e.RandomValue = v.Random
		for _, x := range v.Nums {
			e.Value = append(e.Value, float32(x))
		}
		if len(e.Value) == 1 && e.Value[0] == 0 {
			e.Value = nil
		}
	}
	return e
}

// stepOf is op's step; w, h are the picture's size before it (0: varies)
// and after it; onPIL: op runs on a PIL image (before the recipe's
// PILToTensor or ToTensor), so its bilinear warps are PIL's, as
// torchvision's on PIL images (AugMix's excepted: torchvision runs it on
// a tensor of the picture whatever it is given). A nil step does nothing.
func stepOf(op Op, w, h *int, onPIL bool) (Step, error) {
	warpFill := fillOf(op.Fill, []float64{0, 0, 0}) // RandomAffine's, RandomRotation's fill=0
	policyFill := fillOf(op.Fill, nil)              // the policies' fill=None
	interp := warpOf(op.Interpolation)
	if onPIL && op.Op != OpAugMix {
		switch interp {
		case WarpBilinear:
			interp = WarpBilinearPIL
		case WarpNearest:
			interp = WarpNearestPIL
		}
	}
	switch op.Op {
	case OpRandomResizedCrop:
		*w, *h = sizeOf(op.Size)
		f, _ := ParseFilter(orDefault(op.Interpolation, "bilinear"))
		return &rrcStep{w: *w, h: *h, scale: pair(op.Scale, DefaultScale), ratio: pair(op.Ratio, DefaultRatio), filter: f}, nil
	case OpResize:
		f, _ := ParseFilter(orDefault(op.Interpolation, "bilinear"))
		st := &resizeStep{filter: f, maxSize: intOr(op.MaxSize, 0)}
		if len(op.Size) == 2 {
			st.w, st.h = sizeOf(op.Size)
			*w, *h = st.w, st.h
		} else {
			st.short = int(op.Size[0])
			if *w != 0 {
				*w, *h = st.outSize(*w, *h)
			}
		}
		return st, nil
	case OpCenterCrop:
		cw, ch := sizeOf(op.Size)
		*w, *h = cw, ch
		return &centerCropStep{w: cw, h: ch}, nil
	case OpRandomCrop:
		st := &randomCropStep{pad: padOf(op.Padding), ifNeeded: op.PadIfNeeded, mode: orDefault(op.PaddingMode, "constant")}
		st.w, st.h = sizeOf(op.Size)
		for k, v := range fillOf(op.Fill, []float64{0, 0, 0}) {
			st.fill[k] = uint8(v) // PIL's int(fill)
		}
		if *w != 0 {
			pw, ph := *w+st.pad[0]+st.pad[2], *h+st.pad[1]+st.pad[3]
			if st.ifNeeded {
				pw += 2 * max(st.w-pw, 0)
				ph += 2 * max(st.h-ph, 0)
			}
			if pw < st.w || ph < st.h {
				return nil, fmt.Errorf("RandomCrop size %dx%d on a %dx%d picture (padded): torchvision raises Required crop size is larger than input image size; add pad_if_needed",
					st.w, st.h, pw, ph)
			}
		}
		*w, *h = st.w, st.h
		return st, nil
	case OpRandomHorizontalFlip:
		return flipStep{p: probOr(op.P, 0.5)}, nil
	case OpRandomVerticalFlip:
		return flipStep{p: probOr(op.P, 0.5), vertical: true}, nil
	case OpGrayscale:
		return grayStep{pil: onPIL}, nil
	case OpRandomGrayscale:
		return inPlace{RandomGrayscale{P: probOr(op.P, 0.1), PIL: onPIL}}, nil
	case OpColorJitter:
		j := &ColorJitter{Brightness: jitterOf(op.Brightness, 1), Contrast: jitterOf(op.Contrast, 1),
			Saturation: jitterOf(op.Saturation, 1), Hue: jitterOf(op.Hue, 0), PIL: onPIL}
		return inPlace{j}, nil
	case OpGaussianBlur:
		k := op.KernelSize
		g := &GaussianBlurOp{KernelW: int(k[0]), KernelH: int(k[len(k)-1]), Sigma: [2]float64{0.1, 2.0}}
		if s := op.Sigma; s != nil {
			g.Sigma = [2]float64{s[0], s[len(s)-1]}
		}
		if *w != 0 && (g.KernelW/2 >= *w || g.KernelH/2 >= *h) {
			return nil, argError{"kernel_size", fmt.Sprintf("GaussianBlur kernel %dx%d on a %dx%d picture: want kernel sizes at most %d (torchvision's reflect padding must be below the side)",
				g.KernelW, g.KernelH, *w, *h, 2*min(*w, *h)-1)}
		}
		return inPlace{g}, nil
	case OpRandomRotation:
		d := degreesOf(op.Degrees)
		rr := &RandomRotation{Degrees: d, Interp: interp, Fill: warpFill}
		if ce := op.Center; ce != nil {
			rr.Center = &[2]float64{ce[0], ce[1]}
		}
		return inPlace{rr}, nil
	case OpRandomAffine:
		a := &RandomAffine{Degrees: degreesOf(op.Degrees), Interp: interp, Fill: warpFill}
		if t := op.Translate; t != nil {
			a.Translate = &[2]float64{t[0], t[1]}
		}
		if sc := op.Scale; sc != nil {
			a.Scale = &[2]float64{sc[0], sc[1]}
		}
		switch sh := op.Shear; len(sh) {
		case 1:
			a.Shear = &[4]float64{-sh[0], sh[0]}
		case 2:
			a.Shear = &[4]float64{sh[0], sh[1]}
		case 4:
			a.Shear, a.ShearY = &[4]float64{sh[0], sh[1], sh[2], sh[3]}, true
		}
		if ce := op.Center; ce != nil {
			a.Center = &[2]float64{ce[0], ce[1]}
		}
		return inPlace{a}, nil
	case OpTrivialAugmentWide:
		return inPlace{&TrivialAugmentWide{Bins: intOr(op.NumMagnitudeBins, 31), Interp: interp, Fill: policyFill}}, nil
	case OpRandAugment:
		return inPlace{&RandAugment{N: intOr(op.NumOps, 2), M: intOr(op.Magnitude, 9), Bins: intOr(op.NumMagnitudeBins, 31),
			Interp: interp, Fill: policyFill}}, nil
	case OpAutoAugment:
		aa := &AutoAugment{Interp: interp, Fill: policyFill}
		switch op.Policy {
		case "cifar10":
			aa.Policy = PolicyCIFAR10
		case "svhn":
			aa.Policy = PolicySVHN
		}
		return inPlace{aa}, nil
	case OpAugMix:
		am := &AugMix{Severity: intOr(op.Severity, 3), Width: intOr(op.MixtureWidth, 0), Depth: intOr(op.ChainDepth, 0),
			Alpha: probOr(op.Alpha, 0), NoBrightnessEtc: op.AllOps != nil && !*op.AllOps, Interp: interp, Fill: policyFill}
		return inPlace{am}, nil
	}
	return nil, fmt.Errorf("%s: not a picture op", op.Op)
}

// argError is a step's problem with one of its arguments (arg, by
// torchvision's name: the Problem's field is augment[i].arg).
type argError struct{ arg, msg string }

func (e argError) Error() string { return e.msg }

// jitterOf is a ColorJitter argument as a range (a number v: center±v,
// brightness, contrast and saturation at least 0).
func jitterOf(v Nums, center float64) [2]float64 {
	switch len(v) {
	case 1:
		return JitterRange(v[0], center)
	case 2:
		return [2]float64{v[0], v[1]}
	}
	return [2]float64{}
}

func degreesOf(v Nums) [2]float64 {
	if len(v) == 1 {
		return [2]float64{-v[0], v[0]}
	}
	return [2]float64{v[0], v[1]}
}

// padOf is a padding argument as left, top, right, bottom.
func padOf(p Nums) [4]int {
	switch len(p) {
	case 1:
		x := int(p[0])
		return [4]int{x, x, x, x}
	case 2:
		return [4]int{int(p[0]), int(p[1]), int(p[0]), int(p[1])}
	case 4:
		return [4]int{int(p[0]), int(p[1]), int(p[2]), int(p[3])}
	}
	return [4]int{}
}

// rrcStep is RandomResizedCrop after other ops: the crop drawn on the
// picture as it is, then the crop alone resampled to w x h, as
// torchvision's resized_crop (crop, then resize: the filter clamps at the
// crop's edges; a resize of the box within the picture, PIL's
// resize(box=), would read the pixels around it).
type rrcStep struct {
	w, h         int
	scale, ratio [2]float64
	filter       Filter
}

func (st *rrcStep) Run(a *Augmenter, _ *Scratch, rng *rand.Rand, m *imgcodec.Image) (*imgcodec.Image, error) {
	c := RandomResizedCropRect(rng, m.Width, m.Height, st.scale, st.ratio)
	crop := SubImage(m, c.Min.X, c.Min.Y, c.Max.X, c.Max.Y)
	dst := imgcodec.NewImage(st.w, st.h, m.Channels)
	return swap(dst, m, a.Resize(dst, &crop, st.filter))
}

// swap returns dst and releases m, or releases dst on an error.
func swap(dst, m *imgcodec.Image, err error) (*imgcodec.Image, error) {
	if err != nil {
		dst.Release()
		return m, err
	}
	m.Release()
	return dst, nil
}

// resizeStep is Resize: to w x h, or the shorter edge to short (at most
// maxSize on the longer).
type resizeStep struct {
	w, h, short, maxSize int
	filter               Filter
}

// outSize is torchvision's _compute_resized_output_size.
func (st *resizeStep) outSize(w, h int) (int, int) {
	if st.short == 0 {
		return st.w, st.h
	}
	short, long := w, h
	if h < w {
		short, long = h, w
	}
	ns, nl := st.short, int(float64(st.short)*float64(long)/float64(short))
	if st.maxSize != 0 && nl > st.maxSize {
		ns, nl = int(float64(st.maxSize)*float64(ns)/float64(nl)), st.maxSize
	}
	if w <= h {
		return ns, nl
	}
	return nl, ns
}

func (st *resizeStep) Run(a *Augmenter, _ *Scratch, _ *rand.Rand, m *imgcodec.Image) (*imgcodec.Image, error) {
	w, h := st.outSize(m.Width, m.Height)
	if w == m.Width && h == m.Height {
		return m, nil // torchvision returns the picture itself
	}
	dst := imgcodec.NewImage(w, h, m.Channels)
	return swap(dst, m, a.Resize(dst, m, st.filter))
}

// centerCropStep is CenterCrop: the picture padded with 0 where it is
// smaller than the crop, as torchvision's center_crop.
type centerCropStep struct{ w, h int }

func (st *centerCropStep) Run(_ *Augmenter, _ *Scratch, _ *rand.Rand, m *imgcodec.Image) (*imgcodec.Image, error) {
	if m.Width == st.w && m.Height == st.h {
		return m, nil
	}
	var pad [4]int
	if st.w > m.Width {
		pad[0], pad[2] = (st.w-m.Width)/2, (st.w-m.Width+1)/2
	}
	if st.h > m.Height {
		pad[1], pad[3] = (st.h-m.Height)/2, (st.h-m.Height+1)/2
	}
	pw, ph := m.Width+pad[0]+pad[2], m.Height+pad[1]+pad[3]
	top := int(math.RoundToEven(float64(ph-st.h) / 2))
	left := int(math.RoundToEven(float64(pw-st.w) / 2))
	dst := imgcodec.NewImage(st.w, st.h, m.Channels)
	padCrop(dst, m, pad, left, top, "constant", [3]uint8{})
	m.Release()
	return dst, nil
}

// randomCropStep is RandomCrop: padding, pad_if_needed, then a crop at a
// uniform position (top first, then left, as torchvision's get_params).
type randomCropStep struct {
	w, h     int
	pad      [4]int
	ifNeeded bool
	mode     string
	fill     [3]uint8
}

func (st *randomCropStep) Run(_ *Augmenter, _ *Scratch, rng *rand.Rand, m *imgcodec.Image) (*imgcodec.Image, error) {
	pad := st.pad
	pw, ph := m.Width+pad[0]+pad[2], m.Height+pad[1]+pad[3]
	if st.ifNeeded && pw < st.w {
		// torchvision pads both sides by the shortfall.
		d := st.w - pw
		pad[0], pad[2], pw = pad[0]+d, pad[2]+d, pw+2*d
	}
	if st.ifNeeded && ph < st.h {
		d := st.h - ph
		pad[1], pad[3], ph = pad[1]+d, pad[3]+d, ph+2*d
	}
	if pw < st.w || ph < st.h {
		return m, fmt.Errorf("augment: RandomCrop: required crop size %dx%d is larger than the %dx%d picture (padded)", st.w, st.h, pw, ph)
	}
	top, left := 0, 0
	if pw != st.w || ph != st.h {
		top = rng.IntN(ph - st.h + 1)
		left = rng.IntN(pw - st.w + 1)
	}
	if pad == ([4]int{}) && pw == st.w && ph == st.h {
		return m, nil
	}
	dst := imgcodec.NewImage(st.w, st.h, m.Channels)
	padCrop(dst, m, pad, left, top, st.mode, st.fill)
	m.Release()
	return dst, nil
}

// padCrop writes into dst the part at (left, top) of m padded by pad
// (left, top, right, bottom) in mode: constant (fill), edge, reflect
// (the edge pixel not repeated) or symmetric (repeated), as numpy's pad,
// which torchvision's pad calls on PIL images.
func padCrop(dst, m *imgcodec.Image, pad [4]int, left, top int, mode string, fill [3]uint8) {
	c := m.Channels
	xs := make([]int, dst.Width) // source column of each output column, -1: fill
	for x := range xs {
		xs[x] = padIndex(left+x-pad[0], m.Width, mode)
	}
	for y := range dst.Height {
		sy := padIndex(top+y-pad[1], m.Height, mode)
		row := dst.Pix[y*dst.Stride:][:dst.Width*c]
		for x, sx := range xs {
			px := row[x*c : x*c+c]
			if sy < 0 || sx < 0 {
				for k := range px {
					px[k] = fill[k]
				}
				continue
			}
			copy(px, m.Pix[sy*m.Stride+sx*c:][:c])
		}
	}
}

// padIndex maps coordinate i of a padded axis onto the n pixels of the
// picture: -1 for constant padding outside it.
func padIndex(i, n int, mode string) int {
	if i >= 0 && i < n {
		return i
	}
	switch mode {
	case "edge":
		return min(max(i, 0), n-1)
	case "reflect":
		if n == 1 {
			return 0
		}
		p := 2 * (n - 1)
		i = ((i % p) + p) % p
		if i >= n {
			i = p - i
		}
		return i
	case "symmetric":
		p := 2 * n
		i = ((i % p) + p) % p
		if i >= n {
			i = p - 1 - i
		}
		return i
	}
	return -1
}

// flipStep is RandomHorizontalFlip or RandomVerticalFlip.
type flipStep struct {
	p        float64
	vertical bool
}

func (st flipStep) Run(_ *Augmenter, _ *Scratch, rng *rand.Rand, m *imgcodec.Image) (*imgcodec.Image, error) {
	if !(rng.Float64() < st.p) {
		return m, nil
	}
	if st.vertical {
		FlipVertical(m)
	} else {
		FlipHorizontal(m)
	}
	return m, nil
}

// FlipVertical mirrors m top to bottom in place.
func FlipVertical(m *imgcodec.Image) {
	n := m.Width * m.Channels
	for y0, y1 := 0, m.Height-1; y0 < y1; y0, y1 = y0+1, y1-1 {
		a, b := m.Pix[y0*m.Stride:][:n], m.Pix[y1*m.Stride:][:n]
		for i := range a {
			a[i], b[i] = b[i], a[i]
		}
	}
}

// grayStep is Grayscale: the gray value in every channel (one channel
// served, for num_output_channels=1, by the tensor's writer); pil: on a
// PIL image, PIL's rounded luma.
type grayStep struct{ pil bool }

func (g grayStep) Run(_ *Augmenter, _ *Scratch, _ *rand.Rand, m *imgcodec.Image) (*imgcodec.Image, error) {
	if m.Channels != 3 {
		return m, nil
	}
	if g.pil {
		return m, pilGray(m)
	}
	return m, ToGrayscale(m)
}
