//go:build linux

package serve

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/imgcodec"

	"github.com/faster-training/faster/internal/testenv"
)

// One install for PyTorch users: scripts/wheel.sh (make wheel) builds a
// wheel that carries a serve-capable binary; installed into a fresh venv
// (Debian's numpy and torch visible, nothing else, no package index), it
// gives `import faster` and a batch, with no `faster` on PATH, no
// FASTER_BIN and no libjpeg, oneDNN or Gloo needed by the binary.
func TestWheel(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if imgcodec.Backend == "pure-go" {
		t.Skip("the wheel's binary is a cgo build (libjpeg-turbo linked in): checked by the cgo test pass")
	}
	for _, mod := range []string{"numpy", "pip", "setuptools", "wheel", "venv"} {
		if out, err := exec.Command(python, "-c", "import "+mod).CombinedOutput(); err != nil {
			testenv.Missing(t, "%s has no %s: %s", python, mod, out)
		}
	}
	tmp := t.TempDir()
	out, err := exec.Command("../scripts/wheel.sh", filepath.Join(tmp, "dist")).Output()
	if err != nil {
		t.Fatalf("scripts/wheel.sh: %v", err)
	}
	whl := strings.TrimSpace(string(out))
	if !strings.HasSuffix(whl, ".whl") || !strings.Contains(filepath.Base(whl), "linux_") {
		t.Fatalf("wheel %q: want a platform wheel", whl)
	}
	venv := filepath.Join(tmp, "venv")
	if out, err := exec.Command(python, "-m", "venv", "--system-site-packages", venv).CombinedOutput(); err != nil {
		t.Fatalf("venv: %v\n%s", err, out)
	}
	if out, err := exec.Command(filepath.Join(venv, "bin", "pip"), "install", "--quiet", "--no-index", "--no-deps", whl).CombinedOutput(); err != nil {
		t.Fatalf("pip install: %v\n%s", err, out)
	}
	bins, _ := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages", "faster", "_bin", "faster"))
	if len(bins) != 1 {
		t.Fatalf("installed binary: %q", bins)
	}
	ldd, err := exec.Command("ldd", bins[0]).CombinedOutput()
	if err != nil {
		t.Fatalf("ldd: %v\n%s", err, ldd)
	}
	for _, lib := range []string{"libjpeg", "libturbojpeg", "dnnl", "gloo", "libstdc++"} {
		if strings.Contains(string(ldd), lib) {
			t.Errorf("the wheel's binary needs %s:\n%s", lib, ldd)
		}
	}
	data := makeTree(t, 3)
	script := `
import json, sys, faster
loader = faster.Loader(sys.argv[1], batch_size=4, transform="eval", resolution=16, output="numpy")
n, shape = 0, None
for images, labels in loader:
    n += images.shape[0]
    shape = list(images.shape)
loader.close()
print(json.dumps({"file": faster.__file__, "images": n, "shape": shape}))
`
	cmd := exec.Command(filepath.Join(venv, "bin", "python"), "-c", script, data)
	cmd.Dir = tmp // not the repository: its python/ must not be what is imported
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + tmp}
	res, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("python in the venv: %v\n%s", err, stderr)
	}
	var got struct {
		File   string `json:"file"`
		Images int    `json:"images"`
		Shape  []int  `json:"shape"`
	}
	if err := json.Unmarshal(res, &got); err != nil {
		t.Fatalf("%v: %s", err, res)
	}
	if !strings.HasPrefix(got.File, venv) {
		t.Errorf("imported faster from %s, want the venv %s", got.File, venv)
	}
	if got.Images != 9 || len(got.Shape) != 4 || got.Shape[1] != 3 || got.Shape[2] != 16 {
		t.Errorf("served %d images, last batch shape %v; want 9 images of 3x16x16", got.Images, got.Shape)
	}
	os.RemoveAll(filepath.Join("..", "python", "build"))
}
