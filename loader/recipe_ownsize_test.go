package loader

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/internal/testenv"
)

// pyWriteCIFAR10 writes CIFAR-10's python batches as torchvision's root
// holds them (root/cifar-10-batches-py, pickled with protocol 2 as the
// published files): random pixels and labels, n images a batch.
const pyWriteCIFAR10 = `
import os, pickle, sys, numpy as np
root, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(11)
d = os.path.join(root, "cifar-10-batches-py"); os.makedirs(d)
def dump(p, v):
    with open(p, "wb") as f: pickle.dump(v, f, protocol=2)
dump(os.path.join(d, "batches.meta"), {"num_cases_per_batch": n, "label_names": ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"], "num_vis": 3072})
for name in ["data_batch_%d" % i for i in range(1, 6)] + ["test_batch"]:
    dump(os.path.join(d, name), {"batch_label": name, "labels": [int(x) for x in rng.integers(0, 10, n)],
        "data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), "filenames": ["f%d.png" % i for i in range(n)]})
`

// pyToTensorNormalize is torchvision's side: the dataset class on root
// with transform=Compose([ToTensor(), Normalize(mean, std)]) (after a
// Resize(resize) unless resize is 0), every
// sample's tensor in order, float32, to out.
const pyToTensorNormalize = `
import sys, numpy as np, torchvision.datasets as D, torchvision.transforms as T, torchvision.datasets.cifar as cifar
cls, root, split, out, mean, std, resize = sys.argv[1:8]
C = getattr(D, cls)
C._check_integrity = lambda self: True
cifar.check_integrity = lambda *a, **k: True
tf = T.Compose(([T.Resize(int(resize))] if int(resize) else []) + [T.ToTensor(), T.Normalize([float(x) for x in mean.split(",")], [float(x) for x in std.split(",")])])
d = C(root, train=(split == "train"), download=False, transform=tf)
np.concatenate([d[i][0].numpy().ravel() for i in range(len(d))]).astype("<f4").tofile(out)
`

