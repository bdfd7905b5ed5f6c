package loader

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/internal/testenv"
)

// evalPhotoFolder is an ImageFolder of the full-size photographs (links,
// one class), and their names in the loader's order.
func evalPhotoFolder(t *testing.T) (string, []string) {
	photos := testenv.Photos(t, 8)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "nature"), 0o755); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, p := range photos {
		if err := os.Symlink(p, filepath.Join(dir, "nature", filepath.Base(p))); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, "nature/"+filepath.Base(p))
	}
	return dir, keys
}

// torchvisionEval writes torchvision's Resize(short) + CenterCrop(res) of
// each picture (PIL path, bilinear), as uint8 HWC bytes one after another.
func torchvisionEval(t *testing.T, dir string, keys []string, short, res int) []byte {
	py := testenv.PythonWith(t, "PIL", "torchvision", "numpy")
	out := filepath.Join(t.TempDir(), "want.bin")
	script := `
import sys, numpy as np
from PIL import Image
from torchvision import transforms as T
short, res, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
tf = T.Compose([T.Resize(short), T.CenterCrop(res)])
with open(out, "wb") as f:
    for p in sys.argv[4:]:
        with Image.open(p) as im:
            f.write(np.asarray(tf(im.convert("RGB")), dtype=np.uint8).tobytes())
`
	args := []string{"-c", script, strconv.Itoa(short), strconv.Itoa(res), out}
	for _, k := range keys {
		args = append(args, filepath.Join(dir, k))
	}
	if b, err := exec.Command(py, args...).CombinedOutput(); err != nil {
		t.Fatalf("torchvision: %v\n%s", err, b)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// evalDiff serves dir through the eval recipe at res (resize short) and
// returns the largest difference in levels from want and how many values
// differ by more than one level.
func evalDiff(t *testing.T, dir string, keys []string, want []byte, o Options) (worst, over1, total int) {
	l, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	e := runEpoch(t, l, 0)
	if len(e.keys) != len(keys) {
		t.Fatalf("%d pictures served, want %d", len(e.keys), len(keys))
	}
	row := o.Resolution * o.Resolution * 3
	for i, k := range e.keys {
		if k != keys[i] {
			t.Fatalf("picture %d is %s, want %s", i, k, keys[i])
		}
		w := want[i*row : (i+1)*row]
		for j, g := range e.rows[i] {
			d := int(g) - int(w[j])
			d = max(d, -d)
			worst = max(worst, d)
			if d > 1 {
				over1++
			}
		}
		total += row
	}
	return worst, over1, total
}

// TestEvalPixelsTorchvisionByDefault: the eval recipe (Resize(256) +
// CenterCrop(224)) on full-size photographs (1280x1024 to 2560x1920) gives
// torchvision's pixels by default, with no option (issue 39 item 3; before:
// a DCT-scaled decode, up to 56 levels apart); FastEvalDecode still opts
// into the scaled decode, which differs.
func TestEvalPixelsTorchvisionByDefault(t *testing.T) {
	dir, keys := evalPhotoFolder(t)
	want := torchvisionEval(t, dir, keys, 256, 224)
	if len(want) != len(keys)*224*224*3 {
		t.Fatalf("torchvision wrote %d bytes", len(want))
	}
	base := Options{Transform: Eval, Resolution: 224, Batch: 4, Layout: U8HWC, Shuffle: ShuffleOff}
	worst, over1, total := evalDiff(t, dir, keys, want, base)
	t.Logf("default: max %d levels, %d of %d values more than 1 level apart", worst, over1, total)
	if imgcodec.Backend == "pure-go" {
		// The pure-Go JPEG decoder is not libjpeg's (see
		// python/tests/test_oracle.py): only bounded.
		if worst > 40 || over1*100 > total {
			t.Errorf("pure-go: max %d levels, %d of %d values over 1", worst, over1, total)
		}
	} else if worst != 0 {
		t.Errorf("default eval: %d of %d values more than 1 level from torchvision's, max %d levels; want 0", over1, total, worst)
	}
	fast := base
	fast.FastEvalDecode = true
	fworst, fover1, _ := evalDiff(t, dir, keys, want, fast)
	t.Logf("FastEvalDecode: max %d levels, %d of %d values more than 1 level apart", fworst, fover1, total)
	if imgcodec.Backend != "pure-go" && fworst == 0 {
		t.Errorf("FastEvalDecode gives torchvision's pixels: not the scaled decode")
	}
}
