package augment

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/faster-training/faster/imgcodec"
)

// FuzzRecipe: any JSON is refused with problems or compiles, and a
// recipe that compiles runs on a picture to its planned size without a
// panic (or fails with an error naming the op's limit).
func FuzzRecipe(f *testing.F) {
	for _, s := range []string{
		`[{"op": "RandomCrop", "size": 32, "padding": 4, "padding_mode": "reflect"}, {"op": "ToTensor"}]`,
		`[{"op": "Resize", "size": 40}, {"op": "CenterCrop", "size": [20, 30]}, {"op": "Grayscale"}, {"op": "ToTensor"}, {"op": "Normalize", "mean": [0.5], "std": [0.5]}]`,
		`[{"op": "RandomResizedCrop", "size": 16}, {"op": "RandomHorizontalFlip"}, {"op": "AutoAugment", "policy": "svhn"}, {"op": "PILToTensor"}, {"op": "ConvertImageDtype", "dtype": "float32"}, {"op": "RandomErasing", "value": "random"}]`,
		`[{"op": "RandomCrop", "size": [8, 50], "pad_if_needed": true, "padding_mode": "symmetric", "fill": 3}, {"op": "RandomVerticalFlip", "p": 1}, {"op": "ColorJitter", "brightness": [0.5, 1.5], "hue": 0.2}]`,
		`[{"op": "Resize", "size": 7, "max_size": 9}, {"op": "RandomCrop", "size": 7}]`,
		`[{"op": "RandomAffine", "degrees": 10, "shear": [1, 2, 3, 4]}, {"op": "CenterCrop", "size": 5}]`,
		`[{"op": "ToTensor"}, {"op": "Normalize", "mean": [0.5], "std": [0.2]}]`,
		`[{"op": "RandomHorizontalFlip"}, {"op": "GaussianBlur", "kernel_size": 9}, {"op": "PILToTensor"}]`,
		`[{"op": "CenterCrop", "size": 9}, {"op": "RandomRotation", "degrees": 400, "interpolation": "bicubic", "center": [-3, 40]}, {"op": "RandAugment", "interpolation": "bicubic", "fill": 255}]`,
	} {
		f.Add([]byte(s), 24, 17)
	}
	f.Fuzz(func(t *testing.T, js []byte, w, h int) {
		var r Recipe
		if json.Unmarshal(js, &r) != nil || len(r) > 12 {
			return
		}
		if r.Problems() != nil {
			return
		}
		c, err := r.Compile()
		if err != nil {
			t.Fatalf("Problems none, Compile %v", err)
		}
		if c.Width*c.Height > 1<<16 {
			return // a large picture: fine, but slow to fuzz
		}
		w, h = 1+abs(w)%48, 1+abs(h)%48
		if c.OwnSize {
			// Each picture's own size: planned for the data's (a blur or
			// crop too large for it is a Problem, not a run's error).
			if c, err = r.CompileSized(3, w, h); err != nil {
				return
			}
			if !c.OwnSize || c.InWidth != w || c.InHeight != h || c.Width < 1 || c.Height < 1 {
				t.Fatalf("CompileSized(%d, %d): %dx%d from %dx%d, OwnSize %v", w, h, c.Width, c.Height, c.InWidth, c.InHeight, c.OwnSize)
			}
			if c.Width*c.Height > 1<<16 {
				return // a Resize(int) to a large picture
			}
		}
		m := imgcodec.NewImage(w, h, 3)
		for i := range m.Pix {
			m.Pix[i] = uint8(i * 7)
		}
		var a Augmenter
		var s Scratch
		rng := rand.New(rand.NewPCG(1, 2))
		if c.Head.Kind == HeadRandomResizedCrop {
			p := c.Head.Train.Plan(rng, w, h)
			dst := imgcodec.NewImage(c.Head.Train.Width, c.Head.Train.Height, 3)
			if err := a.Apply(dst, m, p); err != nil {
				t.Fatal(err)
			}
			m = dst
		}
		for _, st := range c.Steps {
			if m, err = st.Run(&a, &s, rng, m); err != nil {
				return // a picture too small for a crop or a blur: an error, not a panic
			}
		}
		if c.Head.Kind == HeadDecode && (m.Width != c.Width || m.Height != c.Height) {
			t.Fatalf("made %dx%d, planned %dx%d", m.Width, m.Height, c.Width, c.Height)
		}
	})
}
