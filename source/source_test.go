package source

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
)

// requireData fails (under FASTER_REQUIRE_DATA=1, as make test sets) or
// skips when a file installed by scripts/setup.sh is missing.
func requireData(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		testenv.Missing(t, "%s missing: run scripts/setup.sh", path)
	}
}

func encodeJPEG(t *testing.T, w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x * 7), uint8(y * 5), 90, 255})
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodePNG(t *testing.T, w, h int) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// makeTree writes files (relative path -> content) under a temp root.
func makeTree(t *testing.T, files map[string][]byte) string {
	root := t.TempDir()
	for p, data := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func testTree(t *testing.T) (string, map[string][]byte) {
	jpg, pngb := encodeJPEG(t, 20, 10), encodePNG(t, 8, 6)
	files := map[string][]byte{
		"zebra/z1.jpg":          jpg,
		"zebra/sub/a.JPEG":      jpg,
		"zebra/sub-x/b.jpg":     jpg,
		"zebra/z0.PNG":          pngb,
		"ant/b.jpg":             jpg,
		"ant/a.jpeg":            jpg,
		"ant/notes.txt":         []byte("not an image"),
		"ant/fake.jpg":          []byte("this is text, named .jpg"),
		"ant/trunc.jpg":         jpg[:2],
		"Bee/png-named.JPEG":    pngb,
		"Bee/deep/deeper/x.jpg": jpg,
		"README":                []byte("top-level files are not samples"),
	}
	return makeTree(t, files), files
}

func TestImageFolderOrderAndLabels(t *testing.T) {
	root, _ := testTree(t)
	d, err := OpenImageFolder(root)
	if err != nil {
		t.Fatal(err)
	}
	// Sorted byte-wise, as Python's sorted(): upper case first.
	if got := strings.Join(d.Classes(), ","); got != "Bee,ant,zebra" {
		t.Fatalf("classes %s", got)
	}
	var keys []string
	for _, it := range d.Items() {
		keys = append(keys, it.Key)
	}
	want := []string{
		"Bee/png-named.JPEG", "Bee/deep/deeper/x.jpg",
		"ant/a.jpeg", "ant/b.jpg", "ant/fake.jpg", "ant/trunc.jpg",
		"zebra/z0.PNG", "zebra/z1.jpg", "zebra/sub/a.JPEG", "zebra/sub-x/b.jpg",
	}
	// torchvision sorts directories by path string: "zebra/sub" is a
	// prefix of "zebra/sub-x", so it comes first.
	if strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Fatalf("order\n got %v\nwant %v", keys, want)
	}
	labels := map[string]int{"Bee": 0, "ant": 1, "zebra": 2}
	for _, it := range d.Items() {
		if it.Label != labels[ClassOf(it.Key)] {
			t.Errorf("%s: label %d", it.Key, it.Label)
		}
	}
	if ig := d.Ignored(); len(ig) != 1 || ig[0] != "ant/notes.txt" {
		t.Errorf("ignored %v", ig)
	}
}

