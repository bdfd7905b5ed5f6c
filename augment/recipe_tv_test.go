package augment

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/internal/testenv"
)

// recipeTVCase is one recipe op against torchvision's functional ops on
// the PIL image (what a reference Compose runs before ToTensor), with the
// random parameters forced: the Go op draws them from a seeded source and
// the same draws are handed to torchvision.
type recipeTVCase struct {
	name    string
	op      Op
	tv      func(w, h int, rng *rand.Rand) [][2]any // torchvision's ops, given the draws
	gray    bool                                    // compare channel 0 with torchvision's one channel
	maxDiff int
	maxFrac float64
}

func recipeTVCases() []recipeTVCase {
	f := func(x float64) *float64 { return &x }
	i := func(x int) *int { return &x }
	var cs []recipeTVCase
	// RandomCrop: padding of every mode, then the crop at the drawn
	// position (top first, then left, each uniform).
	for _, mode := range []string{"constant", "edge", "reflect", "symmetric"} {
		for _, pad := range []Nums{{4}, {10, 3}, {10, 20, 30, 5}, {200, 0, 0, 170}} {
			op := Op{Op: OpRandomCrop, Size: Nums{150, 160}, Padding: pad, PaddingMode: mode, Fill: Nums{9, 80, 200}}
			cs = append(cs, recipeTVCase{name: fmt.Sprintf("RandomCrop/%s/%v", mode, []float64(pad)), op: op,
				tv: func(w, h int, rng *rand.Rand) [][2]any {
					p := padOf(pad)
					pw, ph := w+p[0]+p[2], h+p[1]+p[3]
					top, left := rng.IntN(ph-150+1), rng.IntN(pw-160+1)
					return [][2]any{{"pad", map[string]any{"padding": []int{p[0], p[1], p[2], p[3]}, "fill": []int{9, 80, 200}, "mode": mode}},
						{"crop", map[string]any{"top": top, "left": left, "h": 150, "w": 160}}}
				}})
		}
		// pad_if_needed: torchvision pads both sides by the shortfall.
		op := Op{Op: OpRandomCrop, Size: Nums{240}, PadIfNeeded: true, PaddingMode: mode, Fill: Nums{33}}
		cs = append(cs, recipeTVCase{name: "RandomCrop/pad_if_needed/" + mode, op: op,
			tv: func(w, h int, rng *rand.Rand) [][2]any {
				dw, dh := max(240-w, 0), max(240-h, 0)
				top, left := rng.IntN(h+2*dh-240+1), rng.IntN(w+2*dw-240+1)
				return [][2]any{{"pad", map[string]any{"padding": []int{dw, 0}, "fill": 33, "mode": mode}},
					{"pad", map[string]any{"padding": []int{0, dh}, "fill": 33, "mode": mode}},
					{"crop", map[string]any{"top": top, "left": left, "h": 240, "w": 240}}}
			}})
	}
	fixed := func(ops ...[2]any) func(int, int, *rand.Rand) [][2]any {
		return func(int, int, *rand.Rand) [][2]any { return ops }
	}
	for _, size := range []Nums{{200}, {100, 250}, {31}, {224, 224}} {
		cs = append(cs, recipeTVCase{name: fmt.Sprintf("CenterCrop/%v", []float64(size)), op: Op{Op: OpCenterCrop, Size: size},
			tv: fixed([2]any{"center_crop", map[string]any{"size": []float64(size)}})})
	}
	for _, r := range []struct {
		size   Nums
		interp string
		max    *int
	}{{Nums{100}, "bilinear", nil}, {Nums{50, 70}, "bicubic", nil}, {Nums{100}, "bilinear", i(120)}, {Nums{77}, "nearest", nil}, {Nums{300}, "bicubic", nil}} {
		tvArgs := map[string]any{"size": []float64(r.size), "interp": r.interp}
		if r.max != nil {
			tvArgs["max_size"] = *r.max
		}
		cs = append(cs, recipeTVCase{name: fmt.Sprintf("Resize/%v/%s/max=%v", []float64(r.size), r.interp, tvArgs["max_size"]),
			op: Op{Op: OpResize, Size: r.size, Interpolation: r.interp, MaxSize: r.max}, tv: fixed([2]any{"resize", tvArgs})})
	}
	// RandomResizedCrop after another op (a step, not the fused head):
	// torchvision's resized_crop crops, then resizes the crop, so the
	// filter clamps at the crop's edges (PIL's resize(box=) reads the
	// pixels around the box: up to 15 levels apart on the edges).
	for _, r := range []struct {
		size   Nums
		interp string
		scale  Nums
	}{{Nums{100}, "bilinear", nil}, {Nums{64, 90}, "bicubic", nil}, {Nums{120}, "nearest", nil},
		{Nums{150}, "bicubic", Nums{0.02, 0.1}}, {Nums{40, 30}, "bilinear", Nums{0.5, 1}}} {
		op := Op{Op: OpRandomResizedCrop, Size: r.size, Interpolation: r.interp, Scale: r.scale}
		cs = append(cs, recipeTVCase{name: fmt.Sprintf("RandomResizedCrop(step)/%v/%s/%v", []float64(r.size), r.interp, []float64(r.scale)), op: op,
			tv: func(w, h int, rng *rand.Rand) [][2]any {
				c := RandomResizedCropRect(rng, w, h, pair(r.scale, DefaultScale), DefaultRatio)
				ow, oh := sizeOf(r.size)
				return [][2]any{{"crop", map[string]any{"top": c.Min.Y, "left": c.Min.X, "h": c.Dy(), "w": c.Dx()}},
					{"resize", map[string]any{"size": []int{oh, ow}, "interp": r.interp}}}
			}})
	}
	cs = append(cs, recipeTVCase{name: "RandomVerticalFlip/p=1", op: Op{Op: OpRandomVerticalFlip, P: f(1)}, tv: fixed([2]any{"vflip", map[string]any{}})})
	cs = append(cs, recipeTVCase{name: "RandomVerticalFlip/p=0", op: Op{Op: OpRandomVerticalFlip, P: f(0)}, tv: fixed()})
	// Grayscale computes torchvision's tensor path (as RandomGrayscale):
	// float weights, truncated; on the PIL path, PIL's convert("L")
	// rounds its integer weights, a level above on about half the pixels.
	for _, n := range []int{1, 3} {
		op := Op{Op: OpGrayscale, NumOutputChannels: n}
		cs = append(cs, recipeTVCase{name: fmt.Sprintf("Grayscale/%d", n), op: op, gray: n == 1,
			tv: fixed([2]any{"grayscale_tensor", map[string]any{"n": n}})})
		cs = append(cs, recipeTVCase{name: fmt.Sprintf("Grayscale/%d/PIL", n), op: op, gray: n == 1, maxDiff: 1, maxFrac: 0.6,
			tv: fixed([2]any{"grayscale", map[string]any{"n": n}})})
	}
	return cs
}

