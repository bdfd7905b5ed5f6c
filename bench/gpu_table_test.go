package bench

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/fit"
	"github.com/faster-training/faster/internal/testenv"
)

// gpu_table.py, the table of bench/gpu_table.sh: each engine's JSON
// (ours as `faster bench train --json` and `faster train --json` write
// it, the peer's) read into its cell, a failed cell shown as failed with
// its error listed, a cell not run as "-", each step's floor beside its
// table with the cells nearest it, and table.json written.
func TestGPUTableParses(t *testing.T) {
	py := testenv.PythonWith(t, "json")
	dir := t.TempDir()
	write := func(name string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ours.synthetic32.single.plain.json", TrainSummary{Device: "cuda:0", Cells: []TrainCell{{Strategy: "single", Variant: "plain", Seconds: 4.25, MsPerStep: 8.5, ImagesPerSec: 60000, TestAccuracy: 0.5}}})
	write("torch.synthetic32.single.plain.json", map[string]any{"seconds": 4.88, "ms_per_step": 9.96, "images_per_sec": 51000, "test_accuracy": 0.25,
		"per_epoch": []map[string]any{{"images_per_sec": 51000}}})
	write("ours.synthetic32.single+graph.plain.json", TrainSummary{Device: "cuda:0", Cells: []TrainCell{{Strategy: "single", Variant: "plain", Seconds: 2.1, MsPerStep: 4.2, ImagesPerSec: 120000, TestAccuracy: 0.5}}})
	os.WriteFile(filepath.Join(dir, "ours.synthetic32.ddp.amp.err"), []byte("faster: collective: no library \"gloo\"\nexit 1 after 0 s"), 0o644)
	write("ours.jpeg-loader.resnet18.bf16.json", fit.Summary{Seconds: 2, MsPerStep: 25, Batch: 256, ImagesPerSec: 12800, PerEpoch: []fit.EpochSummary{{ImagesPerSec: 12000}, {ImagesPerSec: 12800}}})
	os.WriteFile(filepath.Join(dir, "torch.synthetic32.dp.plain.json"), []byte("{not json"), 0o644)
	write("floors.json", map[string]any{ // gpu_where.py --floors
		"synthetic32": map[string]any{"gflops_per_step": 454.6, "mb_per_step": 4967.0,
			"tf32": map[string]any{"floor_ms": 1.0}, "fp16": map[string]any{"floor_ms": 0.5}, "bf16": map[string]any{"floor_ms": 0.5}},
		"resnet18": map[string]any{"gflops_per_step": 2785.6, "mb_per_step": 23326.0,
			"tf32": map[string]any{"floor_ms": 6.0}, "fp16": map[string]any{"floor_ms": 5.0}, "bf16": map[string]any{"floor_ms": 5.0}},
	})
	out, err := exec.Command(py, "gpu_table.py", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, want := range []string{
		"4.25s 8.5ms 50.0% | 4.88s 10.0ms 25.0%",               // ours | torch
		"single+graph  2.10s 4.2ms 50.0% | 4.88s 10.0ms 25.0%", // ours' graph row beside the peer's single cell
		"failed | -", // ddp amp: ours failed, torch not run
		"- | failed", // dp plain: the peer's output unreadable
		"ours  jpeg-loader                12800 images/s (20.0 ms a step, 4.0× the floor)",
		"bf16, batch 256: the last epoch's images/s and ms per step (floor 5.00 ms a step)",
		// The floor beside the table, and each engine's cell nearest it.
		"floor a step (454.6 GFLOP at the dense peak, 4967 MB at the bandwidth): tf32 1.00 ms, fp16 0.50 ms; ours nearest: 4.2× (single+graph plain); torch nearest: 10.0× (single plain)",
		`ours.synthetic32.ddp.amp: exit 1 after 0 s`,
		"4 cells ran, 2 failed",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	var tab struct{ Cells []map[string]any }
	b, err := os.ReadFile(filepath.Join(dir, "table.json"))
	if err != nil || json.Unmarshal(b, &tab) != nil || len(tab.Cells) != 6 {
		t.Fatalf("table.json: %v, %d cells: %s", err, len(tab.Cells), b)
	}
}
