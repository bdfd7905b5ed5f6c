package train_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/faster-training/faster/collective"
	"github.com/faster-training/faster/train"
)

// nanInput is toyData whose images from index from on hold a NaN pixel.
type nanInput struct {
	*train.Images
	from int
}

func (d nanInput) Fill(idx []int, x []float32, y []int) {
	d.Images.Fill(idx, x, y)
	n := d.C * d.H * d.W
	for j, i := range idx {
		if i >= d.from {
			x[j*n+5] = float32(math.NaN())
		}
	}
}

// A non-finite loss stops training with an error that names the step and
// the first layer whose output is not finite (torch's anomaly mode), not a
// run that goes on and reports accuracy.
func TestNonFiniteLossStops(t *testing.T) {
	// DeviceReference: the same report from a device state.
	for _, b := range append(backends(t), train.NewDeviceReference(train.BackendOptions{Threads: 1})) {
		t.Run(b.Name(), func(t *testing.T) {
			newTrainer := func(lr float64) (*train.Trainer, *train.Sequential) {
				net, err := train.NewThinNet(b, toyNet, 1)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(net.Close)
				tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9}, train.Constant(lr), 16, 1)
				t.Cleanup(tr.Close)
				return tr, net
			}
			ctx := context.Background()

			// A scale of the last BatchNorm (layer 7: four times conv with
			// its ReLU fused, bn) is NaN from the start. (oneDNN's ReLU turns NaN
			// into 0, so an earlier NaN may vanish on its way.)
			tr, net := newTrainer(0.01)
			for _, p := range net.Params() {
				if p.Name == "features.3.bn.weight" {
					p.Value[1] = float32(math.NaN())
				}
			}
			_, err := tr.TrainEpoch(ctx, toyData(64, 2), nil)
			if !errors.Is(err, train.ErrNonFinite) {
				t.Fatalf("NaN weight: got %v, want ErrNonFinite", err)
			}
			for _, want := range []string{"epoch 1 step 1", "layer 7 features.3.bn (BatchNorm2D)", "parameters not finite: features.3.bn.weight"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if tr.Step != 0 {
				t.Errorf("the failed step counted: at step %d", tr.Step)
			}

			// NaN in the data from the third batch on.
			tr, _ = newTrainer(0.01)
			_, err = tr.TrainEpoch(ctx, nanInput{toyData(64, 2), 0}, nil)
			if !errors.Is(err, train.ErrNonFinite) || !strings.Contains(err.Error(), "the input batch") {
				t.Fatalf("NaN input: got %v, want ErrNonFinite naming the input batch", err)
			}

			// A learning rate that makes the weights diverge.
			tr, _ = newTrainer(1e30)
			var steps int
			_, err = tr.TrainEpoch(ctx, toyData(64, 2), func(train.StepResult) error { steps++; return nil })
			if !errors.Is(err, train.ErrNonFinite) || !strings.Contains(err.Error(), "learning rate 1e+30") {
				t.Fatalf("lr 1e30: got %v after %d steps, want ErrNonFinite", err, steps)
			}
		})
	}
}

// A checkpoint records its model's class count: loading it into a model
// of another count is ErrClasses, not a tensor-by-tensor mismatch.
func TestCheckpointClasses(t *testing.T) {
	b := train.NewReference(train.BackendOptions{})
	defer b.Close()
	path := filepath.Join(t.TempDir(), "ckpt")
	mk := func(classes int) *train.Trainer {
		cfg := toyNet
		cfg.Classes = classes
		net, err := train.NewThinNet(b, cfg, 1)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(net.Close)
		tr := train.NewTrainer(b, net, &train.SGD{}, train.Constant(0.01), 16, 1)
		tr.Classes = classes
		t.Cleanup(tr.Close)
		return tr
	}
	if err := mk(3).SaveCheckpoint(path); err != nil {
		t.Fatal(err)
	}
	err := mk(5).LoadCheckpoint(path)
	if !errors.Is(err, train.ErrClasses) || !errors.Is(err, train.ErrCheckpoint) || !strings.Contains(err.Error(), "3 classes, this one has 5") {
		t.Fatalf("3-class checkpoint into a 5-class model: %v", err)
	}
	if err := mk(3).LoadCheckpoint(path); err != nil {
		t.Fatal(err)
	}
}