func TestImageFolderLoad(t *testing.T) {
	root, files := testTree(t)
	d, _ := OpenImageFolder(root)
	for i, it := range d.Items() {
		s, err := d.Load(i)
		switch it.Key {
		case "ant/fake.jpg", "ant/trunc.jpg":
			if !errors.Is(err, ErrNotImage) || !strings.Contains(err.Error(), it.Key) {
				t.Errorf("%s: err %v, want ErrNotImage naming the file", it.Key, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", it.Key, err)
		}
		if !bytes.Equal(s.Data, files[it.Key]) {
			t.Errorf("%s: bytes changed", it.Key)
		}
		wantFmt, w, h := "jpeg", 20, 10
		if strings.HasSuffix(strings.ToLower(it.Key), ".png") || strings.Contains(it.Key, "png-named") {
			wantFmt, w, h = "png", 8, 6
		}
		if s.Format != wantFmt || s.Width != w || s.Height != h {
			t.Errorf("%s: %s %dx%d, want %s %dx%d", it.Key, s.Format, s.Width, s.Height, wantFmt, w, h)
		}
	}
}

// The same tree through torchvision.datasets.ImageFolder gives the same
// classes, order and labels.
func TestImageFolderMatchesTorchvision(t *testing.T) {
	root, _ := testTree(t)
	matchTorchvision(t, root)
}

// Symlinked class folders, symlinked subfolders and symlinked files are
// followed as torchvision follows them (os.walk(followlinks=True)): the same
// classes and the same samples (before: a linked class folder kept its
// class and lost its images).
func TestImageFolderSymlinksMatchTorchvision(t *testing.T) {
	root, files := testTree(t)
	outside := makeTree(t, map[string][]byte{"x1.jpg": files["ant/b.jpg"], "x2.JPEG": files["ant/b.jpg"], "sub/x3.png": files["zebra/z0.PNG"]})
	os.Symlink(outside, filepath.Join(root, "linked"))                                        // a class folder
	os.Symlink(outside, filepath.Join(root, "ant", "inner"))                                  // a folder inside a class
	os.Symlink(filepath.Join(outside, "x1.jpg"), filepath.Join(root, "zebra", "alias.jpg"))   // a file
	os.Symlink(filepath.Join(root, "Bee", "deep"), filepath.Join(root, "zebra", "deep-link")) // a folder of another class
	d := matchTorchvision(t, root)
	n := 0
	for _, it := range d.Items() {
		if ClassOf(it.Key) == "linked" {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("the linked class lists %d images, want 3", n)
	}
}

// TestImageFolderSymlinkLoop: a folder linking to itself or to a parent
// is walked once (torchvision would recurse until the path is too long).
func TestImageFolderSymlinkLoop(t *testing.T) {
	root, _ := testTree(t)
	os.Symlink(".", filepath.Join(root, "ant", "self"))
	os.Symlink("..", filepath.Join(root, "zebra", "sub", "up"))
	d, err := OpenImageFolder(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Items()) != 10 {
		t.Fatalf("%d items, want the 10 of the tree without the loops", len(d.Items()))
	}
}

func matchTorchvision(t *testing.T, root string) *ImageFolder {
	t.Helper()
	if err := exec.Command(testenv.Python, "-c", "import torchvision").Run(); err != nil {
		testenv.Missing(t, "python3 torchvision missing")
	}
	out, err := exec.Command(testenv.Python, "-c", `
import json, sys, os
from torchvision.datasets import ImageFolder
d = ImageFolder(sys.argv[1], loader=lambda p: p)
print(json.dumps({"classes": d.classes, "samples": [[os.path.relpath(p, sys.argv[1]), l] for p, l in d.samples]}))
`, root).Output()
	if err != nil {
		t.Fatal(err)
	}
	var tv struct {
		Classes []string `json:"classes"`
		Samples [][2]any `json:"samples"`
	}
	if err := json.Unmarshal(out, &tv); err != nil {
		t.Fatal(err)
	}
	d, err := OpenImageFolder(root)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(tv.Classes, ",") != strings.Join(d.Classes(), ",") {
		t.Fatalf("classes: torchvision %v, ours %v", tv.Classes, d.Classes())
	}
	if len(tv.Samples) != len(d.Items()) {
		t.Fatalf("torchvision lists %d samples, we list %d", len(tv.Samples), len(d.Items()))
	}
	for i, s := range tv.Samples {
		it := d.Items()[i]
		if s[0].(string) != it.Key || int(s[1].(float64)) != it.Label {
			t.Errorf("sample %d: torchvision %v, ours %s %d", i, s, it.Key, it.Label)
		}
	}
	return d
}

func idxBytes(dims []int, data []byte) []byte {
	b := []byte{0, 0, 8, byte(len(dims))}
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, uint32(d))
	}
	return append(b, data...)
}

func gz(b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

func TestIDX(t *testing.T) {
	const n, h, w = 5, 3, 4
	pix := make([]byte, n*h*w)
	for i := range pix {
		pix[i] = byte(i * 3)
	}
	labels := []byte{3, 1, 4, 1, 5}
	root := makeTree(t, map[string][]byte{
		"train-images-idx3-ubyte.gz": gz(idxBytes([]int{n, h, w}, pix)),
		"train-labels-idx1-ubyte":    idxBytes([]int{n}, labels),
		"t10k-images-idx3-ubyte":     idxBytes([]int{1, h, w}, pix[:h*w]),
		"t10k-labels-idx1-ubyte.gz":  gz(idxBytes([]int{1}, []byte{9})),
	})
	if k, err := Detect(root); err != nil || k != "idx" {
		t.Fatalf("Detect = %q, %v", k, err)
	}
	d, err := OpenIDX(root, "train")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Items()) != n || d.Items()[2].Label != 4 || d.Items()[2].Key != "train/00002.png" {
		t.Fatalf("items %v", d.Items())
	}
	for i := range n {
		s, err := d.Load(i)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(s.Data))
		if err != nil {
			t.Fatal(err)
		}
		g, ok := img.(*image.Gray)
		if !ok || !bytes.Equal(g.Pix, pix[i*h*w:(i+1)*h*w]) || s.Width != w || s.Height != h {
			t.Fatalf("image %d: PNG does not hold the IDX pixels", i)
		}
	}
	te, err := OpenIDX(root, "test")
	if err != nil || len(te.Items()) != 1 || te.Items()[0].Label != 9 || te.Items()[0].Key != "test/00000.png" {
		t.Fatalf("test split: %v %v", te, err)
	}
}

