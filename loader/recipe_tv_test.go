package loader

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/internal/testenv"
)

// photoFolder is an ImageFolder of n of the real photographs at 1/4
// scale (JPEGs written here, so that both sides decode the same small
// files; PNGs where the build's JPEG decoder is the pure-Go one), one
// class, and their paths in the folder's order.
func photoFolder(t *testing.T, n int) (string, []string) {
	t.Helper()
	photos := testenv.Photos(t, n)[:n]
	root := t.TempDir()
	dir := filepath.Join(root, "a")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, p := range photos {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		m, err := imgcodec.Decode(data, &imgcodec.DecodeOptions{ScaleDenom: 4})
		if err != nil {
			t.Fatal(err)
		}
		rgba := image.NewRGBA(image.Rect(0, 0, m.Width, m.Height))
		for y := range m.Height {
			for x := range m.Width {
				px := m.Pix[y*m.Stride+3*x:]
				rgba.Set(x, y, color.RGBA{px[0], px[1], px[2], 255})
			}
		}
		m.Release()
		var b bytes.Buffer
		dst := filepath.Join(dir, filepath.Base(p))
		if imgcodec.Backend == "libjpeg-turbo" {
			err = jpeg.Encode(&b, rgba, &jpeg.Options{Quality: 90})
		} else {
			// The pure-Go decoder (CGO_ENABLED=0) is not libjpeg's to the
			// level, so both sides read the same pixels losslessly: the
			// ops are what is compared.
			err = png.Encode(&b, rgba)
			dst = strings.TrimSuffix(dst, filepath.Ext(dst)) + ".png"
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, dst)
	}
	return root, files
}

// composeOutputs runs recipe_compose.py: torchvision's Compose of each
// recipe's ops on each file (the PIL path), as float32 tensors.
func composeOutputs(t *testing.T, rs []augment.Recipe, files []string) [][][]float32 {
	t.Helper()
	py := testenv.PythonWith(t, "torch", "torchvision")
	dir := t.TempDir()
	js, _ := json.Marshal(map[string]any{"files": files, "recipes": rs})
	if err := os.WriteFile(filepath.Join(dir, "cases.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs("testdata/recipe_compose.py")
	cmd := exec.Command(py, script, dir)
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		testenv.Missing(t, "torchvision: %s", out)
	}
	if err != nil {
		t.Fatalf("recipe_compose.py: %v\n%s", err, out)
	}
	outs := make([][][]float32, len(rs))
	for r := range rs {
		for k := range files {
			b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("out_%d_%d.bin", r, k)))
			if err != nil {
				t.Fatal(err)
			}
			f := make([]float32, len(b)/4)
			for i := range f {
				f[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			}
			outs[r] = append(outs[r], f)
		}
	}
	return outs
}