// TestRecipeOpsTorchvision: the recipe's new picture ops (RandomCrop with
// padding of each mode and pad_if_needed, CenterCrop with and without
// padding, Resize to a side, to [h, w] and with max_size,
// RandomVerticalFlip, Grayscale) equal torchvision 0.14's on real
// photographs.
func TestRecipeOpsTorchvision(t *testing.T) {
	requireTorchvision(t)
	photos := tvPhotos(t)
	cases := recipeTVCases()
	dir := t.TempDir()
	var spec []map[string]any
	const seed = 12345
	for pi, m := range photos {
		name := fmt.Sprintf("in_%d.bin", pi)
		if err := os.WriteFile(filepath.Join(dir, name), packed(m), 0o644); err != nil {
			t.Fatal(err)
		}
		for ci, c := range cases {
			rng := rand.New(rand.NewPCG(seed, uint64(ci)))
			spec = append(spec, map[string]any{"in": name, "w": m.Width, "h": m.Height, "ops": c.tv(m.Width, m.Height, rng)})
		}
	}
	js, _ := json.Marshal(spec)
	if err := os.WriteFile(filepath.Join(dir, "cases.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs("testdata/recipe_oracle.py")
	out, err := exec.Command(tvPython, script, dir).CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		testenv.Missing(t, "torchvision missing for %s: %s", tvPython, out)
	}
	if err != nil {
		t.Fatalf("recipe_oracle.py: %v\n%s", err, out)
	}
	var a Augmenter
	var s Scratch
	k := 0
	for _, src := range photos {
		for ci, c := range cases {
			if ps := (Recipe{c.op}).Problems(); len(ps) > 0 && ps[0].Field != "augment[0]" {
				t.Fatalf("%s: %v", c.name, ps)
			}
			w, h := src.Width, src.Height
			st, err := stepOf(c.op, &w, &h, false)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			m := imgcodec.NewImage(src.Width, src.Height, 3)
			copy(m.Pix, src.Pix)
			m, err = st.Run(&a, &s, rand.New(rand.NewPCG(seed, uint64(ci))), m)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if w != m.Width || h != m.Height {
				t.Errorf("%s: planned %dx%d, made %dx%d", c.name, w, h, m.Width, m.Height)
			}
			got := packed(m)
			if c.gray {
				got = packed(firstChannelOf(m))
			}
			want, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("out_%d.bin", k)))
			k++
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Errorf("%s on %dx%d: %d bytes (%dx%d), torchvision %d", c.name, src.Width, src.Height, len(got), m.Width, m.Height, len(want))
				continue
			}
			d, frac, _ := compareBytes(got, want)
			if d > c.maxDiff || frac > c.maxFrac {
				t.Errorf("%s on %dx%d: max |diff| %d, %.4f%% differ; tolerance %d, %.4f%%", c.name, src.Width, src.Height, d, 100*frac, c.maxDiff, 100*c.maxFrac)
			} else if testing.Verbose() {
				t.Logf("%-40s on %dx%d: max |diff| %d, %.4f%% differ", c.name, src.Width, src.Height, d, 100*frac)
			}
		}
	}
}

