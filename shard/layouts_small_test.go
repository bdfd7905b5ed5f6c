package shard

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faster-training/faster/imgcodec/rawpix"
	"github.com/faster-training/faster/internal/testenv"
	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/source/sourcetest"
)

// tvImages is what a torchvision dataset holds: classes, targets, and the
// sha256 of its data array's bytes (N×H×W[×C] uint8).
type tvImages struct {
	Classes []string `json:"classes"`
	Targets []int    `json:"targets"`
	SHA     string   `json:"sha"`
	Shape   []int    `json:"shape"`
}

// pyTorchvisionImages runs torchvision's class cls (CIFAR10, CIFAR100,
// MNIST, FashionMNIST) on root, train or test, with the integrity check of
// the published files' checksums off (the files are written here).
const pyTorchvisionImages = `
import json, sys, hashlib, numpy as np, torchvision.datasets as D, torchvision.datasets.cifar as cifar
cls, root, split = sys.argv[1:4]
C = getattr(D, cls)
C._check_integrity = lambda self: True
cifar.check_integrity = lambda *a, **k: True
d = C(root, train=(split == "train"), download=False)
data = np.asarray(d.data)
print(json.dumps({"classes": list(d.classes), "targets": [int(t) for t in d.targets],
    "sha": hashlib.sha256(np.ascontiguousarray(data).tobytes()).hexdigest(), "shape": list(data.shape)}))
`

func torchvisionImages(t *testing.T, cls, root, split string) tvImages {
	t.Helper()
	py := testenv.PythonWith(t, "torchvision", "numpy")
	out, err := exec.Command(py, "-c", pyTorchvisionImages, cls, root, split).CombinedOutput()
	if err != nil {
		t.Fatalf("torchvision %s(%s, %s): %v: %s", cls, root, split, err, out)
	}
	var v tvImages
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return v
}