// TestLoaderRecipeTorchvision: a loader given a recipe (Options.Recipe)
// runs its ops in the order given and serves what torchvision's Compose
// of the same ops gives on the photographs (PIL path, full decode):
// Resize + CenterCrop anywhere, CenterCrop padding, RandomCrop's padding
// modes (the whole padded picture: no draw), RandomVerticalFlip(1),
// Grayscale(1) served as one channel with a one-channel Normalize,
// ToTensor alone, PILToTensor + ConvertImageDtype, RandomErasing(p=1)
// whose rectangle would be the whole picture (torchvision's strict h <
// img_h: no rectangle fits in ten draws, the picture is left alone),
// Resize(int) + CenterCrop first (the eval recipe's fused resample).
func TestLoaderRecipeTorchvision(t *testing.T) {
	root, files := photoFolder(t, 3)
	p1 := func(x float64) *float64 { return &x }
	cases := []struct {
		name    string
		r       augment.Recipe
		c, h, w int
		tol     float64 // in units of 1/255 before normalising
	}{
		{"Resize+CenterCrop+Grayscale(1)+Normalize(1)", augment.Recipe{
			{Op: "Resize", Size: augment.Nums{80}, Interpolation: "bicubic"}, {Op: "CenterCrop", Size: augment.Nums{64}},
			{Op: "Grayscale", NumOutputChannels: 1}, {Op: "ToTensor"}, {Op: "Normalize", Mean: augment.Nums{0.5}, Std: augment.Nums{0.25}}},
			1, 64, 64, 1},
		{"CenterCrop(pad)+Resize([h,w])+VerticalFlip", augment.Recipe{
			{Op: "RandomVerticalFlip", P: p1(1)}, {Op: "Resize", Size: augment.Nums{40, 30}},
			{Op: "CenterCrop", Size: augment.Nums{48, 36}}, {Op: "ToTensor"}},
			3, 48, 36, 0},
		{"Resize+RandomCrop(reflect, whole)+Normalize", augment.Recipe{
			{Op: "Resize", Size: augment.Nums{24, 32}}, {Op: "RandomCrop", Size: augment.Nums{32, 40}, Padding: augment.Nums{4}, PaddingMode: "reflect"},
			{Op: "PILToTensor"}, {Op: "ConvertImageDtype", Dtype: "float32"},
			{Op: "Normalize", Mean: augment.Nums{0.485, 0.456, 0.406}, Std: augment.Nums{0.229, 0.224, 0.225}}},
			3, 32, 40, 0},
		{"Resize+RandomCrop(constant, fill)+Erasing(no fit)+Normalize", augment.Recipe{
			{Op: "Resize", Size: augment.Nums{20, 20}, Interpolation: "nearest"},
			{Op: "RandomCrop", Size: augment.Nums{26}, Padding: augment.Nums{1, 2, 5, 4}, PaddingMode: "constant", Fill: augment.Nums{10, 200, 30}},
			{Op: "ToTensor"}, {Op: "RandomErasing", P: p1(1), Scale: augment.Nums{1, 1}, Ratio: augment.Nums{1, 1}, Value: &augment.Value{Nums: augment.Nums{0.25, 0.5, 0.75}}},
			{Op: "Normalize", Mean: augment.Nums{0.5}, Std: augment.Nums{0.5}}},
			3, 26, 26, 0},
		{"eval head: Resize(int)+CenterCrop", augment.Recipe{
			{Op: "Resize", Size: augment.Nums{72}}, {Op: "CenterCrop", Size: augment.Nums{64}}, {Op: "ToTensor"}},
			3, 64, 64, 0},
	}
	var rs []augment.Recipe
	for _, c := range cases {
		rs = append(rs, c.r)
	}
	wants := composeOutputs(t, rs, files)
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := Open(root, Options{Recipe: c.r, Transform: Eval, Batch: len(files), Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if ch, h, w := l.Shape(0); ch != c.c || h != c.h || w != c.w {
				t.Fatalf("shape %d×%d×%d, want %d×%d×%d", ch, h, w, c.c, c.h, c.w)
			}
			want := wants[ci]
			row := l.RowBytes(0)
			for b, err := range l.Iter(context.Background()) {
				if err != nil {
					t.Fatal(err)
				}
				for i := range b.Valid {
					got := b.Data[i*row : (i+1)*row]
					if len(got) != 4*len(want[i]) {
						t.Fatalf("row %d: %d bytes, torchvision %d values", i, len(got), len(want[i]))
					}
					worst := 0.0
					for k, wv := range want[i] {
						g := math.Float32frombits(binary.LittleEndian.Uint32(got[4*k:]))
						worst = max(worst, math.Abs(float64(g-wv)))
					}
					std := 1.0
					if n := c.r[len(c.r)-1]; n.Op == "Normalize" {
						std = n.Std[0] // the smallest std of these cases
						for _, s := range n.Std {
							std = min(std, s)
						}
					}
					if worst*std*255 > c.tol+1e-3 {
						t.Errorf("%s: max |diff| %.5f (%.3f levels), tolerance %g levels", b.Items[i].Key, worst, worst*std*255, c.tol)
					}
				}
				b.Release()
			}
		})
	}
}