// fp16 training with a GradScaler resumed from a mid-epoch checkpoint,
// into a fresh trainer with a fresh scaler, ends bit for bit where the
// uninterrupted run ends: the scaler's state is in the checkpoint — on
// each registered backend, and on the device reference, whose state
// keeps the scaler on its device (ScalerState) between the trainer's
// reads.
func TestCheckpointResumeFP16(t *testing.T) {
	o := train.BackendOptions{Threads: 2, Precision: train.Float16}
	backends := map[string]func() (train.Backend, error){
		"reference-device": func() (train.Backend, error) { return train.NewDeviceReference(o), nil },
	}
	for _, name := range train.Backends() {
		backends[name] = func() (train.Backend, error) { return train.Open(name, o) }
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			b, err := open()
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			data := toyData(96, 4)
			newTrainer := func(seed uint64, scaler *train.GradScaler) *train.Trainer {
				net, err := train.NewThinNet(b, toyNet, seed)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(net.Close)
				tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9}, train.Constant(0.02), 16, 9)
				tr.Scaler = scaler
				t.Cleanup(tr.Close)
				return tr
			}
			// A scale that overflows fp16 at first (skipped steps, backoff)
			// and grows every other step: its state changes all along.
			scaler := func() *train.GradScaler {
				s := train.NewGradScaler()
				s.Scale, s.GrowthInterval = 1<<24, 2
				return s
			}
			ctx := context.Background()
			straight := newTrainer(1, scaler())
			for range 2 {
				if _, err := straight.TrainEpoch(ctx, data, nil); err != nil {
					t.Fatal(err)
				}
			}
			if straight.Scaler.Skipped == 0 {
				t.Fatal("no step skipped: the test does not exercise the scaler")
			}
			path := filepath.Join(t.TempDir(), "ckpt")
			// Stopped while the scale still backs off from overflows.
			first := newTrainer(1, scaler())
			if _, err := first.TrainEpoch(ctx, data, func(r train.StepResult) error {
				if r.Step == 2 {
					return train.ErrStop
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if err := first.SaveCheckpoint(path); err != nil {
				t.Fatal(err)
			}
			resumed := newTrainer(77, train.NewGradScaler()) // torch's defaults: all state must come from the file
			if err := resumed.LoadCheckpoint(path); err != nil {
				t.Fatal(err)
			}
			for resumed.Epoch < 2 {
				if _, err := resumed.TrainEpoch(ctx, data, nil); err != nil {
					t.Fatal(err)
				}
			}
			if *resumed.Scaler != *straight.Scaler {
				t.Errorf("scaler %+v after resume, %+v straight", *resumed.Scaler, *straight.Scaler)
			}
			want, got := weights(straight.Net), weights(resumed.Net)
			for i := range want {
				if !slices.Equal(got[i], want[i]) {
					t.Fatalf("tensor %d differs after resume", i)
				}
			}
		})
	}
}

// With SyncBN over replicas (DP) and over ranks (DDP) a non-finite loss
// stops every device with ErrNonFinite: the diagnosis pass, which runs on
// one device, does not wait in a SyncBN all-reduce for the others.
func TestNonFiniteStopsParallel(t *testing.T) {
	b := train.NewReference(train.BackendOptions{})
	defer b.Close()
	poison := func(net train.Layer) {
		for _, p := range net.Params() {
			if p.Name == "features.3.bn.weight" {
				p.Value[0] = float32(math.NaN())
			}
		}
	}
	newNet := func(seed uint64) *train.Sequential {
		net, err := train.NewThinNet(b, toyNet, seed)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(net.Close)
		return net
	}
	ctx := context.Background()

	// DP: two devices in one process, SyncBN between them.
	comms := collective.NewLocal(2)
	net := newNet(1)
	train.SyncBatchNorm(net, comms[0].AllReduceF64)
	tr := train.NewTrainer(b, net, &train.SGD{}, train.Constant(0.01), 16, 1)
	defer tr.Close()
	replica := newNet(2)
	train.SyncBatchNorm(replica, comms[1].AllReduceF64)
	if err := tr.AddReplica(b, replica); err != nil {
		t.Fatal(err)
	}
	poison(net) // the replica shares the weights' memory
	if _, err := tr.TrainEpoch(ctx, toyData(64, 2), nil); !errors.Is(err, train.ErrNonFinite) {
		t.Errorf("dp with SyncBN: %v, want ErrNonFinite", err)
	}

	// DDP: two ranks on a local group, SyncBN across them.
	comms = collective.NewLocal(2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		net := newNet(uint64(1 + r))
		poison(net)
		train.SyncBatchNorm(net, comms[r].AllReduceF64)
		tr := train.NewTrainer(b, net, &train.SGD{}, train.Constant(0.01), 16, 1)
		defer tr.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[r] = tr.Distribute(comms[r], 1024); errs[r] == nil {
				_, errs[r] = tr.TrainEpoch(ctx, toyData(64, 2), nil)
			}
			if !errors.Is(errs[r], train.ErrNonFinite) {
				comms[r].Close() // the other rank fails instead of waiting
			}
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if !errors.Is(err, train.ErrNonFinite) || !strings.Contains(err.Error(), "epoch 1 step 1") {
			t.Errorf("ddp rank %d: %v, want ErrNonFinite at step 1", r, err)
		}
	}
	for _, c := range comms {
		c.Close()
	}
}
