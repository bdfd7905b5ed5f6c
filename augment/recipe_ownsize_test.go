package augment

import (
	"strings"
	"testing"
)

// TestRecipeOwnSize: a recipe without a crop or resize (ToTensor +
// Normalize alone, every CIFAR and MNIST script's test transform; flips
// and colour ops) has no problem: it keeps each picture's size (OwnSize),
// which CompileSized takes from the data, checking the ops against it.
// A resize of pictures of any size without a crop after it is still
// refused, naming the op (before, each of these was refused: "the output
// size is each picture's own", or "ColorJitter: the output size varies").
// A Resize(int) without a crop after it is one too: its size follows the
// picture's.
func TestRecipeOwnSize(t *testing.T) {
	norm := Op{Op: OpNormalize, Mean: Nums{0.5}, Std: Nums{0.5}}
	for _, r := range []Recipe{
		{{Op: OpToTensor}},
		{{Op: OpToTensor}, norm},
		{{Op: OpRandomHorizontalFlip}, {Op: OpColorJitter, Brightness: Nums{0.4}}, {Op: OpGrayscale}, {Op: OpPILToTensor},
			{Op: OpConvertImageDtype, Dtype: "float32"}, norm, {Op: OpRandomErasing}},
	} {
		if ps := r.Problems(); ps != nil {
			t.Fatalf("%+v: %v", r, Problems(ps))
		}
		c, err := r.Compile()
		if err != nil || !c.OwnSize || c.Width != 0 || c.Height != 0 || c.Head.Kind != HeadDecode {
			t.Fatalf("%+v: %+v %v, want OwnSize, size 0", r, c, err)
		}
		c, err = r.CompileSized(1, 28, 30)
		if err != nil || !c.OwnSize || c.Width != 28 || c.Height != 30 || c.Channels != 1 {
			t.Fatalf("%+v on 28x30: %+v %v", r, c, err)
		}
	}
	// A crop or resize anywhere fixes the size: not OwnSize.
	for _, r := range []Recipe{
		{{Op: OpRandomCrop, Size: Nums{32}, Padding: Nums{4}}, {Op: OpToTensor}},
		{{Op: OpRandomResizedCrop, Size: Nums{32}}, {Op: OpToTensor}},
		{{Op: OpResize, Size: Nums{40}}, {Op: OpCenterCrop, Size: Nums{32}}, {Op: OpToTensor}},
	} {
		if c, err := r.CompileSized(3, 32, 32); err != nil || c.OwnSize || c.Width != 32 {
			t.Errorf("%+v: %+v %v", r, c, err)
		}
	}
	// The data's size checks the ops: a blur wider than the picture (named
	// by its kernel_size), a crop larger than it.
	for _, c := range []struct {
		r          Recipe
		field, msg string
	}{
		{Recipe{{Op: OpGaussianBlur, KernelSize: Nums{65}}, {Op: OpToTensor}}, "augment[0].kernel_size", "kernel 65x65 on a 32x32 picture"},
		{Recipe{{Op: OpRandomVerticalFlip}, {Op: OpRandomCrop, Size: Nums{40}}, {Op: OpToTensor}}, "augment[1]", "RandomCrop size 40x40 on a 32x32 picture"},
	} {
		_, err := c.r.CompileSized(3, 32, 32)
		p, ok := err.(Problem)
		if !ok || p.Field != c.field || !strings.Contains(p.Msg, c.msg) {
			t.Errorf("%+v on 32x32: %v, want %s: ...%s...", c.r, err, c.field, c.msg)
		}
	}
	// Resize(int) without a crop after it: its size follows the picture's
	// (torchvision's int(size * long / short) on the longer edge), planned
	// once the data's size is known (before: refused, "Resize: the output
	// size varies with the picture").
	r := Recipe{{Op: OpResize, Size: Nums{256}}, {Op: OpColorJitter, Brightness: Nums{0.2}}, {Op: OpToTensor}}
	if ps := r.Problems(); ps != nil {
		t.Fatalf("Resize(256) alone: %v", Problems(ps))
	}
	if c, err := r.Compile(); err != nil || !c.OwnSize || c.Width != 0 || c.InWidth != 0 {
		t.Fatalf("Resize(256) alone, size unknown: %+v %v", c, err)
	}
	if c, err := r.CompileSized(3, 40, 30); err != nil || !c.OwnSize || c.Width != 341 || c.Height != 256 || c.InWidth != 40 || c.InHeight != 30 {
		t.Fatalf("Resize(256) of 40x30: %+v %v, want 341x256 from 40x30", c, err)
	}
	// A crop after it fixes the size again.
	r = Recipe{r[0], {Op: OpRandomCrop, Size: Nums{224}, PadIfNeeded: true}, r[1], r[2]}
	if c, err := r.CompileSized(3, 40, 30); err != nil || c.OwnSize || c.Width != 224 {
		t.Fatalf("Resize(256) + RandomCrop(224) of 40x30: %+v %v", c, err)
	}
}
