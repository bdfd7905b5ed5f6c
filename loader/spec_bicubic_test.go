package loader

import (
	"strings"
	"testing"

	"github.com/faster-training/faster/augment"
)

// TestSpecBicubicPolicy: the fixed recipe's policy and warps take
// augment_interpolation bicubic (the reference's Swin/MaxViT recipes pass
// it; torchvision warps them on PIL images, PIL's bicubic), but not with
// AugMix, which torchvision refuses bicubic (it warps tensors); other
// values are refused as before.
func TestSpecBicubicPolicy(t *testing.T) {
	for _, aa := range []string{"imagenet", "ta-wide", "ra"} {
		s := Defaults()
		s.Transform = Train
		s.Recipe.AutoAugment, s.Recipe.AugmentInterpolation, s.Recipe.RotateDegrees = aa, "bicubic", augment.Nums{10}
		if err := s.Validate(); err != nil {
			t.Fatalf("%s bicubic: %v", aa, err)
		}
		o, err := s.Options()
		if err != nil {
			t.Fatal(err)
		}
		seq, ok := o.Augment.(augment.Sequence)
		if !ok || len(seq) != 2 {
			t.Fatalf("%s: augment %T %v, want the policy and RandomRotation", aa, o.Augment, o.Augment)
		}
		if r, ok := seq[1].(*augment.RandomRotation); !ok || r.Interp != augment.WarpBicubic {
			t.Errorf("%s: RandomRotation %+v, want WarpBicubic", aa, seq[1])
		}
	}
	for _, c := range []struct{ aa, interp, msg string }{
		{"augmix", "bicubic", "AugMix"},
		{"imagenet", "lanczos", "want nearest, bilinear or bicubic"},
	} {
		s := Defaults()
		s.Transform = Train
		s.Recipe.AutoAugment, s.Recipe.AugmentInterpolation = c.aa, c.interp
		ps := s.Problems()
		if len(ps) != 1 || ps[0].Field != "recipe.augment_interpolation" || !strings.Contains(ps[0].Msg, c.msg) {
			t.Errorf("%s %s: %v, want recipe.augment_interpolation: ...%s...", c.aa, c.interp, ps, c.msg)
		}
	}
}
