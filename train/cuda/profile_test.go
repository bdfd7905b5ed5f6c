//go:build cgo

package cuda

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/traintest"
)

// A profile counts every call the steps queue, by op: one fused SGD step,
// one loss and one sum a step, every convolution in its three directions
// a step; its steps run eagerly even with CaptureStep; it changes nothing
// the steps compute; and StopProfile gives the backend its machine back
// (the next run captures again).
func TestTwinProfile(t *testing.T) {
	const steps = 64 / 16 // trainRunWith's data over its batch, one epoch
	setup := func(tr *train.Trainer) { tr.CaptureStep, tr.EMA = true, nil }
	want := trainRunWith(t, twinBackend(t), 1, "", "", setup)
	b := twinBackend(t)
	if err := b.StartProfile(); err != nil {
		t.Fatal(err)
	}
	if err := b.StartProfile(); err == nil {
		t.Error("a second StartProfile while one runs: no error")
	}
	got := trainRunWith(t, b, 1, "", "", setup)
	p, err := b.StopProfile()
	if err != nil {
		t.Fatal(err)
	}
	near(t, "weights", got.weights, want.weights, 0)
	if e, c, r := b.StepRuns(); e != steps || c != 0 || r != 0 {
		t.Errorf("profiled steps ran %d eager, %d captured, %d replayed; want all %d eager", e, c, r, steps)
	}
	byOp := map[string]train.ProfileRow{}
	calls, kinds := 0, map[string]int{}
	for _, r := range p.Rows {
		byOp[r.Op] = r
		calls += r.Calls
		kinds[r.Kind] += r.Calls
		if r.Ms < 0 {
			t.Errorf("%s: %v ms", r.Op, r.Ms)
		}
	}
	if calls != p.Calls || p.BusyMs < 0 || p.GapMs < 0 {
		t.Errorf("rows count %d calls, the profile %d; busy %v ms, gaps %v ms", calls, p.Calls, p.BusyMs, p.GapMs)
	}
	for _, op := range []string{"kernel sgd_lr", "kernel ce_loss", "kernel ce_sums"} {
		if byOp[op].Calls != steps {
			t.Errorf("%s: %d calls in %d steps, want one a step", op, byOp[op].Calls, steps)
		}
	}
	convs := 0
	for op, r := range byOp {
		if strings.HasPrefix(op, "conv ") {
			convs++
			if r.Calls%steps != 0 {
				t.Errorf("%s: %d calls in %d steps", op, r.Calls, steps)
			}
		}
	}
	if convs == 0 || kinds["copy"] == 0 || kinds["memset"] == 0 {
		t.Errorf("kinds %v (%d conv rows): want convolutions, copies and memsets counted", kinds, convs)
	}
	if _, err := b.StopProfile(); err == nil {
		t.Error("StopProfile without a profile: no error")
	}
	trainRunWith(t, b, 1, "", "", setup)
	if _, c, r := b.StepRuns(); c != 1 || r == 0 {
		t.Errorf("after the profile: %d captures, %d replays; want the steps captured again", c, r)
	}
	t.Logf("%d calls, busy %.3f ms, gaps %.3f ms; first rows %v", p.Calls, p.BusyMs, p.GapMs, p.Rows[:min(3, len(p.Rows))])
}

// Where our step's device time goes on the GPU (issue 37 §2, beside
// bench/gpu_where.py's for PyTorch): ThinNet at the study's batch 512 on
// 3×32×32 in fp16 with a GradScaler (the table's AMP cells) and in bf16,
// and ResNet-18 at 224, batch 128, in bf16 — each a warm-up epoch (the
// autotuned algorithms, the allocations), then an epoch profiled: a
// GPUPROF line per network with the step's calls, the device's busy and
// idle time and the wall time a step, and one per op among its ten
// largest. A figure, not a check (only the plumbing fails).
func TestGPUStepProfile(t *testing.T) {
	gpuBackend(t) // skips without a GPU
	report(t, "where a step's device time goes: each call timed by events (ThinNet fp16 and bf16 at batch 512, ResNet-18 bf16 at batch 128)")
	profileNets(t, func(o train.BackendOptions) *Backend { return openGPUFor(t, o, false) }, []profileNet{
		{"thinnet fp16+scaler", train.Float16, true, 512, 32, 8, thinNet, false},
		{"thinnet bf16", train.BFloat16, false, 512, 32, 8, thinNet, false},
		{"resnet18 bf16", train.BFloat16, false, 128, 224, 6, resNet18, false},
		{"resnet18 bf16 nhwc", train.BFloat16, false, 128, 224, 6, resNet18, true},
	})
}

