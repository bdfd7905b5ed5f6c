package fit_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/faster-training/faster/fit"
	"github.com/faster-training/faster/internal/testenv"
	"github.com/faster-training/faster/loader"
	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/cuda"
)

// Training images decoded by the CPU loader reach a GPU model as bytes
// (u8-hwc: a quarter of the bytes to copy, no float pass on the loader's
// workers) and are normalised by the model's backend in the loader's own
// arithmetic, so the run ends where the same run fed floats ends, bit for
// bit: on the host (data.layout u8-hwc asked for: the trainer's feeder
// normalises), on a device state (DeviceReference, its ByteInputOp), and
// on the cuda backend's twin (normalize_u8 in torchvision's arithmetic),
// eagerly and with the step captured (the held batch keeps the bytes),
// and from a decode stage's U8 rows read in place.
// Left out, data.layout is u8-hwc for a GPU model and f32-chw for a cpu
// one or with RandomErasing (float-domain); u8-hwc asked for with
// RandomErasing is a problem of the config.
func TestRunBytesToTheModel(t *testing.T) {
	folder := testenv.WriteFolder(t, 3, 8)
	base := fit.DefaultConfig()
	base.Data.Path, base.Data.TestPath, base.Data.Resolution = folder, folder, 32
	base.Batch, base.Epochs, base.Seed = 8, 2, 7
	base.Model.Backend, base.Model.Filters, base.Model.Threads = "reference", []int{4, 4, 4}, 1

	run := func(name string, cfg fit.Config, open func(string, train.BackendOptions) (train.Backend, error)) *fit.Summary {
		t.Helper()
		sum, _, err := decodeRun(t, cfg, fit.DataOptions{}, open)
		if errors.Is(err, cuda.ErrNoCgo) {
			t.Skip("the twin needs cgo")
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return sum
	}
	want := run("cpu floats", base, nil)
	if want.InputLayout != string(loader.F32CHW) {
		t.Errorf("a cpu model's batches: layout %q, want %s when left out", want.InputLayout, loader.F32CHW)
	}

	hostBytes := base
	hostBytes.Data.Layout = loader.U8HWC
	refDevice := base
	refDevice.Model.Backend, refDevice.Model.Device = "", "cuda"
	refDevice.Data.Device = "cpu" // decoded on the cpu: the bytes go to the model
	twin := refDevice
	twinGraph := twin
	twinGraph.Parallel.CUDAGraph = true
	openRef := func(_ string, o train.BackendOptions) (train.Backend, error) { return train.NewDeviceReference(o), nil }
	openTwin := func(_ string, o train.BackendOptions) (train.Backend, error) { return cuda.OpenTwin(o) }
	// The twin's convolutions are not the reference's: its runs are
	// compared with the twin fed floats (data.layout f32-chw asked for).
	twinFloats := twin
	twinFloats.Data.Layout = loader.F32CHW
	wantTwin := run("cuda twin, floats", twinFloats, openTwin)
	if wantTwin.InputLayout != string(loader.F32CHW) {
		t.Errorf("cuda twin with f32-chw asked for: layout %q", wantTwin.InputLayout)
	}
	for _, c := range []struct {
		name string
		cfg  fit.Config
		open func(string, train.BackendOptions) (train.Backend, error)
		want *fit.Summary
	}{
		{"host, u8-hwc asked for", hostBytes, nil, want},
		{"device reference", refDevice, openRef, want},
		{"cuda twin", twin, openTwin, wantTwin},
		{"cuda twin, graph", twinGraph, openTwin, wantTwin},
	} {
		got := run(c.name, c.cfg, c.open)
		if got.InputLayout != string(loader.U8HWC) {
			t.Errorf("%s: layout %q, want %s", c.name, got.InputLayout, loader.U8HWC)
		}
		if got.WeightsSHA256 != c.want.WeightsSHA256 || got.TestLoss != c.want.TestLoss {
			t.Errorf("%s: weights %.12s test loss %v; fed floats %.12s %v", c.name, got.WeightsSHA256, got.TestLoss, c.want.WeightsSHA256, c.want.TestLoss)
		}
	}

	// A decode stage's U8 rows (data.layout u8-hwc asked for; the stage's
	// CPU stand-in with buffers mapped as the twin's device memory), read
	// in place and normalised in the same arithmetic: the same run again.
	stand := &loader.CPUBatchDecoder{Mapped: "cuda-twin", Workers: 2}
	staged := twin
	staged.Data.Device, staged.Data.Layout = "", loader.U8HWC
	sum, _, err := decodeRun(t, staged, fit.DataOptions{NewBatchDecoder: func(loader.DecoderConfig) (loader.BatchDecoder, error) { return stand, nil }}, openTwin)
	if err != nil {
		t.Fatal(err)
	}
	if sum.DecodeDevice != "cuda-twin" || sum.InputLayout != string(loader.U8HWC) || sum.WeightsSHA256 != wantTwin.WeightsSHA256 || sum.TestLoss != wantTwin.TestLoss {
		t.Errorf("U8 rows from the stage: decoded on %q, layout %q, weights %.12s loss %v; want cuda-twin, %s, %.12s %v",
			sum.DecodeDevice, sum.InputLayout, sum.WeightsSHA256, sum.TestLoss, loader.U8HWC, wantTwin.WeightsSHA256, wantTwin.TestLoss)
	}
	if n := stand.Live(); n != 0 {
		t.Errorf("%d batch buffers never freed", n)
	}

	// The test images travel as bytes too: every image the backend
	// normalised is a trained one or one of an evaluation's (one after
	// each epoch); with flip TTA (the host's evaluator) the bytes are
	// normalised on the host, and the run still ends where the floats' ends.
	var normalised atomic.Int64
	openCounting := func(_ string, o train.BackendOptions) (train.Backend, error) {
		return byteCounter{train.NewDeviceReference(o), &normalised}, nil
	}
	got := run("device reference, counted", refDevice, openCounting)
	if n := normalised.Load(); got.WeightsSHA256 != want.WeightsSHA256 || n != int64(got.Images+len(got.Curve)*got.TestImages) || len(got.Curve) != 2 {
		t.Errorf("bytes normalised by the backend: %d, want %d trained + %d evaluations × %d test images (weights %.12s, want %.12s)",
			n, got.Images, len(got.Curve), got.TestImages, got.WeightsSHA256, want.WeightsSHA256)
	}
	flip, flipFloats := refDevice, base
	flip.Eval.TTA, flipFloats.Eval.TTA = "flip", "flip"
	if got, want := run("device reference, flip", flip, openRef), run("cpu floats, flip", flipFloats, nil); got.TestLoss != want.TestLoss || got.TestAccuracy != want.TestAccuracy {
		t.Errorf("flip TTA over bytes: test loss %v accuracy %v; over floats %v %v", got.TestLoss, got.TestAccuracy, want.TestLoss, want.TestAccuracy)
	}

	// FixRes's BatchNorm recalibration over the calibration images as
	// bytes, on the device state: where the floats' recalibration ends.
	fix, fixFloats := refDevice, base
	fix.Eval.FixResBN, fixFloats.Eval.FixResBN = 2, 2
	gotFix, wantFix := run("device reference, fixres", fix, openRef), run("cpu floats, fixres", fixFloats, nil)
	if gotFix.WeightsSHA256 != wantFix.WeightsSHA256 || gotFix.TestLoss != wantFix.TestLoss || gotFix.FixResBN == nil || wantFix.TestLoss == want.TestLoss {
		t.Errorf("fixres over bytes on the device: weights %.12s loss %v (%+v); over floats %.12s %v (without fixres %v)",
			gotFix.WeightsSHA256, gotFix.TestLoss, gotFix.FixResBN, wantFix.WeightsSHA256, wantFix.TestLoss, want.TestLoss)
	}

	// Flip TTA on the twin's device: the test bytes mirrored by
	// normalize_u8 score as the floats mirrored on the host.
	twinFlip, twinFloatsFlip := twin, twinFloats
	twinFlip.Eval.TTA, twinFloatsFlip.Eval.TTA = "flip", "flip"
	gotFlip, wantFlip := run("cuda twin, flip", twinFlip, openTwin), run("cuda twin, floats, flip", twinFloatsFlip, openTwin)
	if gotFlip.TestLoss != wantFlip.TestLoss || gotFlip.TestAccuracy != wantFlip.TestAccuracy || gotFlip.TestLoss == wantTwin.TestLoss {
		t.Errorf("cuda twin, flip TTA: over bytes %v %v, over floats %v %v (without flip %v)", gotFlip.TestLoss, gotFlip.TestAccuracy, wantFlip.TestLoss, wantFlip.TestAccuracy, wantTwin.TestLoss)
	}

	// RandomErasing works on the float tensor: left out, floats; asked
	// for, a problem naming the recipe's field.
	erase := refDevice
	erase.Data.Recipe.ErasingProb = 0.5
	if got := run("device reference, erasing", erase, openRef); got.InputLayout != string(loader.F32CHW) {
		t.Errorf("with RandomErasing: layout %q, want %s", got.InputLayout, loader.F32CHW)
	}
	erase.Data.Layout = loader.U8HWC
	var ce *fit.ConfigError
	if err := erase.Validate(); !errors.As(err, &ce) || !strings.Contains(err.Error(), "erasing_prob") {
		t.Errorf("u8-hwc with RandomErasing: %v, want a config error naming erasing_prob", err)
	}
}

// byteCounter is a DeviceReference that counts the images its byte input
// normalises.
type byteCounter struct {
	*train.DeviceReference
	n *atomic.Int64
}

func (b byteCounter) NewByteInput() (train.ByteInputOp, error) {
	op, err := b.DeviceReference.NewByteInput()
	return countedInput{op, b.n}, err
}

type countedInput struct {
	train.ByteInputOp
	n *atomic.Int64
}

func (c countedInput) Normalize(dst train.Tensor, b train.ByteBatch) error {
	c.n.Add(int64(b.N))
	return c.ByteInputOp.Normalize(dst, b)
}
