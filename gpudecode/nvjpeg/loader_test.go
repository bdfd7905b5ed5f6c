//go:build cgo

package nvjpeg

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/faster-training/faster/train/cuda"
)

// The loader's table is decls.h's, in order, each symbol in its library.
func TestLoaderTable(t *testing.T) {
	names, libs, _ := resolved()
	if len(names) != len(Decls) {
		t.Fatalf("dl.c resolves %d symbols, Decls lists %d", len(names), len(Decls))
	}
	for i, d := range Decls {
		if names[i] != d.Symbol || libs[i] != d.Lib {
			t.Errorf("dl.c %d: %s in %v, Decls %s in %v", i, names[i], libs[i], d.Symbol, d.Lib)
		}
	}
}

// Without a GPU, Open fails naming every soname tried and why; with one
// (FASTER_REQUIRE_GPU=1 or a driver present) the GPU tests run instead.
func TestOpenWithoutGPU(t *testing.T) {
	if cuda.Probe() != "" && !strings.HasPrefix(cuda.Probe(), "no driver") {
		t.Skip("this machine has a CUDA driver: gpu_test.go runs instead")
	}
	if os.Getenv("FASTER_REQUIRE_GPU") == "1" {
		t.Fatal("FASTER_REQUIRE_GPU=1 and no driver: " + cuda.Probe())
	}
	d, err := Open(Options{Ordinal: 0})
	if err == nil {
		d.Close()
		t.Fatal("Open succeeded without a driver")
	}
	for _, want := range []string{"GPU 0", "libcuda.so.1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	var le *LoadError
	if errors.As(err, &le) {
		for _, so := range []string{"libnvjpeg.so.13", "libnvjpeg.so.12", "libcudart.so.13"} {
			if !strings.Contains(err.Error(), so) {
				t.Errorf("error %q does not name %s", err, so)
			}
		}
	}
	if !errors.Is(err, cuda.ErrNoDriver) {
		t.Errorf("error %q is not cuda.ErrNoDriver", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans lines: %q", err)
	}
	if _, err := Open(Options{Ordinal: -1}); err == nil || !strings.Contains(err.Error(), "GPU -1") {
		t.Errorf("ordinal -1: %v", err)
	}
}