// The GPU profile's flow on the twin, at toy sizes: a warm-up epoch, a
// profiled one, its lines; fp16 with a GradScaler and bf16 channels-last.
func TestTwinStepProfile(t *testing.T) {
	profileNets(t, func(o train.BackendOptions) *Backend { return twinWith(t, o) }, []profileNet{
		{"small thinnet fp16+scaler", train.Float16, true, 8, 16, 2, smallThinNet, false},
		{"small thinnet bf16 nhwc", train.BFloat16, false, 8, 16, 2, smallThinNet, true},
	})
}

func thinNet(b train.Backend) (train.Layer, error) {
	return train.NewThinNet(b, train.ThinNetConfig{InChannels: 3, Classes: 10}, 1)
}

func smallThinNet(b train.Backend) (train.Layer, error) {
	c := traintest.SmallThinNet()
	c.InChannels = 3
	return train.NewThinNet(b, c, 1)
}

func resNet18(b train.Backend) (train.Layer, error) {
	return train.NewResNet18(b, train.ResNetConfig{Classes: 10}, 1)
}

// profileNet is one network of a step profile.
type profileNet struct {
	name         string
	p            train.Precision
	scaler       bool
	batch, side  int
	steps        int
	build        func(train.Backend) (train.Layer, error)
	channelsLast bool
}

// profileNets trains each net a warm-up epoch of synthetic 3×side×side
// images, profiles the next and logs GPUPROF lines.
func profileNets(t *testing.T, open func(train.BackendOptions) *Backend, nets []profileNet) {
	for _, c := range nets {
		b := open(train.BackendOptions{Precision: c.p, Autotune: true, ChannelsLast: c.channelsLast})
		net, err := c.build(b)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(c.side), 2))
		n := c.batch * c.steps
		d := &train.Images{C: 3, H: c.side, W: c.side, Mean: 0.45, Std: 0.25, Pixels: make([]byte, n*3*c.side*c.side), Labels: make([]int, n)}
		for i := range d.Pixels {
			d.Pixels[i] = byte(rng.IntN(256))
		}
		for i := range d.Labels {
			d.Labels[i] = rng.IntN(10)
		}
		tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9, WeightDecay: 5e-4}, train.Constant(0.01), c.batch, 3)
		tr.LossEvery = 1 << 20 // read at the epoch's end only
		if c.scaler {
			tr.Scaler = train.NewGradScaler()
		}
		ctx := context.Background()
		if _, err := tr.TrainEpoch(ctx, d, nil); err != nil {
			t.Fatal(err)
		}
		if err := b.StartProfile(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := tr.TrainEpoch(ctx, d, nil); err != nil {
			t.Fatal(err)
		}
		wall := time.Since(start)
		p, err := b.StopProfile()
		if err != nil {
			t.Fatal(err)
		}
		tr.Close()
		net.Close()
		s := float64(c.steps)
		if p.Calls == 0 || len(p.Rows) == 0 {
			t.Fatalf("%s: a profile of no calls", c.name)
		}
		t.Logf("GPUPROF|%s|step|%.0f calls|busy %.3f ms|idle %.3f ms|wall %.3f ms (events included)", c.name,
			float64(p.Calls)/s, p.BusyMs/s, p.GapMs/s, float64(wall.Microseconds())/1e3/s)
		for _, r := range p.Rows[:min(10, len(p.Rows))] {
			t.Logf("GPUPROF|%s|%s|%.0f calls|%.3f ms|%.0f%% of busy", c.name, r.Op, float64(r.Calls)/s, r.Ms/s, 100*r.Ms/max(p.BusyMs, 1e-9))
		}
	}
}