// TestLoaderToTensorNormalizeAlone: ToTensor + Normalize alone, every
// CIFAR and MNIST script's test transform, runs on data whose pictures
// are all one size (CIFAR's python batches and MNIST's IDX files, laid
// out as torchvision's root holds them): the loader serves that size,
// equal to torchvision's dataset with the same transform up to float32
// rounding. Before: refused, "the output size is each picture's own".
// So does a Resize(int) in front without a crop after it (MNIST at 32 for
// LeNet, CIFAR at 40), its size computed from the data's: PIL's resize,
// within a level. Before: refused, "Resize: the output size varies with
// the picture".
func TestLoaderToTensorNormalizeAlone(t *testing.T) {
	py := testenv.PythonWith(t, "torchvision", "numpy")
	cifarRoot := t.TempDir()
	if out, err := exec.Command(py, "-c", pyWriteCIFAR10, cifarRoot, "6").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// MNIST's IDX files in torchvision's root/MNIST/raw.
	mnistRoot := t.TempDir()
	raw := filepath.Join(mnistRoot, "MNIST", "raw")
	if err := os.MkdirAll(raw, 0o755); err != nil {
		t.Fatal(err)
	}
	idx := testenv.WriteIDX(t, 7)
	for _, name := range []string{"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"} {
		if err := os.Rename(filepath.Join(idx, name), filepath.Join(raw, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		cls, root, split string
		mean, std        augment.Nums
		n, ch, side      int
		resize           int
	}{
		{"CIFAR10", cifarRoot, "test", augment.Nums{0.4914, 0.4822, 0.4465}, augment.Nums{0.247, 0.243, 0.261}, 6, 3, 32, 0},
		{"CIFAR10", cifarRoot, "train", augment.Nums{0.5, 0.5, 0.5}, augment.Nums{0.5, 0.5, 0.5}, 30, 3, 32, 0},
		{"MNIST", mnistRoot, "test", augment.Nums{0.1307}, augment.Nums{0.3081}, 7, 1, 28, 0},
		{"MNIST", mnistRoot, "train", augment.Nums{0.5}, augment.Nums{0.25}, 7, 1, 28, 0},
		{"MNIST", mnistRoot, "test", augment.Nums{0.1307}, augment.Nums{0.3081}, 7, 1, 32, 32},
		{"CIFAR10", cifarRoot, "test", augment.Nums{0.5, 0.5, 0.5}, augment.Nums{0.5, 0.5, 0.5}, 6, 3, 40, 40},
	} {
		name := c.cls + "/" + c.split
		if c.resize > 0 {
			name += fmt.Sprintf("/Resize(%d)", c.resize)
		}
		out := filepath.Join(t.TempDir(), "want.bin")
		join := func(v augment.Nums) string {
			s := make([]string, len(v))
			for i, x := range v {
				s[i] = fmt.Sprint(x)
			}
			return strings.Join(s, ",")
		}
		if b, err := exec.Command(py, "-c", pyToTensorNormalize, c.cls, c.root, c.split, out, join(c.mean), join(c.std), fmt.Sprint(c.resize)).CombinedOutput(); err != nil {
			t.Fatalf("%s: torchvision: %v: %s", name, err, b)
		}
		wb, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		r := augment.Recipe{{Op: "ToTensor"}, {Op: "Normalize", Mean: c.mean, Std: c.std}}
		if c.resize > 0 {
			r = append(augment.Recipe{{Op: "Resize", Size: augment.Nums{float64(c.resize)}}}, r...)
		}
		l, err := Open(c.root, Options{Recipe: r, Transform: Eval, Split: c.split, Batch: 4, Workers: 1})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if ch, h, w := l.Shape(0); ch != c.ch || h != c.side || w != c.side {
			t.Fatalf("%s: shape %d×%d×%d, want %d×%d×%d", name, ch, h, w, c.ch, c.side, c.side)
		}
		var got []byte
		for b, err := range l.Iter(context.Background()) {
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got = append(got, b.Data[:b.Valid*l.RowBytes(0)]...)
			b.Release()
		}
		l.Close()
		if len(got) != len(wb) || len(got) != 4*c.n*c.ch*c.side*c.side {
			t.Fatalf("%s: %d bytes served, torchvision %d, want %d", name, len(got), len(wb), 4*c.n*c.ch*c.side*c.side)
		}
		worst, plane := 0.0, c.side*c.side
		for i := 0; i < len(got); i += 4 {
			g := math.Float32frombits(binary.LittleEndian.Uint32(got[i:]))
			w := math.Float32frombits(binary.LittleEndian.Uint32(wb[i:]))
			k := (i / 4 / plane) % c.ch
			worst = max(worst, math.Abs(float64(g-w))*c.std[k]*255)
		}
		// float32 rounding: (x/255 - mean)/std in another order of operations.
		if bound := 1e-3 + float64(min(c.resize, 1)); worst > bound { // a resize: PIL's, within a level
			t.Errorf("%s: max |diff| %.5f levels beside torchvision's ToTensor+Normalize", name, worst)
		}
		t.Logf("%s: %d pictures %d×%d×%d, max |diff| %.2g levels beside torchvision", name, c.n, c.ch, c.side, c.side, worst)
	}
}

// pngOf is a w×h PNG of a gradient seeded by v.
func pngOf(t *testing.T, w, h int, v uint8) []byte {
	t.Helper()
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			m.Set(x, y, color.RGBA{uint8(x*9) + v, uint8(y*13) ^ v, v, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestLoaderOwnSizeFromFirstSample: a recipe that keeps each picture's
// size (ToTensor alone, flips, colour ops) on a folder of files or a
// stream takes the size of the first sample and serves it; a picture of
// another size fails the epoch when it is met, naming its file (and, in
// a tar, its offset) and both sizes. A recipe whose op makes the size
// vary stays refused when opened, naming the op.
func TestLoaderOwnSizeFromFirstSample(t *testing.T) {
	root := t.TempDir()
	for i, size := range [][2]int{{20, 12}, {20, 12}, {20, 12}, {21, 12}, {20, 12}} {
		dir := filepath.Join(root, fmt.Sprintf("c%d", i%2))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("p%d.png", i)), pngOf(t, size[0], size[1], uint8(40*i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	odd := filepath.Join(root, "c1", "p3.png")
	r := augment.Recipe{{Op: "RandomHorizontalFlip", P: new(float64)}, {Op: "ColorJitter", Brightness: augment.Nums{1.2, 1.2}}, {Op: "ToTensor"}}
	serve := func(path string) error {
		l, err := Open(path, Options{Recipe: r, Transform: Eval, Batch: 2, Workers: 1})
		if err != nil {
			return err
		}
		defer l.Close()
		if ch, h, w := l.Shape(0); ch != 3 || h != 12 || w != 20 {
			t.Fatalf("%s: shape %d×%d×%d, want 3×12×20 (the first sample's)", path, ch, h, w)
		}
		for b, err := range l.Iter(context.Background()) {
			if err != nil {
				return err
			}
			b.Release()
		}
		return nil
	}
	err := serve(root)
	if err == nil || !containsAll(err.Error(), odd, "21x12", "20x12") {
		t.Fatalf("folder with a 21×12 picture: %v, want an error naming %s and both sizes", err, odd)
	}
	t.Log(err)
	if err := os.Remove(odd); err != nil {
		t.Fatal(err)
	}
	if err := serve(root); err != nil {
		t.Fatalf("folder of 20×12 pictures: %v", err)
	}
	// A WebDataset .tar.gz, streamed: the odd member is named with its offset.
	tgz := filepath.Join(t.TempDir(), "data.tar.gz")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for i := range 4 {
		w := 20
		if i == 2 {
			w = 22
		}
		for _, m := range []struct {
			ext  string
			data []byte
		}{{"png", pngOf(t, w, 12, uint8(i))}, {"cls", []byte("1")}} {
			if err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("s%02d.%s", i, m.ext), Mode: 0o644, Size: int64(len(m.data)), Typeflag: tar.TypeReg}); err != nil {
				t.Fatal(err)
			}
			tw.Write(m.data)
		}
	}
	tw.Close()
	zw.Close()
	if err := os.WriteFile(tgz, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	err = serve(tgz)
	if err == nil || !containsAll(err.Error(), tgz, "offset", "s02", "22x12", "20x12") {
		t.Fatalf("tar with a 22×12 picture: %v, want an error naming %s, the offset, s02 and both sizes", err, tgz)
	}
	t.Log(err)
	// Resize(int) without a crop after it: its size follows the picture's,
	// from the first sample's (12 rows to 16, 20 columns to 26, as
	// torchvision's int(16 * 20 / 12)); a picture of another size fails
	// naming both sizes.
	if err := os.WriteFile(odd, pngOf(t, 21, 12, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	resize := func(rc augment.Recipe) error {
		l, err := Open(root, Options{Recipe: rc, Transform: Eval, Batch: 2, Workers: 1})
		if err != nil {
			return err
		}
		defer l.Close()
		if ch, h, w := l.Shape(0); ch != 3 || h != 16 || w != 26 {
			t.Fatalf("Resize(16): shape %d×%d×%d, want 3×16×26", ch, h, w)
		}
		for b, err := range l.Iter(context.Background()) {
			if err != nil {
				return err
			}
			b.Release()
		}
		return nil
	}
	rc := augment.Recipe{{Op: "Resize", Size: augment.Nums{16}}, {Op: "ToTensor"}}
	if err := resize(rc); err == nil || !containsAll(err.Error(), odd, "21x12", "20x12", "26x16") {
		t.Fatalf("Resize(16) + ToTensor on a folder with a 21×12 picture: %v, want an error naming %s and the sizes", err, odd)
	} else {
		t.Log(err)
	}
	os.Remove(odd)
	if err := resize(rc); err != nil {
		t.Fatalf("Resize(16) + ToTensor on 20×12 pictures: %v", err)
	}
}
