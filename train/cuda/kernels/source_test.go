package kernels

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestKernelsListed(t *testing.T) {
	var listed []string
	for _, k := range Kernels {
		listed = append(listed, k.Name)
	}
	if got := defined(); !slices.Equal(got, listed) {
		t.Fatalf("kernels.cu defines %v, Kernels lists %v", got, listed)
	}
}

// The GPU source is the GPU prelude and kernels.cu, which includes no
// header (NVRTC has none of the system's) and no C-only construct the
// prelude does not map.
func TestGPUSource(t *testing.T) {
	src := GPUSource()
	if !strings.Contains(src, `extern "C" __global__`) || !strings.HasSuffix(src, Source) {
		t.Fatal("GPUSource is not the GPU prelude then kernels.cu")
	}
	for _, bad := range []string{"#include", "restrict", "_Bool", "__thread"} {
		if strings.Contains(Source, bad) {
			t.Errorf("kernels.cu uses %q, which NVRTC or the CPU build lacks", bad)
		}
	}
	if !strings.Contains(Source, "#define MAXB 256") || MaxBlock != 256 {
		t.Error("MaxBlock and kernels.cu's MAXB differ")
	}
}

func TestPlan(t *testing.T) {
	cases := []struct {
		f     Facts
		s     Shape
		items int64
		size  int64
		want  Launch
	}{
		{H200, Elementwise, 1, 0, Launch{1, 256}},
		{H200, Elementwise, 0, 0, Launch{1, 256}},
		{H200, Elementwise, 1000, 0, Launch{4, 256}},
		{H200, Elementwise, 11_689_512, 0, Launch{132 * 8, 256}}, // ResNet-18's parameters: capped at what is resident
		{H200, PerRow, 512, 10, Launch{512, 32}},                 // ThinNet's logits
		{H200, PerRow, 256, 1000, Launch{256, 256}},              // ResNet-18's
		{H200, PerChannel, 32, 512 * 30 * 30, Launch{32, 256}},   // ThinNet's first BN
		{H200, Single, 0, 512, Launch{1, 256}},
		{H200, Single, 0, 5, Launch{1, 32}},
		{small, Elementwise, 1 << 20, 0, Launch{2, 256}},
		{small, PerRow, 100, 10, Launch{16, 32}},
		{Facts{SMs: 1, MaxThreadsPerBlock: 64, MaxThreadsPerSM: 64}, PerRow, 3, 1000, Launch{1, 64}},
	}
	for _, c := range cases {
		got, err := c.f.Plan(c.s, c.items, c.size)
		if err != nil || got != c.want {
			t.Errorf("%+v.Plan(%d, %d, %d) = %+v, %v; want %+v", c.f, c.s, c.items, c.size, got, err, c.want)
		}
		if got.Block&(got.Block-1) != 0 || got.Block > MaxBlock || got.Block > c.f.MaxThreadsPerBlock {
			t.Errorf("block %d: not a power of two within the limits", got.Block)
		}
	}
	for _, f := range []Facts{{}, {SMs: 1, MaxThreadsPerBlock: 16, MaxThreadsPerSM: 16}, {SMs: 1, MaxThreadsPerBlock: 1024, MaxThreadsPerSM: 512}} {
		if _, err := f.Plan(Elementwise, 1, 0); err == nil {
			t.Errorf("%+v: planned", f)
		}
	}
	if _, err := H200.Plan(Elementwise, -1, 0); err == nil {
		t.Error("negative items planned")
	}
	if _, err := H200.Plan(Shape(9), 1, 1); err == nil {
		t.Error("unknown shape planned")
	}
}

// NVRTC compiles C++: g++ parses GPUSource() with a shim of CUDA's
// device-side names (testdata/nvrtc_shim.h), so a C-only construct in
// kernels.cu is caught without a GPU. That NVRTC itself accepts it waits
// for the device check (gpucheck.sh).
func TestGPUSourceIsCXX(t *testing.T) {
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("no g++")
	}
	src := filepath.Join(t.TempDir(), "kernels_gpu.cu")
	if err := os.WriteFile(src, []byte(GPUSource()), 0o644); err != nil {
		t.Fatal(err)
	}
	shim, _ := filepath.Abs("testdata/nvrtc_shim.h")
	out, err := exec.Command(gxx, "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-include", shim, "-x", "c++", src).CombinedOutput()
	if err != nil {
		t.Fatalf("g++ on GPUSource: %v\n%s", err, out)
	}
}
