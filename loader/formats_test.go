package loader

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
	"github.com/faster-training/faster/source"
)

// TestEvalFormatsTorchvision: an ImageFolder of every format torchvision's
// ImageFolder lists (WebP lossy and lossless, BMP, TIFF, PPM and PGM
// binary and ASCII of several maxvals, 16-bit and alpha PNG: written by PIL
// from photographs, imgcodec/testdata/pilformats.py) is served by the eval
// recipe with torchvision's pixels, exactly (issue 39 item 2; before: the
// epoch stopped at the first WebP, "unknown image format"). The .pbm and
// .gif files the script writes too are not in torchvision's list, and the
// loader lists them no more than torchvision does.
func TestEvalFormatsTorchvision(t *testing.T) {
	py := testenv.PythonWith(t, "PIL", "numpy")
	photos := testenv.Photos(t, 3)[:3]
	gen := t.TempDir()
	args := append([]string{filepath.Join("..", "imgcodec", "testdata", "pilformats.py"), gen}, photos...)
	if b, err := exec.Command(py, args...).CombinedOutput(); err != nil {
		t.Fatalf("pilformats.py: %v\n%s", err, b)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "all"), 0o755); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(gen)
	var keys []string
	exts := map[string]bool{}
	for _, e := range ents {
		n := e.Name()
		if filepath.Ext(n) == ".rgb" {
			continue
		}
		if err := os.Rename(filepath.Join(gen, n), filepath.Join(dir, "all", n)); err != nil {
			t.Fatal(err)
		}
		if source.IsImageName(n) {
			keys = append(keys, "all/"+n)
			exts[filepath.Ext(n)] = true
		}
	}
	slices.Sort(keys)
	for _, e := range source.ImageExtensions {
		if !exts[e] && e != ".jpg" && e != ".jpeg" {
			t.Fatalf("no %s file among %d", e, len(keys))
		}
	}
	want := torchvisionEval(t, dir, keys, 73, 64)
	o := Options{Transform: Eval, Resolution: 64, Resize: 73, Batch: 8, Layout: U8HWC, Shuffle: ShuffleOff}
	worst, over1, total := evalDiff(t, dir, keys, want, o)
	if worst != 0 {
		t.Fatalf("%d formats' files: %d of %d values more than 1 level from torchvision's, max %d levels; want 0", len(keys), over1, total, worst)
	}
	t.Logf("%d files, %d values, all torchvision's", len(keys), total)
}
