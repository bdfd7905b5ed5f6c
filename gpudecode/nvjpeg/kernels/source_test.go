package kernels

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	ck "github.com/faster-training/faster/train/cuda/kernels"
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

// The launcher (train/cuda's Function) checks resize.cu's pointers against
// the sizes of what they point at, read from the source as for
// kernels.cu: every kernel is found, and each pointer's element size is
// known (u8 1, i32 and float 4, i64 8; 0 for a value).
func TestAlignsOfResize(t *testing.T) {
	a := ck.AlignsOf(Source)
	want := map[string][]int{
		"resize_h":     {0, 1, 1, 4, 8, 0, 0},
		"resize_v_u8":  {0, 1, 1, 4, 8, 0, 0, 0},
		"resize_v_f32": {0, 1, 4, 4, 8, 4, 0, 0, 0},
	}
	if len(a) != len(Names) {
		t.Errorf("%d kernels found, want %d (%v)", len(a), len(Names), Names)
	}
	for _, name := range Names {
		if !slices.Equal(a[name], want[name]) {
			t.Errorf("%s: alignments %v, want %v", name, a[name], want[name])
		}
	}
}
