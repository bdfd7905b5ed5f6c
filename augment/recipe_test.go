package augment

import (
	"encoding/json"
	rf "reflect"
	"strings"
	"testing"
)

// TestRecipeJSON: a recipe as the Python client sends it (torchvision's
// class and argument names; numbers or lists; value "random").
func TestRecipeJSON(t *testing.T) {
	js := `[{"op": "RandomCrop", "size": 32, "padding": 4, "padding_mode": "reflect", "fill": [1, 2, 3]},
		{"op": "RandomHorizontalFlip", "p": 0.25}, {"op": "ColorJitter", "brightness": 0.4, "hue": [-0.1, 0.1]},
		{"op": "Grayscale", "num_output_channels": 1}, {"op": "ToTensor"},
		{"op": "Normalize", "mean": [0.5], "std": [0.25]}, {"op": "RandomErasing", "value": "random", "p": 0.5}]`
	var r Recipe
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		t.Fatal(err)
	}
	if ps := r.Problems(); ps != nil {
		t.Fatalf("problems: %v", ps)
	}
	if !rf.DeepEqual(r[0].Size, Nums{32}) || !rf.DeepEqual(r[0].Padding, Nums{4}) || *r[1].P != 0.25 ||
		!rf.DeepEqual(r[2].Hue, Nums{-0.1, 0.1}) || !r[6].Value.Random {
		t.Fatalf("decoded %+v", r)
	}
	c, err := r.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if c.Width != 32 || c.Height != 32 || c.Channels != 1 || !c.Normalized || c.Mean[0] != 0.5 || c.Std[0] != 0.25 ||
		c.Erasing == nil || !c.Erasing.RandomValue || c.ErasingFirst || c.Head.Kind != HeadDecode {
		t.Fatalf("compiled %+v", c)
	}
	var bad Recipe
	if err := json.Unmarshal([]byte(`[{"op": "Resize", "size": "big"}]`), &bad); err == nil {
		t.Fatal("size \"big\" accepted")
	}
}

