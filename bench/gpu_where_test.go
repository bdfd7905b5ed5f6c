package bench

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
)

// gpu_where.py --floors counts a step's FLOPs and bytes from the model's
// shapes as its doc says (the floors beside bench/gpu_table.sh's cells):
// ThinNet with filters 4,8 on 3×32×32 at batch 8, counted by hand —
// six unpadded 3×3 convolutions (32→30→28→26 at 4 channels, then
// →24→22→20 at 8) and a linear layer of 8·2·2 → 10: 982,832
// multiply-adds a sample, ×2 FLOPs, ×3 for the backward pass; every
// leaf's output (each convolution's, ReLU's and BatchNorm's 21,120
// values, the pool's and flatten's 32, the linear layer's 10) written
// once and read twice, and 2,238 parameters read, their gradients
// written and read, SGD reading and writing them and their momentum:
// 8 × 4 bytes each.
func TestGPUWhereFloors(t *testing.T) {
	py := testenv.PythonWith(t, "torch")
	out := filepath.Join(t.TempDir(), "floors.json")
	b, err := exec.Command(py, "gpu_where.py", "--device", "cpu", "--floors", out, "--case", "toy=thinnet:3:32:8:10:4,8").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	var floors map[string]struct {
		Flops, Bytes int64
		TF32         struct {
			FloorMs float64 `json:"floor_ms"`
		} `json:"tf32"`
		FP16 struct {
			FloorMs float64 `json:"floor_ms"`
			By      string  `json:"floor_by"`
		} `json:"fp16"`
	}
	data, err := os.ReadFile(out)
	if err != nil || json.Unmarshal(data, &floors) != nil {
		t.Fatalf("%s: %v: %s", out, err, data)
	}
	toy, ok := floors["toy"]
	const flops, bytes = 8 * 982832 * 2 * 3, 3*8*4*(3*21120+32+32+10) + 8*4*2238
	if !ok || toy.Flops != flops || toy.Bytes != bytes {
		t.Fatalf("toy ThinNet: %d FLOPs and %d bytes a step, want %d and %d: %s", toy.Flops, toy.Bytes, flops, bytes, data)
	}
	// The floor is the larger of the two times: at fp16's 989 TFLOP/s
	// and 4.8 TB/s, the bytes.
	if want := float64(bytes) / 4.8e12 * 1e3; toy.FP16.By != "bytes" || toy.FP16.FloorMs != float64(int64(want*1e4+0.5))/1e4 {
		t.Errorf("fp16 floor %v ms by %s, want %.4f by bytes", toy.FP16.FloorMs, toy.FP16.By, want)
	}
}
