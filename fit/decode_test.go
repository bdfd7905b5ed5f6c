package fit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/faster-training/faster/fit"
	"github.com/faster-training/faster/internal/testenv"
	"github.com/faster-training/faster/loader"
	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/cuda"
)

// decodeRun is a run of cfg with its data opened by OpenDataWith(opts),
// its backends by open, its notes collected; the data closed after.
func decodeRun(t *testing.T, cfg fit.Config, opts fit.DataOptions, open func(string, train.BackendOptions) (train.Backend, error)) (*fit.Summary, []string, error) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	ctx := context.Background()
	data, err := fit.OpenDataWith(ctx, &cfg, 0, 1, opts)
	if err != nil {
		return nil, nil, err
	}
	defer data.Close()
	var notes []string
	sum, err := fit.Run(ctx, cfg, data, nil, fit.Hooks{OpenBackend: open, Note: func(m string) { notes = append(notes, m) }})
	return sum, notes, err
}

// `faster train --device cuda` on encoded images: the training images
// are decoded by the batch-decode stage on the model's device and reach
// the engine as device rows, never crossing to the host — here the
// stage's CPU stand-in with mapped buffers reported as the twin's device
// memory, read by the cuda backend's twin in place. The run ends with
// the weights and test loss of the same run decoding on the cpu (bit for
// bit: the stand-in decodes the CPU path's bytes), with the graph and
// without; every buffer of the ring goes back when the data closes.
// Without a decoder for the device, a left-out data.device falls back to
// the cpu and says why; data.device naming another GPU is a problem of
// data.device.
func TestRunDecodedOnTheModelsDevice(t *testing.T) {
	folder := testenv.WriteFolder(t, 3, 8)
	twin := func(_ string, o train.BackendOptions) (train.Backend, error) { return cuda.OpenTwin(o) }
	cfg := fit.DefaultConfig()
	cfg.Data.Path, cfg.Data.TestPath, cfg.Data.Resolution = folder, folder, 32
	cfg.Batch, cfg.Epochs, cfg.Seed = 8, 2, 7
	cfg.Model.Filters, cfg.Model.Threads, cfg.Model.Device = []int{4, 4, 4}, 1, "cuda"
	for _, graph := range []bool{false, true} {
		c := cfg
		c.Parallel.CUDAGraph = graph
		if graph {
			c.Data.CPUShare = 0.25 // the stage's CPU share: 2 rows of each batch of 8
		}
		cpu := c
		cpu.Data.Device, cpu.Data.CPUShare = "cpu", 0
		want, _, err := decodeRun(t, cpu, fit.DataOptions{}, twin)
		if errors.Is(err, cuda.ErrNoCgo) {
			t.Skip("the twin needs cgo")
		}
		if err != nil {
			t.Fatal(err)
		}
		stand := &loader.CPUBatchDecoder{Mapped: "cuda-twin", Workers: 2}
		opened := 0
		got, _, err := decodeRun(t, c, fit.DataOptions{NewBatchDecoder: func(dc loader.DecoderConfig) (loader.BatchDecoder, error) {
			if dc.Device != "cuda:0" {
				t.Errorf("decoder opened for %q, want cuda:0", dc.Device)
			}
			opened++
			stand.Share = dc.CPUShare
			return stand, nil
		}}, twin)
		if err != nil {
			t.Fatal(err)
		}
		if got.WeightsSHA256 != want.WeightsSHA256 || got.TestLoss != want.TestLoss {
			t.Errorf("graph %v: decoded on the device: %.12s loss %v; on the cpu %.12s %v", graph, got.WeightsSHA256, got.TestLoss, want.WeightsSHA256, want.TestLoss)
		}
		if got.DecodeDevice != "cuda-twin" || want.DecodeDevice != "" || opened != 1 {
			t.Errorf("decode devices %q and %q (want cuda-twin, none: the cpu); the decoder opened %d times (want once: the test images stay on the cpu)", got.DecodeDevice, want.DecodeDevice, opened)
		}
		if n := stand.Live(); n != 0 {
			t.Errorf("%d batch buffers never freed", n)
		}
		if wantShared := map[bool]int64{true: 2 * 3 * 2}[graph]; got.DecodeShared != wantShared {
			t.Errorf("graph %v: %d images decoded as the CPU's share, want %d", graph, got.DecodeShared, wantShared)
		}
	}
	// A share where the images are decoded on the cpu: a config error.
	shareOnCPU := cfg
	shareOnCPU.Data.Device, shareOnCPU.Data.CPUShare = "cpu", 0.5
	if err := shareOnCPU.Validate(); err == nil || !strings.Contains(err.Error(), "data.cpu_share") {
		t.Errorf("data.cpu_share with data.device cpu: %v", err)
	}

	// No decoder for the device in this test binary: the cpu, and a note.
	got, notes, err := decodeRun(t, cfg, fit.DataOptions{}, twin)
	if err != nil {
		t.Fatal(err)
	}
	if got.DecodeDevice != "" || len(notes) == 0 || !strings.Contains(notes[0], "decoded on the cpu, not cuda:0") || !strings.Contains(notes[0], "no cuda batch decoder") {
		t.Errorf("without a decoder: decoded on %q, notes %q", got.DecodeDevice, notes)
	}
	// Asked for by name, its absence is an error.
	named := cfg
	named.Data.Device = "cuda"
	if _, _, err := decodeRun(t, named, fit.DataOptions{}, twin); err == nil || !strings.Contains(err.Error(), "no cuda batch decoder") {
		t.Errorf("data.device cuda without a decoder: %v", err)
	}
	other := cfg
	other.Data.Device = "cuda:1"
	var ce *fit.ConfigError
	if err := other.Validate(); !errors.As(err, &ce) || !strings.Contains(err.Error(), "data.device") || !strings.Contains(err.Error(), "model.device cuda:0") {
		t.Errorf("data.device cuda:1 with model.device cuda: %v", err)
	}
}