// TestIDXLabelOutOfRange: a label outside the classes makes its image a
// damaged sample, a CorruptError naming the labels file and the label's
// offset (in the uncompressed bytes of a gzipped file), which Load
// returns; the split opens and the other images load (before: OpenIDX
// failed, so --on-error skip could not skip it).
func TestIDXLabelOutOfRange(t *testing.T) {
	const h, w = 2, 2
	pix := make([]byte, 3*h*w)
	for _, name := range []string{"train-labels-idx1-ubyte", "train-labels-idx1-ubyte.gz"} {
		labels := idxBytes([]int{3}, []byte{1, 200, 2})
		if strings.HasSuffix(name, ".gz") {
			labels = gz(labels)
		}
		root := makeTree(t, map[string][]byte{"train-images-idx3-ubyte": idxBytes([]int{3, h, w}, pix), name: labels})
		d, err := OpenIDX(root, "train")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var ce *CorruptError
		if err := d.Damage(1); !errors.As(err, &ce) || ce.Path != filepath.Join(root, name) || ce.Offset != 9 ||
			ce.Key != "train/00001.png" || !strings.Contains(ce.Reason, "label 200 of image 1 outside the 10 classes") {
			t.Fatalf("%s: Damage(1) = %v", name, err)
		}
		if gzipped := strings.Contains(ce.Reason, "uncompressed"); gzipped != strings.HasSuffix(name, ".gz") {
			t.Errorf("%s: %q", name, ce.Reason)
		}
		if _, err := d.Load(1); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Load(1) = %v, want the damage", name, err)
		}
		for _, i := range []int{0, 2} {
			if _, err := d.Load(i); err != nil || d.Damage(i) != nil {
				t.Errorf("%s: image %d: %v, %v", name, i, err, d.Damage(i))
			}
		}
	}
}

func TestIDXErrors(t *testing.T) {
	good := idxBytes([]int{2, 2}, []byte{1, 2, 3, 4})
	cases := map[string][]byte{
		"empty":      {},
		"magic":      append([]byte{1}, good[1:]...),
		"type":       {0, 0, 0x0d, 1, 0, 0, 0, 1, 0, 0, 0, 0},
		"truncated":  good[:len(good)-1],
		"trailing":   append(bytes.Clone(good), 9),
		"huge":       idxBytes([]int{1 << 20, 1 << 20}, nil),
		"short dims": good[:6],
	}
	for name, b := range cases {
		_, err := ReadIDX(bytes.NewReader(b), "x.idx")
		if err == nil || !strings.Contains(err.Error(), "x.idx") {
			t.Errorf("%s: err %v, want an error naming the file", name, err)
		}
	}
	if f, err := ReadIDX(bytes.NewReader(gz(good)), "g"); err != nil || !bytes.Equal(f.Data, []byte{1, 2, 3, 4}) {
		t.Errorf("gzipped: %v", err)
	}
}

func TestRealFashionMNIST(t *testing.T) {
	const dir = testenv.FashionMNISTDir
	requireData(t, filepath.Join(dir, "t10k-images-idx3-ubyte.gz"))
	d, err := OpenIDX(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Items()) != 10000 || d.Classes()[9] != "Ankle boot" {
		t.Fatalf("%d items, classes %v", len(d.Items()), d.Classes())
	}
	counts := make([]int, 10)
	for _, it := range d.Items() {
		counts[it.Label]++
	}
	for c, k := range counts {
		if k != 1000 {
			t.Errorf("class %d has %d test images, want 1000", c, k)
		}
	}
	// The first test image is an ankle boot (label 9).
	if d.Items()[0].Label != 9 {
		t.Errorf("first test label %d, want 9", d.Items()[0].Label)
	}
}

func FuzzIDX(f *testing.F) {
	f.Add(idxBytes([]int{2, 2}, []byte{1, 2, 3, 4}))
	f.Add(gz(idxBytes([]int{1, 1, 1}, []byte{7})))
	f.Add([]byte{0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := ReadIDX(bytes.NewReader(b), "fuzz")
		if err != nil {
			return
		}
		total := 1
		for _, d := range x.Dims {
			total *= d
		}
		if total != len(x.Data) {
			t.Fatalf("dims %v but %d bytes", x.Dims, len(x.Data))
		}
	})
}
