package train_test

import (
	"context"
	"strings"
	"testing"

	"github.com/faster-training/faster/train"
)

// capturingRef is DeviceReference as a StepCapturer that runs each step
// as it is handed (its record is the step itself), counting the steps and
// keys: the trainer's wiring of CaptureStep tested without a device.
type capturingRef struct {
	*train.DeviceReference
	keys     map[string]int
	released int
}

func (c *capturingRef) RunStep(key string, step func() error) (train.StepRun, error) {
	c.keys[key]++
	return train.StepReplayed, step()
}

func (c *capturingRef) ReleaseStep() { c.released++ }

// CaptureStep on a device state whose backend captures: every step goes
// through RunStep under one key (the input's shape), with the feeder's
// overlap and without, the loss read every third step, and the run ends
// with the bits of the same run without capture.
func TestTrainerCaptureStep(t *testing.T) {
	for _, noOverlap := range []bool{false, true} {
		setup := func(tr *train.Trainer) { tr.LossEvery, tr.NoOverlap = 3, noOverlap }
		want := trainDevice(t, train.NewDeviceReference(train.BackendOptions{}), true, setup, nil)
		c := &capturingRef{DeviceReference: train.NewDeviceReference(train.BackendOptions{}), keys: map[string]int{}}
		got := trainDevice(t, c, true, func(tr *train.Trainer) { setup(tr); tr.CaptureStep = true }, nil)
		sameRun(t, got, want)
		steps := 0
		for _, n := range c.keys {
			steps += n
		}
		if len(c.keys) != 1 || steps != 2*96/16 || len(want.losses) != 2*2 || c.released != 1 {
			t.Errorf("no overlap %v: keys %v (%d steps, want 12 under one key; %d loss reads, want 4), released %d times (want once, at Close: a record outlives the epoch)", noOverlap, c.keys, steps, len(want.losses), c.released)
		}
	}
}

// CaptureStep is refused, with an error naming why and before any step
// runs, on a backend without StepCapturer, on the host path, with a
// GradScaler whose state cannot keep it on the device, and with replicas.
func TestTrainerCaptureRefused(t *testing.T) {
	capRef := func() train.Backend {
		return &capturingRef{DeviceReference: train.NewDeviceReference(train.BackendOptions{}), keys: map[string]int{}}
	}
	for _, c := range []struct {
		name  string
		b     func() train.Backend
		setup func(*train.Trainer) error
		want  string
	}{
		{"no capturer", func() train.Backend { return train.NewDeviceReference(train.BackendOptions{}) }, nil, "does not implement StepCapturer"},
		{"host path", func() train.Backend { return &hostCapturer{Reference: train.NewReference(train.BackendOptions{})} }, nil, "host path"},
		{"scaler", func() train.Backend { return hostScalerRef{capRef().(*capturingRef)} }, func(tr *train.Trainer) error { tr.Scaler = train.NewGradScaler(); return nil }, "ScalerState"},
		{"replicas", capRef, func(tr *train.Trainer) error {
			net, err := train.NewThinNet(tr.Backend, toyNet, 5)
			if err != nil {
				return err
			}
			t.Cleanup(net.Close)
			return tr.AddReplica(capRef(), net)
		}, "2 devices"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := c.b()
			net, err := train.NewThinNet(b, toyNet, 5)
			if err != nil {
				t.Fatal(err)
			}
			defer net.Close()
			tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9}, train.Constant(0.05), 8, 3)
			defer tr.Close()
			tr.CaptureStep = true
			if c.setup != nil {
				if err := c.setup(tr); err != nil {
					t.Fatal(err)
				}
			}
			_, err = tr.TrainEpoch(context.Background(), toyData(32, 7), nil)
			if err == nil || !strings.Contains(err.Error(), c.want) || tr.Step != 0 {
				t.Errorf("%v after %d steps; want a refusal naming %q", err, tr.Step, c.want)
			}
		})
	}
}

// hostCapturer is the reference (the host path: no device state) with
// a StepCapturer.
type hostCapturer struct{ *train.Reference }

func (h *hostCapturer) RunStep(_ string, step func() error) (train.StepRun, error) {
	return train.StepReplayed, step()
}
func (h *hostCapturer) ReleaseStep() {}

// hostScalerRef is capturingRef whose states keep no GradScaler on the
// device (State only: no ScalerState).
type hostScalerRef struct{ *capturingRef }

func (h hostScalerRef) NewState(params, buffers []*train.Param, opt *train.SGD, e *train.EMA) (train.State, error) {
	st, err := h.capturingRef.NewState(params, buffers, opt, e)
	return struct{ train.State }{st}, err
}

// With the GradScaler on the device (ScalerState), eager and captured
// steps give the host GradScaler's bits — weights, momentum, the losses
// and the scaler's scale, growth tracker and skipped count, over steps
// skipped and taken — and read the scaler back only where the loss is
// read (every fourth step and each epoch's last) and when the state is
// unbound, never a finite flag a step. The same run on a state without ScalerState reads its flag
// every step (Unscales 12), which is what this change removed.
func TestTrainerScalerOnDevice(t *testing.T) {
	setup := func(tr *train.Trainer) {
		tr.LossEvery = 4
		tr.Scaler = &train.GradScaler{Scale: 1 << 24, GrowthFactor: 1.5, BackoffFactor: 0.5, GrowthInterval: 3}
	}
	o := train.BackendOptions{Precision: train.Float16}
	want := trainDevice(t, train.NewReference(o), false, setup, nil)
	if sc := want.scaler; sc.Skipped == 0 || sc.Skipped == 12 {
		t.Fatalf("scaler %+v: want steps skipped and steps taken", sc)
	}
	for _, capture := range []bool{false, true} {
		dev := train.NewDeviceReference(o)
		var b train.Backend = dev
		if capture {
			b = &capturingRef{DeviceReference: dev, keys: map[string]int{}}
		}
		got := trainDevice(t, b, true, func(tr *train.Trainer) { setup(tr); tr.CaptureStep = capture }, nil)
		sameRun(t, got, want)
		// The scaler's reads: the loss's at steps 4 and 6 of each epoch,
		// and the unbind that ends each epoch's call (the evaluations and
		// the checkpoint after it find the state unbound).
		if dev.Unscales != 0 || dev.ScalerReads != 2*2+2 {
			t.Errorf("capture %v: %d finite flags read, %d scaler reads (want 0, 6)", capture, dev.Unscales, dev.ScalerReads)
		}
	}
	dev := train.NewDeviceReference(o)
	got := trainDevice(t, hostScalerRef{&capturingRef{DeviceReference: dev, keys: map[string]int{}}}, true, setup, nil)
	sameRun(t, got, want)
	if dev.Unscales != 12 || dev.ScalerReads != 0 {
		t.Errorf("without ScalerState: %d finite flags read, %d scaler reads (want 12, 0)", dev.Unscales, dev.ScalerReads)
	}
}
