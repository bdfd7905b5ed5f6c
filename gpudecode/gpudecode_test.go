package gpudecode

import (
	"os"
	"strings"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
	"github.com/faster-training/faster/loader"
	"github.com/faster-training/faster/train/cuda"
)

// Without a GPU, a loader asked for device cuda fails at Open with one
// line naming the device and every library tried.
func TestOpenWithoutGPU(t *testing.T) {
	if p := cuda.Probe(); !strings.HasPrefix(p, "no") {
		t.Skip("this machine has a CUDA driver: gpu_test.go runs instead")
	}
	if os.Getenv("FASTER_REQUIRE_GPU") == "1" {
		t.Fatal("FASTER_REQUIRE_GPU=1 and no driver: " + cuda.Probe())
	}
	dir := testenv.WriteFolder(t, 2, 3)
	_, err := loader.Open(dir, loader.Options{Device: "cuda:0", Resolution: 16, Batch: 2})
	if err == nil {
		t.Fatal("device cuda opened without a GPU")
	}
	msg := err.Error()
	want := []string{`device "cuda:0"`}
	if strings.Contains(cuda.Probe(), "cgo") {
		want = append(want, "without cgo")
	} else {
		want = append(want, "libnvjpeg.so.13", "libcudart.so.13", "libcuda.so.1")
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error does not name %s: %s", w, msg)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("error spans lines: %q", msg)
	}
}
