package augment

import (
	"strings"
	"testing"

	"github.com/faster-training/faster/imgcodec"
)

// TestRecipeBicubicWarps: a warp or a policy with interpolation bicubic
// runs where torchvision 0.14 runs it, on PIL images (before ToTensor or
// PILToTensor), PIL's bicubic; where torchvision refuses it (on a tensor,
// after PILToTensor; AugMix, which warps tensors always) the recipe is
// refused naming the op's interpolation; other values are refused as
// before.
func TestRecipeBicubicWarps(t *testing.T) {
	i := func(x int) *int { return &x }
	head := Op{Op: OpCenterCrop, Size: Nums{32}}
	tail := []Op{{Op: OpPILToTensor}, {Op: OpConvertImageDtype, Dtype: "float32"}}
	for _, op := range []Op{
		{Op: OpRandomRotation, Degrees: Nums{10}, Interpolation: "bicubic"},
		{Op: OpRandomAffine, Degrees: Nums{10}, Translate: Nums{0.1, 0.1}, Shear: Nums{5}, Interpolation: "bicubic", Fill: Nums{1, 2, 3}},
		{Op: OpAutoAugment, Policy: "imagenet", Interpolation: "bicubic"},
		{Op: OpAutoAugment, Policy: "cifar10", Interpolation: "bicubic"},
		{Op: OpAutoAugment, Policy: "svhn", Interpolation: "bicubic"},
		{Op: OpRandAugment, NumOps: i(2), Magnitude: i(9), Interpolation: "bicubic"},
		{Op: OpTrivialAugmentWide, Interpolation: "bicubic"},
	} {
		r := append(Recipe{head, op}, tail...)
		if ps := r.Problems(); ps != nil {
			t.Errorf("%s bicubic before PILToTensor: %v", op.Op, Problems(ps))
		}
		// After PILToTensor: torchvision raises "Interpolation mode
		// 'bicubic' is unsupported with Tensor input".
		r = Recipe{head, tail[0], op, tail[1]}
		ps := r.Problems()
		if len(ps) != 1 || ps[0].Field != "augment[2].interpolation" || !strings.Contains(ps[0].Msg, "unsupported with Tensor input") {
			t.Errorf("%s bicubic after PILToTensor: %v, want augment[2].interpolation", op.Op, Problems(ps))
		}
	}
	for _, c := range []struct {
		op  Op
		msg string
	}{
		{Op{Op: OpAugMix, Interpolation: "bicubic"}, "AugMix"},
		{Op{Op: OpRandomRotation, Degrees: Nums{10}, Interpolation: "lanczos"}, "want nearest, bilinear or bicubic"},
		{Op{Op: OpAutoAugment, Interpolation: "box"}, "want nearest, bilinear or bicubic"},
	} {
		ps := append(Recipe{head, c.op}, tail...).Problems()
		if len(ps) != 1 || ps[0].Field != "augment[1].interpolation" || !strings.Contains(ps[0].Msg, c.msg) {
			t.Errorf("%s %q: %v, want augment[1].interpolation: ...%s...", c.op.Op, c.op.Interpolation, Problems(ps), c.msg)
		}
	}

	// The compiled steps warp as PIL: RandomRotation with its angle forced
	// equals Rotate with WarpBicubic (and its fill 0), RandomAffine's
	// shear Affine's.
	photo := loadImage(t, "testdata/photo.png")
	var rs Resizer
	src := NewImage(64, 48, 3)
	if err := rs.Resize(src, photo, Triangle); err != nil {
		t.Fatal(err)
	}
	var s Scratch
	for _, c := range []struct {
		op   Op
		want func(s *Scratch, img *imgcodec.Image) error
	}{
		{Op{Op: OpRandomRotation, Degrees: Nums{12.5, 12.5}, Interpolation: "bicubic"},
			func(s *Scratch, m *imgcodec.Image) error {
				return s.Rotate(m, 12.5, WarpBicubic, nil, []float64{0, 0, 0})
			}},
		{Op{Op: OpRandomAffine, Degrees: Nums{0, 0}, Shear: Nums{7, 7}, Interpolation: "bicubic", Fill: Nums{9}},
			func(s *Scratch, m *imgcodec.Image) error {
				return s.Affine(m, AffineParams{Scale: 1, ShearX: 7}, WarpBicubic, nil, []float64{9, 9, 9})
			}},
	} {
		w, h := 64, 48
		st, err := stepOf(c.op, &w, &h, false)
		if err != nil {
			t.Fatal(err)
		}
		got := NewImage(64, 48, 3)
		copy(got.Pix, src.Pix)
		if got, err = st.Run(nil, &s, NewRNG(1, 0), got); err != nil {
			t.Fatal(err)
		}
		want := NewImage(64, 48, 3)
		copy(want.Pix, src.Pix)
		if err := c.want(&s, want); err != nil {
			t.Fatal(err)
		}
		if d, _, _ := compareBytes(packed(got), packed(want)); d != 0 {
			t.Errorf("%s bicubic: %d levels from the PIL warp", c.op.Op, d)
		}
	}
}
