package kernels

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

func TestNamesMatchSource(t *testing.T) {
	if got := defined(); !slices.Equal(got, Names) {
		t.Fatalf("resize.cu defines %v, Names lists %v", got, Names)
	}
}

// NVRTC compiles C++: g++ parses GPUSource() with a shim of CUDA's
// device-side names, so a C-only construct fails here, not on the GPU.
func TestGPUSourceIsCXX(t *testing.T) {
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("no g++")
	}
	src := filepath.Join(t.TempDir(), "resize_gpu.cu")
	if err := os.WriteFile(src, []byte(GPUSource()), 0o644); err != nil {
		t.Fatal(err)
	}
	shim, _ := filepath.Abs("testdata/nvrtc_shim.h")
	out, err := exec.Command(gxx, "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-include", shim, "-x", "c++", src).CombinedOutput()
	if err != nil {
		t.Fatalf("g++ on GPUSource: %v\n%s", err, out)
	}
}
