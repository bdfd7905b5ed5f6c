package bench

import (
	"strings"
	"testing"
)

// --device and --amp-dtype reach every cell's run (fit.Config), which
// validates; bad values are usage errors naming the flag.
func TestTrainConfigDevice(t *testing.T) {
	c := TrainConfig{Data: t.TempDir(), Epochs: 1, Batch: 8, LR: 0.1, Devices: 2, Repeats: 1, Device: "cuda:1", AMPDtype: "fp16"}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	cfg := c.CellConfig("dp", "autotune+amp")
	if cfg.Model.Device != "cuda:1" || cfg.Parallel.AMPDtype != "fp16" || !cfg.Parallel.AMP {
		t.Fatalf("cell: device %q amp %v %q", cfg.Model.Device, cfg.Parallel.AMP, cfg.Parallel.AMPDtype)
	}
	if cfg := c.CellConfig("single", "plain"); cfg.Model.Device != "cuda:1" || cfg.Parallel.AMP {
		t.Fatalf("plain cell: device %q amp %v", cfg.Model.Device, cfg.Parallel.AMP)
	}
	for _, bad := range []TrainConfig{{Device: "gpu"}, {AMPDtype: "fp8"}} {
		b := c
		if bad.Device != "" {
			b.Device = bad.Device
		}
		if bad.AMPDtype != "" {
			b.AMPDtype = bad.AMPDtype
		}
		if err := b.Check(); err == nil || !strings.Contains(err.Error(), "--") {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}
