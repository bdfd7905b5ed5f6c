//go:build linux

package serve

import (
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/internal/buildinfo"
	"github.com/faster-training/faster/internal/testenv"
)

// One install for PyTorch users: scripts/wheel.sh (make wheel) builds a
// wheel that carries a serve-capable binary; installed into a fresh venv
// (Debian's numpy and torch visible, nothing else, no package index), it
// gives `import faster` and a batch, with no `faster` on PATH, no
// FASTER_BIN and no libjpeg, oneDNN or Gloo needed by the binary.
//
// It carries no Python extension, so it is tagged for every CPython 3 and
// the glibc the binary needs (py3-none-manylinux_2_N, N the newest GLIBC_
// version among the binary's imported symbols), and pip takes it on
// CPython 3.9 to 3.13 on a glibc of 2.N or later (asked for each as pip
// asks for a foreign interpreter: --python-version, --platform), and
// refuses it on an older glibc. Before: tagged cp311-cp311-linux_x86_64,
// which pip refused on every Python but 3.11. No binary is left in the
// checkout's python/ (before: python/faster/_bin/faster, which the
// checkout's `import faster` ran in place of bin/faster).
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
	tag := regexp.MustCompile(`^faster-` + regexp.QuoteMeta(buildinfo.Version) + `-py3-none-manylinux_2_([0-9]+)_x86_64\.whl$`).FindStringSubmatch(filepath.Base(whl))
	if tag == nil {
		t.Fatalf("wheel %q: want faster-%s-py3-none-manylinux_2_N_x86_64.whl", whl, buildinfo.Version)
	}
	if _, err := os.Stat("../python/faster/_bin"); err == nil {
		t.Errorf("scripts/wheel.sh left python/faster/_bin in the checkout")
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
	glibc, libs := elfNeeds(t, bins[0])
	if want, _ := strconv.Atoi(tag[1]); glibc != max(want, 17) || want < 17 {
		t.Errorf("tagged manylinux_2_%s; the binary needs GLIBC_2.%d", tag[1], glibc)
	}
	for _, l := range libs {
		if !manylinuxLibs[l] {
			t.Errorf("the wheel's binary needs %s, which a manylinux wheel may not assume", l)
		}
	}
	for _, py := range []string{"3.9", "3.10", "3.11", "3.12", "3.13"} {
		for _, host := range []int{glibc, 39} { // the build's, and Ubuntu 24.04's (the H200 machine's)
			if out, err := pipDryRun(tmp, whl, py, host); err != nil {
				t.Errorf("pip on CPython %s, glibc 2.%d: %v\n%s", py, host, err, out)
			}
		}
	}
	if out, err := pipDryRun(tmp, whl, "3.12", glibc-1); err == nil || !strings.Contains(string(out), "not a supported wheel") {
		t.Errorf("pip on glibc 2.%d took a wheel needing 2.%d: %v\n%s", glibc-1, glibc, err, out)
	}
	ver, err := exec.Command(bins[0], "--version").Output()
	if err != nil || !strings.Contains(string(ver), "faster "+buildinfo.Version) || !strings.Contains(string(ver), "jpeg libjpeg-turbo (static)") {
		t.Errorf("the wheel's faster --version: %v\n%s", err, ver)
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

// manylinuxLibs are the libraries PEP 600 lets a manylinux wheel assume
// (glibc's; libstdc++ and libgcc_s too, which the wheel's binary does
// not take: checked above with ldd).
var manylinuxLibs = map[string]bool{"libc.so.6": true, "libm.so.6": true, "libpthread.so.0": true, "libdl.so.2": true,
	"librt.so.1": true, "ld-linux-x86-64.so.2": true}

// elfNeeds is the newest GLIBC_2.N version among path's imported symbols
// (N) and the libraries it needs.
func elfNeeds(t *testing.T, path string) (int, []string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.ImportedSymbols()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range syms {
		if v, ok := strings.CutPrefix(s.Version, "GLIBC_2."); ok {
			minor, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
			n = max(n, minor)
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	return n, libs
}

// pipDryRun asks pip whether it would install whl on CPython py on a
// machine of glibc 2.host, giving the platforms pip itself lists there
// (manylinux_2_host down to manylinux_2_17), without a package index.
func pipDryRun(tmp, whl, py string, host int) ([]byte, error) {
	args := []string{"-m", "pip", "install", "--dry-run", "--quiet", "--no-index", "--no-deps", "--ignore-installed",
		"--only-binary=:all:", "--python-version", py, "--implementation", "cp", "--target", filepath.Join(tmp, "pip-target")}
	for g := host; g >= 17; g-- {
		args = append(args, "--platform", fmt.Sprintf("manylinux_2_%d_x86_64", g))
	}
	return exec.Command(python, append(args, whl)...).CombinedOutput()
}