// sameImages fails the test unless ds (opened by Open) holds want's
// classes, labels in order and pixels (its raw-pixel records' bytes
// hashed in order), of channels channels.
func sameImages(t *testing.T, what string, ds source.Dataset, want tvImages, channels int) {
	t.Helper()
	x, ok := ds.(source.Indexed)
	if !ok {
		t.Fatalf("%s: %T is not indexed", what, ds)
	}
	if !slices.Equal(ds.Classes(), want.Classes) {
		t.Fatalf("%s: classes %q, torchvision's %q", what, ds.Classes(), want.Classes)
	}
	if x.Len() != len(want.Targets) {
		t.Fatalf("%s: %d images, torchvision's %d", what, x.Len(), len(want.Targets))
	}
	if c, ok := ds.(source.Channeler); (ok && c.Channels() != channels) || (!ok && channels != 3) {
		t.Errorf("%s: channels %v (Channeler %v), want %d", what, ds, ok, channels)
	}
	h := sha256.New()
	for i := range x.Len() {
		r, err := x.Record(i)
		if err != nil {
			t.Fatal(err)
		}
		if r.Label != want.Targets[i] {
			t.Fatalf("%s: image %d label %d, torchvision's %d", what, i, r.Label, want.Targets[i])
		}
		hd, px, err := rawpix.Parse(r.Data)
		if err != nil {
			t.Fatal(err)
		}
		if hd.Channels != channels || hd.Layout != rawpix.Interleaved {
			t.Fatalf("%s: image %d: %+v", what, i, hd)
		}
		h.Write(px)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want.SHA {
		t.Fatalf("%s: pixels differ from torchvision's (%v)", what, want.Shape)
	}
}

// pyWriteCIFAR writes CIFAR-10's or CIFAR-100's python batches as the
// CIFAR page documents them, with Python's pickle (protocol 2, as the
// published files): random pixels and labels.
const pyWriteCIFAR = `
import os, pickle, sys, numpy as np
version, root = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(int(sys.argv[3]))
def dump(p, d):
    with open(p, "wb") as f: pickle.dump(d, f, protocol=2)
if version == "10":
    d = os.path.join(root, "cifar-10-batches-py"); os.makedirs(d)
    dump(os.path.join(d, "batches.meta"), {"num_cases_per_batch": 3, "label_names": ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"], "num_vis": 3072})
    for name, n in [("data_batch_%d" % i, 3 + i) for i in range(1, 6)] + [("test_batch", 5)]:
        dump(os.path.join(d, name), {"batch_label": name, "labels": [int(x) for x in rng.integers(0, 10, n)],
            "data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), "filenames": ["f%d.png" % i for i in range(n)]})
else:
    d = os.path.join(root, "cifar-100-python"); os.makedirs(d)
    dump(os.path.join(d, "meta"), {"fine_label_names": ["c%02d" % i for i in range(100)], "coarse_label_names": ["s%d" % i for i in range(20)]})
    for name, n in [("train", 1200), ("test", 7)]:
        dump(os.path.join(d, name), {"batch_label": name, "fine_labels": [int(x) for x in rng.integers(0, 100, n)],
            "coarse_labels": [int(x) for x in rng.integers(0, 20, n)],
            "data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), "filenames": ["f%d.png" % i for i in range(n)]})
`

// TestCIFAROpensAsTorchvision: CIFAR-10 and CIFAR-100's python batches,
// written by Python's pickle, open where they lie (torchvision's root, or
// the batches' folder) with torchvision's classes, labels, order and
// pixels; an unknown split names train and test.
func TestCIFAROpensAsTorchvision(t *testing.T) {
	py := testenv.PythonWith(t, "torchvision", "numpy")
	for _, c := range []struct{ version, cls, dir string }{{"10", "CIFAR10", "cifar-10-batches-py"}, {"100", "CIFAR100", "cifar-100-python"}} {
		root := t.TempDir()
		if out, err := exec.Command(py, "-c", pyWriteCIFAR, c.version, root, "7").CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		for _, split := range []string{"train", "test"} {
			want := torchvisionImages(t, c.cls, root, split)
			sameImages(t, c.cls+" "+split, open(t, root, OpenOptions{Split: split}), want, 3)
			sameImages(t, c.cls+" "+split+" (the batches' folder)", open(t, filepath.Join(root, c.dir), OpenOptions{Split: split}), want, 3)
		}
		if EvalSplit(root) != "test" {
			t.Errorf("EvalSplit(%s) = %q, want test", root, EvalSplit(root))
		}
		_, err := Open(context.Background(), root, OpenOptions{Split: "val"})
		if err == nil || !strings.Contains(err.Error(), `"val"`) || !strings.Contains(err.Error(), "train and test") {
			t.Errorf("split val: %v, want an error naming train and test", err)
		}
	}
}

// TestCIFARPython2Pickles: batches pickled as the published files are
// (Python 2's cPickle opcodes) read as torchvision reads them.
func TestCIFARPython2Pickles(t *testing.T) {
	root := t.TempDir()
	sourcetest.WriteCIFAR10(t, root, 40)
	for _, split := range []string{"train", "test"} {
		sameImages(t, "CIFAR10 (py2) "+split, open(t, root, OpenOptions{Split: split}), torchvisionImages(t, "CIFAR10", root, split), 3)
	}
}

// TestMNISTOpensAsTorchvision: Debian's Fashion-MNIST, laid out as
// torchvision's root (root/FashionMNIST/raw) and as it is installed (its
// .gz files in one folder), opens with torchvision's classes, labels,
// order and pixels, one channel.
func TestMNISTOpensAsTorchvision(t *testing.T) {
	src := testenv.FashionMNIST(t)
	root := t.TempDir()
	raw := filepath.Join(root, "FashionMNIST", "raw")
	if err := os.MkdirAll(raw, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"} {
		gunzip(t, filepath.Join(src, name+".gz"), filepath.Join(raw, name))
	}
	want := torchvisionImages(t, "FashionMNIST", root, "test")
	sameImages(t, "FashionMNIST test (torchvision's root)", open(t, root, OpenOptions{Split: "test"}), want, 1)
	sameImages(t, "FashionMNIST test (Debian's folder)", open(t, src, OpenOptions{Split: "test"}), want, 1)
	if EvalSplit(src) != "test" {
		t.Errorf("EvalSplit(%s) = %q, want test", src, EvalSplit(src))
	}
	_, err := Open(context.Background(), src, OpenOptions{Split: "val"})
	if err == nil || !strings.Contains(err.Error(), `"val"`) || !strings.Contains(err.Error(), "train and test") {
		t.Errorf("split val: %v, want an error naming train and test", err)
	}
	// MNIST's digits: torchvision's class names.
	mn := filepath.Join(t.TempDir(), "MNIST", "raw")
	if err := os.MkdirAll(mn, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"} {
		if err := os.Link(filepath.Join(raw, name), filepath.Join(mn, name)); err != nil {
			t.Fatal(err)
		}
	}
	mroot := filepath.Dir(filepath.Dir(mn))
	sameImages(t, "MNIST test", open(t, mroot, OpenOptions{Split: "test"}), torchvisionImages(t, "MNIST", mroot, "test"), 1)
}

func gunzip(t *testing.T, from, to string) {
	t.Helper()
	f, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := io.Copy(&b, zr); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTorchvisionRootOfSeveral: a root holding several of torchvision's
// datasets (../data of pytorch/examples: MNIST and CIFAR side by side)
// names none of them: opening it is an error naming each, the same for
// every command (fit's IDX check asks the same question).
func TestTorchvisionRootOfSeveral(t *testing.T) {
	root := t.TempDir()
	sourcetest.WriteCIFAR10(t, root, 2)
	raw := filepath.Join(root, "MNIST", "raw")
	if err := os.MkdirAll(raw, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"} {
		if err := os.Symlink(filepath.Join(testenv.FashionMNIST(t), name), filepath.Join(raw, name)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Open(context.Background(), root, OpenOptions{})
	if err == nil || !strings.Contains(err.Error(), "cifar-10-batches-py") || !strings.Contains(err.Error(), raw) {
		t.Fatalf("Open: %v, want an error naming both datasets", err)
	}
	if k, err := source.Detect(root); err == nil || k == "idx" {
		t.Errorf("Detect: %q, %v; want the same error", k, err)
	}
	for _, p := range []string{filepath.Join(root, "MNIST"), raw} {
		ds := open(t, p, OpenOptions{Split: "test"})
		if ds.Kind() != "idx" {
			t.Errorf("%s: %s", p, ds.Kind())
		}
	}
	if ds := open(t, filepath.Join(root, "cifar-10-batches-py"), OpenOptions{}); ds.Kind() != "cifar" {
		t.Errorf("cifar: %s", ds.Kind())
	}
}