// TestRecipeProblems: every op checks its own arguments, torchvision's
// rules, and all the problems come at once, each with its field path.
func TestRecipeProblems(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	i := func(x int) *int { return &x }
	r := Recipe{
		{Op: OpRandomResizedCrop, Size: Nums{224}, Scale: Nums{0.5, 0.1}},
		{Op: OpRandomRotation, Degrees: Nums{-5}},
		{Op: "RandomPerspective"},
		{Op: OpRandomCrop, Size: Nums{32}, Padding: Nums{1, 2, 3}, PaddingMode: "wrap"},
		{Op: OpColorJitter, Hue: Nums{0.7}, Brightness: Nums{-1}},
		{Op: OpRandAugment, Magnitude: i(31)},
		{Op: OpAutoAugment, Policy: "cifar100"},
		{Op: OpGaussianBlur, KernelSize: Nums{4}},
		{Op: OpRandomHorizontalFlip, P: f(1.5)},
		{Op: OpNormalize, Mean: Nums{0.5, 0.5}, Std: Nums{0}},
		{Op: OpGrayscale, NumOutputChannels: 2},
		{Op: OpResize, Size: Nums{256}, Degrees: Nums{3}},
	}
	want := []string{"augment[0].scale", "augment[1].degrees", "augment[2].op", "augment[3].padding", "augment[3].padding_mode",
		"augment[4].brightness", "augment[4].hue", "augment[5].magnitude", "augment[6].policy", "augment[7].kernel_size",
		"augment[8].p", "augment[9].mean", "augment[9].std", "augment[10].num_output_channels", "augment[11].degrees"}
	var got []string
	for _, p := range r.Problems() {
		got = append(got, p.Field)
		if p.Msg == "" {
			t.Errorf("%s: no message", p.Field)
		}
	}
	if !rf.DeepEqual(got, want) {
		t.Fatalf("fields\n got %v\nwant %v\n%v", got, want, Problems(r.Problems()))
	}
	// The recipe whole: a second Normalize, picture ops after ToTensor,
	// Normalize before it, a crop larger than the padded picture. (A
	// Resize(int) without a crop after it is no problem: its size follows
	// the picture's, TestRecipeOwnSize.)
	for _, c := range []struct {
		r     Recipe
		field string
		msg   string
	}{
		{Recipe{{Op: OpToTensor}, {Op: OpNormalize, Mean: Nums{0}, Std: Nums{1}}, {Op: OpNormalize, Mean: Nums{0}, Std: Nums{1}}}, "augment[2]", "second Normalize"},
		{Recipe{{Op: OpCenterCrop, Size: Nums{8}}, {Op: OpToTensor}, {Op: OpColorJitter, Brightness: Nums{0.1}}}, "augment[2]", "ColorJitter after ToTensor"},
		{Recipe{{Op: OpCenterCrop, Size: Nums{8}}, {Op: OpNormalize, Mean: Nums{0}, Std: Nums{1}}}, "augment[1]", "Normalize before ToTensor"},
		{Recipe{{Op: OpCenterCrop, Size: Nums{8}}, {Op: OpRandomCrop, Size: Nums{16}, Padding: Nums{2}}}, "augment[1]", "larger"},
		{Recipe{{Op: OpCenterCrop, Size: Nums{8}}, {Op: OpGrayscale}, {Op: OpToTensor}, {Op: OpNormalize, Mean: Nums{0, 0, 0}, Std: Nums{1, 1, 1}}}, "augment[3].mean", "1-channel"},
		{Recipe{{Op: OpCenterCrop, Size: Nums{8}}, {Op: OpGaussianBlur, KernelSize: Nums{17}}}, "augment[1].kernel_size", "kernel"},
	} {
		ps := c.r.Problems()
		if len(ps) != 1 || ps[0].Field != c.field || !strings.Contains(ps[0].Msg, c.msg) {
			t.Errorf("%+v: got %v, want %s: ...%s...", c.r, ps, c.field, c.msg)
		}
	}
}

// TestNamedRecipesBuild: every named recipe builds, in the fixed order, a
// recipe without problems whose compiled steps are TrainOps' ops (what
// the flags' fixed recipe runs), and the eval recipe's resize rule.
func TestNamedRecipesBuild(t *testing.T) {
	for _, name := range RecipeNames {
		p, err := NamedRecipe(name)
		if err != nil {
			t.Fatal(err)
		}
		p.ErasingValue = "random"
		for _, tr := range []string{"train", "eval"} {
			r, err := p.Build(tr, 176)
			if err != nil {
				t.Fatal(name, err)
			}
			if ps := r.Problems(); ps != nil {
				t.Fatalf("%s %s: %v", name, tr, ps)
			}
			c, err := r.Compile()
			if err != nil {
				t.Fatal(err)
			}
			if c.Width != 176 || c.Height != 176 || c.Channels != 3 {
				t.Errorf("%s %s: %dx%dx%d", name, tr, c.Width, c.Height, c.Channels)
			}
			if tr == "eval" {
				want := 176 * 256 / 224
				if name == "torchvision-v2" {
					want = 182 // round(176*232/224)
				}
				if c.Head.Kind != HeadResizeCenterCrop || c.Head.Resize != want {
					t.Errorf("%s eval head %+v, want resize %d", name, c.Head, want)
				}
				continue
			}
			if c.Head.Kind != HeadRandomResizedCrop || c.Head.Train.NoFlip || c.Head.Train.FlipProb != 0.5 {
				t.Errorf("%s: head %+v", name, c.Head)
			}
			aug, ok := c.Augment()
			ops, erasing, err := p.TrainOps()
			if !ok || err != nil || !rf.DeepEqual(aug, ops) || !rf.DeepEqual(c.Erasing, erasing) {
				t.Errorf("%s: compiled %#v %+v, TrainOps %#v %+v (%v)", name, aug, c.Erasing, ops, erasing, err)
			}
			if (erasing != nil) != (name == "torchvision-v2") {
				t.Errorf("%s: erasing %+v", name, erasing)
			}
		}
	}
	if _, err := NamedRecipe("torchvision-v3"); err == nil || !strings.Contains(err.Error(), "torchvision-v2") {
		t.Errorf("unknown name: %v", err)
	}
}

