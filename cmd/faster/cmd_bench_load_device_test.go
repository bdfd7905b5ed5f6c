package main

import (
	"strings"
	"testing"

	"github.com/faster-training/faster/train/cuda"
)

// --device: validated as the Spec's device field (a usage error naming
// the flag); cuda on a machine without a GPU fails in one line naming the
// device and every library tried.
func TestBenchLoadDevice(t *testing.T) {
	root := writeFolder(t, 2, 3)
	code, _, errs := runCLI(t, "bench", "load", root, "--device", "gpu", "--batch", "2", "--resolution", "16")
	if code != 2 || !strings.Contains(errs, "--device") || !strings.Contains(errs, `"gpu"`) {
		t.Fatalf("--device gpu: exit %d: %s", code, errs)
	}
	code, _, errs = runCLI(t, "bench", "load", root, "--device", "cpu", "--batch", "2", "--resolution", "16", "--json")
	if code != 0 {
		t.Fatalf("--device cpu: exit %d: %s", code, errs)
	}
	if p := cuda.Probe(); !strings.HasPrefix(p, "no") {
		t.Skip("this machine has a CUDA driver")
	}
	code, _, errs = runCLI(t, "bench", "load", root, "--device", "cuda", "--batch", "2", "--resolution", "16")
	if code != 1 {
		t.Fatalf("--device cuda without a GPU: exit %d: %s", code, errs)
	}
	want := []string{`device "cuda"`}
	if !strings.Contains(cuda.Probe(), "cgo") {
		want = append(want, "libnvjpeg.so.13", "libcuda.so.1")
	} else {
		want = append(want, "without cgo")
	}
	for _, w := range want {
		if !strings.Contains(errs, w) {
			t.Errorf("error does not name %s: %s", w, errs)
		}
	}
	if n := strings.Count(strings.TrimSpace(errs), "\n"); n > 0 {
		t.Errorf("a user error of %d lines: %s", n+1, errs)
	}
}