func firstChannelOf(m *imgcodec.Image) *imgcodec.Image {
	g := NewImage(m.Width, m.Height, 1)
	for y := range m.Height {
		for x := range m.Width {
			g.Pix[y*g.Stride+x] = m.Pix[y*m.Stride+x*m.Channels]
		}
	}
	return g
}

// TestAutoAugmentPoliciesTorchvision: AutoAugment's cifar10 and svhn
// policies (and imagenet's) are torchvision 0.14's lists, op by op: name,
// probability and magnitude bin; a recipe's policy argument picks them.
func TestAutoAugmentPoliciesTorchvision(t *testing.T) {
	requireTorchvision(t)
	script := `import json
import torchvision.transforms.autoaugment as A
out = {}
for p in A.AutoAugmentPolicy:
    out[p.value] = [[[n, pr, -1 if b is None else b] for n, pr, b in sub] for sub in A.AutoAugment(p)._get_policies(p)]
print(json.dumps(out))`
	out, err := exec.Command(tvPython, "-c", script).Output()
	if err != nil {
		testenv.Missing(t, "torchvision: %v", err)
	}
	var want map[string][][][3]any
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	for name, pol := range map[string]AutoAugmentPolicy{"imagenet": PolicyImageNet, "cifar10": PolicyCIFAR10, "svhn": PolicySVHN} {
		got := pol.subPolicies()
		if len(got) != len(want[name]) {
			t.Fatalf("%s: %d sub-policies, torchvision %d", name, len(got), len(want[name]))
		}
		for i, sub := range got {
			for j, po := range sub {
				w := want[name][i][j]
				if po.op.String() != w[0].(string) || po.p != w[1].(float64) || float64(po.bin) != w[2].(float64) {
					t.Errorf("%s[%d][%d]: %v %g %d, torchvision %v", name, i, j, po.op, po.p, po.bin, w)
				}
			}
		}
		st, err := stepOf(Op{Op: OpAutoAugment, Policy: name}, new(int), new(int), false)
		if err != nil || st.(inPlace).op.(*AutoAugment).Policy != pol {
			t.Errorf("policy %q: %v %v", name, st, err)
		}
	}
}