// TestPadIndex: numpy's pad modes (what torchvision's pad calls on PIL
// images), beyond one reflection too.
func TestPadIndex(t *testing.T) {
	n := 4 // pixels 0 1 2 3
	for _, c := range []struct {
		mode string
		want []int // coordinates -6..9
	}{
		{"reflect", []int{0, 1, 2, 3, 2, 1, 0, 1, 2, 3, 2, 1, 0, 1, 2, 3}},
		{"symmetric", []int{2, 3, 3, 2, 1, 0, 0, 1, 2, 3, 3, 2, 1, 0, 0, 1}},
		{"edge", []int{0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 3, 3, 3, 3, 3, 3}},
		{"constant", []int{-1, -1, -1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, -1, -1}},
	} {
		var got []int
		for i := -6; i <= 9; i++ {
			got = append(got, padIndex(i, n, c.mode))
		}
		if !rf.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.mode, got, c.want)
		}
	}
}

// A warp's interpolation follows where torchvision runs it: before the
// recipe's PILToTensor or ToTensor on a PIL image (WarpBilinearPIL,
// WarpNearestPIL: PIL's bilinear warps and colour ops), after it the
// tensor path's; AugMix stays on the tensor path (torchvision converts a
// PIL picture to a tensor for it); bicubic is PIL's anywhere it is
// allowed; the named recipes' policies run on PIL images.
func TestWarpPathFollowsTheTensor(t *testing.T) {
	interpOf := func(st Step) Interp {
		switch o := st.(inPlace).op.(type) {
		case *RandomRotation:
			return o.Interp
		case *RandomAffine:
			return o.Interp
		case *TrivialAugmentWide:
			return o.Interp
		case *AugMix:
			return o.Interp
		}
		t.Fatalf("step %T", st)
		return 0
	}
	deg := Nums{10, 10}
	r := Recipe{
		{Op: OpRandomRotation, Degrees: deg, Interpolation: "bilinear"},
		{Op: OpRandomAffine, Degrees: deg, Interpolation: "nearest"},
		{Op: OpAugMix, Interpolation: "bilinear"},
		{Op: OpTrivialAugmentWide, Interpolation: "bicubic"},
		{Op: OpPILToTensor},
		{Op: OpRandomRotation, Degrees: deg, Interpolation: "bilinear"},
		{Op: OpTrivialAugmentWide, Interpolation: "bilinear"},
		{Op: OpConvertImageDtype, Dtype: "float32"},
	}
	c, err := r.Compile()
	if err != nil {
		t.Fatal(err)
	}
	want := []Interp{WarpBilinearPIL, WarpNearestPIL, WarpBilinear, WarpBicubic, WarpBilinear, WarpBilinear}
	if len(c.Steps) != len(want) {
		t.Fatalf("%d steps, want %d", len(c.Steps), len(want))
	}
	for i, st := range c.Steps {
		if got := interpOf(st); got != want[i] {
			t.Errorf("step %d: %v, want %v", i, got, want[i])
		}
	}
	named, err := NamedRecipe("torchvision-ta-wide")
	if err != nil {
		t.Fatal(err)
	}
	op, _, err := named.TrainOps()
	if err != nil {
		t.Fatal(err)
	}
	if ta, ok := op.(*TrivialAugmentWide); !ok || ta.Interp != WarpBilinearPIL {
		t.Errorf("torchvision-ta-wide's policy: %#v, want TrivialAugmentWide warping bilinear as PIL (the reference runs it on PIL images)", op)
	}
}