// TestLoaderRecipeRandom: a recipe with random ops in a free order serves
// its fixed shape, the same bytes for the same seed and epoch, other
// bytes for another epoch; a crop larger than the picture is refused
// before the first batch, naming the op.
func TestLoaderRecipeRandom(t *testing.T) {
	root, _ := photoFolder(t, 4)
	r := augment.Recipe{
		{Op: "RandomCrop", Size: augment.Nums{600}, PadIfNeeded: true, PaddingMode: "edge"},
		{Op: "Resize", Size: augment.Nums{48}}, {Op: "ColorJitter", Brightness: augment.Nums{0.4}, Hue: augment.Nums{0.1}},
		{Op: "RandomVerticalFlip"}, {Op: "RandomResizedCrop", Size: augment.Nums{32}},
		{Op: "AutoAugment", Policy: "cifar10"}, {Op: "RandomRotation", Degrees: augment.Nums{15}},
		{Op: "ToTensor"}, {Op: "Normalize", Mean: augment.Nums{0.5, 0.5, 0.5}, Std: augment.Nums{0.2, 0.2, 0.2}},
		{Op: "RandomErasing", Value: &augment.Value{Random: true}},
	}
	epoch := func(seed uint64, e int) []byte {
		l, err := Open(root, Options{Recipe: r, Batch: 4, Workers: 2, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		c, h, w := l.Shape(0)
		if c != 3 || h != w || l.RowBytes(0) != 3*h*w*4 {
			t.Fatalf("shape %d×%d×%d", c, h, w)
		}
		var out []byte
		for b, err := range l.IterEpoch(context.Background(), e) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b.Data[:b.Valid*l.RowBytes(0)]...)
			b.Release()
		}
		return out
	}
	a, b, c := epoch(5, 1), epoch(5, 1), epoch(5, 2)
	if string(a) != string(b) || string(a) == string(c) || len(a) != 4*3*32*32*4 {
		t.Fatalf("same seed and epoch equal: %v; other epoch differs: %v; %d bytes", string(a) == string(b), string(a) != string(c), len(a))
	}
	// RandomErasing before Normalize erases with the values Normalize
	// makes of them: the same bytes as erasing after it with (v-0.5)/0.5.
	head := augment.Recipe{{Op: "RandomCrop", Size: augment.Nums{40}, PadIfNeeded: true}, {Op: "ToTensor"}}
	norm := augment.Op{Op: "Normalize", Mean: augment.Nums{0.5}, Std: augment.Nums{0.5}}
	erase := func(v ...float64) augment.Op {
		return augment.Op{Op: "RandomErasing", P: new(float64), Scale: augment.Nums{0.1, 0.4}, Value: &augment.Value{Nums: v}}
	}
	before, after := erase(0.25, 0.5, 0.75), erase(-0.5, 0, 0.5)
	*before.P, *after.P = 1, 1
	r = append(append(augment.Recipe{}, head...), before, norm)
	first := epoch(3, 0)
	r = append(append(augment.Recipe{}, head...), norm, after)
	if second := epoch(3, 0); string(first) != string(second) {
		t.Fatal("RandomErasing before Normalize differs from after it with normalised values")
	}
	bad := augment.Recipe{{Op: "Resize", Size: augment.Nums{20, 20}}, {Op: "RandomCrop", Size: augment.Nums{32}}, {Op: "ToTensor"}}
	_, err := Open(root, Options{Recipe: bad})
	if err == nil || !containsAll(err.Error(), "augment[1]", "RandomCrop", "pad_if_needed") {
		t.Fatalf("crop larger than the picture: %v", err)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !contains(s, x) {
			return false
		}
	}
	return true
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestLoaderOneChannelData: one-channel data (source.Channeler: IDX) is
// served as 1×H×W by the fixed recipes too, normalised with the first
// mean and std, or as 28×28×1 bytes (u8-hwc); Channels 3 forces RGB.
func TestLoaderOneChannelData(t *testing.T) {
	dir := testenv.WriteIDX(t, 8)
	for _, c := range []struct {
		channels, want int
	}{{0, 1}, {3, 3}} {
		l, err := Open(dir, Options{Transform: Eval, Resolution: 28, Resize: 28, Batch: 8, Workers: 1, Channels: c.channels,
			Mean: [3]float32{0.5, 0, 0}, Std: [3]float32{0.5, 1, 1}})
		if err != nil {
			t.Fatal(err)
		}
		if ch, h, w := l.Shape(0); ch != c.want || h != 28 || w != 28 || l.RowBytes(28) != c.want*28*28*4 {
			t.Fatalf("channels %d: shape %d×%d×%d, row %d", c.channels, ch, h, w, l.RowBytes(28))
		}
		for b, err := range l.Iter(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
			row := l.RowBytes(28)
			for i := range b.Valid {
				v := math.Float32frombits(binary.LittleEndian.Uint32(b.Data[i*row:]))
				if v < -1 || v > 1 {
					t.Fatalf("row %d: first value %g, want (x-0.5)/0.5 in [-1, 1]", i, v)
				}
			}
			b.Release()
		}
		l.Close()
	}
	// The fixed train recipe's RandomErasing draws noise for one channel.
	tl, err := Open(dir, Options{Transform: Train, Resolution: 28, Batch: 8, Workers: 1,
		Erasing: &augment.RandomErasing{P: 1, RandomValue: true}})
	if err != nil {
		t.Fatal(err)
	}
	for b, err := range tl.Iter(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
	tl.Close()
	// u8-hwc: 28×28×1 bytes a row.
	l, err := Open(dir, Options{Transform: Eval, Resolution: 28, Resize: 28, Batch: 8, Workers: 1, Layout: U8HWC})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.RowBytes(28) != 28*28 {
		t.Fatalf("u8-hwc row %d bytes, want %d", l.RowBytes(28), 28*28)
	}
	for b, err := range l.Iter(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
}
