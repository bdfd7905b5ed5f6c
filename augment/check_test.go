package augment

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestEraseDrawExtremeRatio: a ratio whose rectangle cannot fit (3e38, a
// float32 torchvision takes; inf, NaN, which Check refuses) leaves the
// tensor alone after ten draws, as torchvision does (before: the
// rectangle's side overflowed int and rand.IntN panicked, "invalid
// argument to IntN").
func TestEraseDrawExtremeRatio(t *testing.T) {
	for _, ratio := range [][2]float64{{3e38, 3e38}, {1e300, 1e300}, {math.Inf(1), math.Inf(1)}, {math.NaN(), math.NaN()}, {1e-300, 1e-300}} {
		e := &RandomErasing{P: 1, Ratio: ratio}
		for seed := range uint64(20) {
			p := e.Draw(rand.New(rand.NewPCG(seed, 1)), 3, 16, 16, nil)
			if p.Erase && (p.H < 0 || p.W < 0 || p.I+p.H > 16 || p.J+p.W > 16) {
				t.Fatalf("ratio %v: plan %+v outside 16x16", ratio, p)
			}
		}
	}
}

// TestCropRectExtremeRatio: a ratio range no crop of the image meets
// (3e38, 1e-40: float32s torchvision takes) falls back to a centre crop
// inside the image, at least one pixel each way (before: a box of zero
// width or a side overflowed to a negative int: "bad image size ...
// outside 72x52 source", blaming the image).
func TestCropRectExtremeRatio(t *testing.T) {
	for _, ratio := range [][2]float64{{3e38, 3e38}, {1e-40, 1e-40}, {1e-30, 3e38}, {100, 100}, {0.01, 0.01}} {
		for _, wh := range [][2]int{{72, 52}, {10, 1000}, {1000, 10}, {1, 1}} {
			for seed := range uint64(10) {
				r := RandomResizedCropRect(rand.New(rand.NewPCG(seed, 2)), wh[0], wh[1], DefaultScale, ratio)
				if r.Dx() < 1 || r.Dy() < 1 || r.Min.X < 0 || r.Min.Y < 0 || r.Max.X > wh[0] || r.Max.Y > wh[1] {
					t.Fatalf("ratio %v on %dx%d: crop %v", ratio, wh[0], wh[1], r)
				}
			}
		}
	}
}

// TestOpsCheck: each op refuses what torchvision refuses (NaN, infinite
// or beyond-float32 bounds, reversed ranges) and counts without bound;
// the defaults and torchvision's edges pass.
func TestOpsCheck(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	bad := []struct {
		op   ImageOp
		want string
	}{
		{&TrivialAugmentWide{Bins: 1 << 40}, "num_magnitude_bins"},
		{&TrivialAugmentWide{Bins: 1}, "num_magnitude_bins"},
		{&RandAugment{Bins: 100000}, "num_magnitude_bins"},
		{&RandAugment{N: 1 << 30}, "num_ops"},
		{&RandAugment{M: 31}, "magnitude"},
		{&RandAugment{M: -1}, "magnitude"},
		{&AugMix{Severity: 11}, "severity"},
		{&AugMix{Width: 1 << 30}, "mixture_width"},
		{&AugMix{Alpha: nan}, "alpha"},
		{&AugMix{Alpha: -1}, "alpha"},
		{&AutoAugment{Fill: []float64{nan}}, "fill"},
		{&ColorJitter{Brightness: [2]float64{0, 3.5e38}}, "brightness"},
		{&ColorJitter{Contrast: [2]float64{0, inf}}, "contrast"},
		{&ColorJitter{Saturation: [2]float64{nan, nan}}, "saturation"},
		{&ColorJitter{Hue: [2]float64{-0.6, 0}}, "hue"},
		{&ColorJitter{Brightness: [2]float64{2, 1}}, "brightness"},
		{RandomGrayscale{P: nan}, "p"},
		{&GaussianBlurOp{KernelW: 4, KernelH: 3}, "kernel"},
		{&GaussianBlurOp{KernelW: 3, KernelH: 3, Sigma: [2]float64{1, inf}}, "sigma"},
		{&GaussianBlurOp{KernelW: 3, KernelH: 3, Sigma: [2]float64{nan, nan}}, "sigma"},
		{&GaussianBlurOp{KernelW: 3, KernelH: 3, Sigma: [2]float64{1e-300, 1}}, "sigma"},
		{&RandomRotation{Degrees: [2]float64{nan, nan}}, "degrees"},
		{&RandomRotation{Degrees: [2]float64{10, -10}}, "degrees"},
		{&RandomAffine{Degrees: [2]float64{-inf, inf}}, "degrees"},
		{&RandomAffine{Scale: &[2]float64{1, inf}}, "scale"},
		{&RandomAffine{Translate: &[2]float64{nan, 0}}, "translate"},
		{&RandomAffine{Shear: &[4]float64{nan, nan}}, "shear"},
		{Sequence{&ColorJitter{}, &RandomRotation{Degrees: [2]float64{inf, inf}}}, "RandomRotation"},
	}
	for _, c := range bad {
		if err := Check(c.op); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%#v: %v; want an error naming %s", c.op, err, c.want)
		}
	}
	for _, e := range []*RandomErasing{
		{P: nan}, {P: 1, Ratio: [2]float64{inf, inf}}, {P: 1, Ratio: [2]float64{1e300, 1e300}}, {P: 1, Ratio: [2]float64{0, 1}},
		{P: 1, Ratio: [2]float64{1e-300, 1}}, {P: 1, Scale: [2]float64{nan, nan}}, {P: 1, Scale: [2]float64{0.5, 0.2}},
		{P: 1, Value: []float32{float32(inf)}},
	} {
		if err := e.Check(); err == nil || !strings.Contains(err.Error(), "RandomErasing") {
			t.Errorf("%+v: %v; want refused", *e, err)
		}
	}
	good := []ImageOp{
		&TrivialAugmentWide{}, &TrivialAugmentWide{Bins: MaxMagnitudeBins}, &RandAugment{}, &RandAugment{N: 16, M: 1023, Bins: 1024},
		&AutoAugment{}, &AugMix{}, &AugMix{Severity: 10, Width: 16, Depth: -1, Alpha: 1e30},
		&ColorJitter{}, &ColorJitter{Brightness: JitterRange(3e38, 1), Hue: [2]float64{-0.5, 0.5}},
		RandomGrayscale{P: 1}, &GaussianBlurOp{KernelW: 255, KernelH: 1, Sigma: [2]float64{1e-30, 1e30}},
		&RandomRotation{Degrees: [2]float64{-1e30, 1e30}}, &RandomAffine{Scale: &[2]float64{1e30, 1e30}},
		Sequence{&RandomGrayscale{P: 0.5}, &GaussianBlurOp{KernelW: 3, KernelH: 3}},
	}
	for _, op := range good {
		if err := Check(op); err != nil {
			t.Errorf("%#v: %v; want taken", op, err)
		}
	}
	if err := (&RandomErasing{P: 1, Ratio: [2]float64{1e-40, 3e38}}).Check(); err != nil {
		t.Errorf("ratio (1e-40, 3e38): %v; want taken (float32s above 0)", err)
	}
	if err := CheckSize(Sequence{&GaussianBlurOp{KernelW: 31, KernelH: 33}}, 16); err == nil || !strings.Contains(err.Error(), "at most 31") {
		t.Errorf("kernel 33 on 16x16: %v; want refused", err)
	}
	if err := CheckSize(&GaussianBlurOp{KernelW: 31, KernelH: 31}, 16); err != nil {
		t.Errorf("kernel 31 on 16x16: %v", err)
	}
}
