package fit_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/faster-training/faster/collective"
	"github.com/faster-training/faster/fit"
	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/cuda"
)

// deviceRun is a tiny run of cfg over IDX data in dir, its backends
// opened by open (nil: the registry's).
func deviceRun(t *testing.T, dir string, cfg fit.Config, open func(string, train.BackendOptions) (train.Backend, error)) (*fit.Summary, error) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ctx := context.Background()
	data, err := fit.OpenData(ctx, &cfg, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer data.Close()
	return fit.Run(ctx, cfg, data, nil, fit.Hooks{OpenBackend: open})
}

func tinyConfig(dir string) fit.Config {
	cfg := fit.DefaultConfig()
	cfg.Data.Path, cfg.Batch, cfg.Epochs, cfg.Seed = dir, 8, 2, 7
	cfg.Model.Backend, cfg.Model.Filters, cfg.Model.Threads = "reference", []int{4, 4, 4}, 1
	return cfg
}

// A whole fit on a device backend's state (DeviceReference, injected as
// the run's backend for --device cuda): the same weights and test
// figures as on the host path, single, DP and with zeroed gradients; the
// summary names the device; the training loss is read once per
// log_every steps and each evaluation reads its sums once.
func TestRunOnDeviceState(t *testing.T) {
	dir := t.TempDir()
	writeIDX(dir, 32) // 4 steps an epoch
	for _, c := range []struct {
		name  string
		setup func(*fit.Config)
	}{
		{"single", func(*fit.Config) {}},
		{"dp", func(c *fit.Config) { c.Parallel.Strategy, c.Parallel.Devices = "dp", 2 }},
		{"zero-grad-ema", func(c *fit.Config) { c.Parallel.ZeroGrad, c.Optim.EMA = true, 0.9 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			host := tinyConfig(dir)
			c.setup(&host)
			want, err := deviceRun(t, dir, host, nil)
			if err != nil {
				t.Fatal(err)
			}
			dev := host
			dev.Model.Backend, dev.Model.Device, dev.LogEvery = "", "cuda", 2
			var opened []*train.DeviceReference
			got, err := deviceRun(t, dir, dev, func(name string, o train.BackendOptions) (train.Backend, error) {
				if name != "cuda" || o.Device != "cuda:0" {
					t.Errorf("opened backend %q on %q, want cuda on cuda:0", name, o.Device)
				}
				b := train.NewDeviceReference(o)
				opened = append(opened, b)
				return b, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got.WeightsSHA256 != want.WeightsSHA256 || got.TestAccuracy != want.TestAccuracy || got.TestLoss != want.TestLoss {
				t.Fatalf("device state: weights %.8s test accuracy %v loss %v; host %.8s %v %v",
					got.WeightsSHA256, got.TestAccuracy, got.TestLoss, want.WeightsSHA256, want.TestAccuracy, want.TestLoss)
			}
			if got.Device != "reference-device" || want.Device != "cpu" || got.LossEvery != 2 || want.LossEvery != 1 {
				t.Errorf("devices %q and %q, loss read every %d and %d steps", got.Device, want.Device, got.LossEvery, want.LossEvery)
			}
			var text strings.Builder
			got.WriteText(&text, dev)
			if !strings.Contains(text.String(), "on reference-device on reference-device (") {
				t.Errorf("the summary's line does not name the device: %s", text.String())
			}
			if c.name == "single" {
				// 2 epochs × (4 steps / 2 + 1 evaluation)
				if r := opened[0].LossReads; r != 6 {
					t.Errorf("the loss was read %d times, want 6", r)
				}
			}
		})
	}
}

// --device: a bad name is named; a device no backend of this build runs
// on, a backend that does not run on it, and a device without memory
// for the step are ConfigErrors naming the device and the backend.
func TestRunDeviceErrors(t *testing.T) {
	dir := t.TempDir()
	writeIDX(dir, 32)
	for _, bad := range []string{"gpu", "cuda:-1", "cuda:x", "cuda:01", "CUDA"} {
		cfg := tinyConfig(dir)
		cfg.Model.Device = bad
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), "model.device") || !strings.Contains(err.Error(), bad) {
			t.Errorf("device %q: %v", bad, err)
		}
	}
	for _, d := range []string{"", "cpu", "cuda", "cuda:0", "cuda:3"} {
		if _, err := fit.ParseDevice(d); err != nil {
			t.Errorf("device %q: %v", d, err)
		}
	}
	var ce *fit.ConfigError
	cfg := tinyConfig(dir)
	cfg.Model.Backend, cfg.Model.Device = "", "cuda:1"
	if _, err := deviceRun(t, dir, cfg, func(name string, o train.BackendOptions) (train.Backend, error) {
		return train.Open("no-such-"+name, o) // the cuda backend not in the build
	}); !errors.As(err, &ce) || !strings.Contains(err.Error(), `model.device: cuda:1: backend "cuda" is not in this build`) {
		t.Errorf("no cuda backend: %v", err)
	}
	cfg.Model.Backend = "reference"
	if _, err := deviceRun(t, dir, cfg, nil); !errors.As(err, &ce) || !strings.Contains(err.Error(), `model.device: cuda:1: backend "reference" runs on the cpu`) {
		t.Errorf("reference on cuda:1: %v", err)
	}
	cfg.Model.Backend = ""
	noDriver := errors.New("no driver: tried libcuda.so.1")
	if _, err := deviceRun(t, dir, cfg, func(string, train.BackendOptions) (train.Backend, error) { return nil, noDriver }); !errors.Is(err, noDriver) ||
		errors.As(err, &ce) || !strings.Contains(err.Error(), `device cuda:1: backend "cuda": no driver`) {
		t.Errorf("no driver: %v", err)
	}
	_, err := deviceRun(t, dir, cfg, func(_ string, o train.BackendOptions) (train.Backend, error) {
		b := train.NewDeviceReference(o)
		b.Budget = 1000 // bytes
		return b, nil
	})
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "free on reference-device") {
		t.Errorf("a step above the device's memory: %v", err)
	}
}

// DDP ranks of a whole fit on device states (gradient tensors summed
// through host memory, the evaluation on the device) end with the host
// path's weights and test figures on every rank.
func TestRunDDPOnDeviceState(t *testing.T) {
	dir := t.TempDir()
	writeIDX(dir, 32)
	cfg := tinyConfig(dir)
	cfg.Parallel.Strategy = "ddp"
	ddp := func(open func(string, train.BackendOptions) (train.Backend, error), device string) []*fit.Summary {
		c := cfg
		if device != "" {
			c.Model.Backend, c.Model.Device = "", device
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		comms := collective.NewLocal(2)
		sums, errs := make([]*fit.Summary, 2), make([]error, 2)
		var wg sync.WaitGroup
		for r := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer comms[r].Close()
				rc := c
				data, err := fit.OpenData(context.Background(), &rc, r, 2)
				if err != nil {
					errs[r] = err
					return
				}
				defer data.Close()
				sums[r], errs[r] = fit.Run(context.Background(), rc, data, comms[r], fit.Hooks{OpenBackend: open})
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		return sums
	}
	want := ddp(nil, "")
	got := ddp(func(_ string, o train.BackendOptions) (train.Backend, error) { return train.NewDeviceReference(o), nil }, "cuda")
	for r := range 2 {
		if got[r].WeightsSHA256 != want[r].WeightsSHA256 || got[r].TestAccuracy != want[r].TestAccuracy || got[r].TestLoss != want[r].TestLoss || got[r].Device != "reference-device" {
			t.Fatalf("rank %d on %s: %.8s %v %v; host %.8s %v %v", r, got[r].Device, got[r].WeightsSHA256, got[r].TestAccuracy, got[r].TestLoss,
				want[r].WeightsSHA256, want[r].TestAccuracy, want[r].TestLoss)
		}
	}
}

// The cuda backend over its CPU twin (cuda.OpenTwin: the backend's own
// state, kernels and loss in host memory), injected for --device cuda:
// a whole fit, single and DP, to the host path's test accuracy.
func TestRunOnCUDATwin(t *testing.T) {
	dir := t.TempDir()
	writeIDX(dir, 32)
	for _, strategy := range []string{"single", "dp"} {
		host := tinyConfig(dir)
		host.Parallel.Strategy = strategy
		want, err := deviceRun(t, dir, host, nil)
		if err != nil {
			t.Fatal(err)
		}
		dev := host
		dev.Model.Backend, dev.Model.Device = "", "cuda"
		got, err := deviceRun(t, dir, dev, func(_ string, o train.BackendOptions) (train.Backend, error) { return cuda.OpenTwin(o) })
		if errors.Is(err, cuda.ErrNoCgo) {
			t.Skip("the twin needs cgo")
		}
		if err != nil {
			t.Fatal(err)
		}
		if got.TestAccuracy != want.TestAccuracy || got.Device != "cuda-twin" {
			t.Errorf("%s on %s: test accuracy %v loss %v; host %v %v", strategy, got.Device, got.TestAccuracy, got.TestLoss, want.TestAccuracy, want.TestLoss)
		}
		t.Logf("%s: twin %.8s loss %.6f, host %.8s loss %.6f", strategy, got.WeightsSHA256, got.TestLoss, want.WeightsSHA256, want.TestLoss)
	}
}

// Whole fits on the twin with parallel.cuda_graph (each step a captured
// graph, replayed) end with the weights of the same fits without it, bit
// for bit, over three epochs, fp32 and AMP fp16 (its GradScaler's
// skipped steps decided on the device); a backend without a
// StepCapturer is refused naming it, and a strategy other than single
// by Validate.
func TestRunOnCUDATwinGraph(t *testing.T) {
	dir := t.TempDir()
	writeIDX(dir, 32)
	ref := tinyConfig(dir)
	ref.Parallel.CUDAGraph = true
	var ce *fit.ConfigError
	if _, err := deviceRun(t, dir, ref, nil); !errors.As(err, &ce) || !strings.Contains(err.Error(), `"reference"`) || !strings.Contains(err.Error(), "parallel.cuda_graph") {
		t.Errorf("reference with cuda_graph: %v; want a ConfigError of parallel.cuda_graph naming the backend", err)
	}
	dp := tinyConfig(dir)
	dp.Parallel.CUDAGraph, dp.Parallel.Strategy = true, "dp"
	if err := dp.Validate(); err == nil || !strings.Contains(err.Error(), "parallel.cuda_graph") {
		t.Errorf("dp with cuda_graph: %v; want a problem of parallel.cuda_graph", err)
	}
	twin := func(_ string, o train.BackendOptions) (train.Backend, error) { return cuda.OpenTwin(o) }
	for _, amp := range []bool{false, true} {
		cfg := tinyConfig(dir)
		cfg.Epochs = 3
		cfg.Model.Backend, cfg.Model.Device = "", "cuda"
		cfg.Parallel.AMP, cfg.Parallel.AMPDtype = amp, "fp16"
		want, err := deviceRun(t, dir, cfg, twin)
		if errors.Is(err, cuda.ErrNoCgo) {
			t.Skip("the twin needs cgo")
		}
		if err != nil {
			t.Fatal(err)
		}
		cfg.Parallel.CUDAGraph = true
		got, err := deviceRun(t, dir, cfg, twin)
		if err != nil {
			t.Fatal(err)
		}
		if got.WeightsSHA256 != want.WeightsSHA256 || got.TestLoss != want.TestLoss || got.SkippedSteps != want.SkippedSteps || !got.CUDAGraph {
			t.Errorf("amp %v: graph %.12s loss %v skipped %d (cuda_graph %v); eager %.12s %v %d", amp, got.WeightsSHA256, got.TestLoss, got.SkippedSteps, got.CUDAGraph, want.WeightsSHA256, want.TestLoss, want.SkippedSteps)
		}
		if g := got.GraphSteps; g == nil || g.Replayed == 0 || g.Captured == 0 || g.Refused != "" || want.GraphSteps != nil {
			t.Errorf("amp %v: graph steps %+v (without cuda_graph %+v); want replayed steps, no refusal, and none without", amp, g, want.GraphSteps)
		}
		// A device that refuses the capture: the same weights, the steps
		// eager, the summary and its text saying why.
		refusing := func(_ string, o train.BackendOptions) (train.Backend, error) {
			return cuda.OpenTwinRefusing(o, "kernel sgd_lr")
		}
		if amp {
			refusing = func(_ string, o train.BackendOptions) (train.Backend, error) { return cuda.OpenTwinRefusing(o, "end") }
		}
		ref, err := deviceRun(t, dir, cfg, refusing)
		if err != nil {
			t.Fatal(err)
		}
		g := ref.GraphSteps
		if ref.WeightsSHA256 != want.WeightsSHA256 || g == nil || g.Refused == "" || !g.GaveUp || g.Refusals != 2 || g.Replayed+g.Captured != 0 || g.Eager != got.GraphSteps.Eager+got.GraphSteps.Captured+got.GraphSteps.Replayed {
			t.Errorf("amp %v, capture refused: weights %.12s (eager %.12s), graph steps %+v; want the eager weights, every step eager, the refusal", amp, ref.WeightsSHA256, want.WeightsSHA256, g)
		}
		var text strings.Builder
		ref.WriteText(&text, cfg)
		if !strings.Contains(text.String(), "the device refused to capture the step 2 times") || !strings.Contains(text.String(), "0 steps replayed") {
			t.Errorf("amp %v: the report does not say the capture was refused:\n%s", amp, text.String())
		}
		t.Logf("amp %v: %.12s, %d skipped; refused: %s", amp, got.WeightsSHA256, got.SkippedSteps, g.Refused)
	}
}

// parallel.profile on the twin: the last epoch's steps timed by op in the
// summary (one SGD step and one loss a step, the steps' count), the
// run's weights those of the same run without it (the profiled epoch
// runs eagerly, with cuda_graph too), and its text report; a backend
// that cannot time its device is refused naming it.
func TestRunOnCUDATwinProfile(t *testing.T) {
	dir := t.TempDir()
	writeIDX(dir, 32)
	ref := tinyConfig(dir)
	ref.Parallel.Profile = true
	var ce *fit.ConfigError
	if _, err := deviceRun(t, dir, ref, nil); !errors.As(err, &ce) || !strings.Contains(err.Error(), `"reference"`) || !strings.Contains(err.Error(), "parallel.profile") {
		t.Errorf("reference with profile: %v; want a ConfigError of parallel.profile naming the backend", err)
	}
	twin := func(_ string, o train.BackendOptions) (train.Backend, error) { return cuda.OpenTwin(o) }
	cfg := tinyConfig(dir)
	cfg.Epochs = 2
	cfg.Model.Backend, cfg.Model.Device = "", "cuda"
	cfg.Parallel.CUDAGraph = true
	want, err := deviceRun(t, dir, cfg, twin)
	if errors.Is(err, cuda.ErrNoCgo) {
		t.Skip("the twin needs cgo")
	}
	if err != nil {
		t.Fatal(err)
	}
	cfg.Parallel.Profile = true
	got, err := deviceRun(t, dir, cfg, twin)
	if err != nil {
		t.Fatal(err)
	}
	if got.WeightsSHA256 != want.WeightsSHA256 || want.Profile != nil {
		t.Errorf("profiled %.12s, not %.12s (profile without asking: %v)", got.WeightsSHA256, want.WeightsSHA256, want.Profile)
	}
	p := got.Profile
	if p == nil {
		t.Fatal("no profile in the summary")
	}
	steps := 32 / cfg.Batch
	calls := map[string]int{}
	for _, r := range p.Rows {
		calls[r.Op] = r.Calls
	}
	if p.Epoch != 2 || p.Steps != steps || calls["kernel sgd_lr"] != steps || calls["kernel ce_loss"] != steps || p.BusyMs <= 0 || p.CallsPer <= 0 {
		t.Errorf("profile epoch %d, %d steps (want 2, %d), sgd_lr %d and ce_loss %d calls, busy %v ms, %v calls a step",
			p.Epoch, p.Steps, steps, calls["kernel sgd_lr"], calls["kernel ce_loss"], p.BusyMs, p.CallsPer)
	}
	var text strings.Builder
	got.WriteText(&text, cfg)
	if !strings.Contains(text.String(), "profile of epoch 2") || !strings.Contains(text.String(), "kernel") {
		t.Errorf("report without the profile:\n%s", text.String())
	}
}

// countingBackend is the reference backend counting host copies as a GPU
// backend's pinned staging would.
type countingBackend struct {
	train.Backend
	c train.HostCopies
}

func (b countingBackend) HostCopies() train.HostCopies { return b.c }

// A backend that counts its copies from host memory (train.HostCopyReporter)
// has them in the summary's host_copies; one that staged nothing through
// pinned memory, and every other backend, has none.
func TestSummaryHostCopies(t *testing.T) {
	dir := t.TempDir()
	writeIDX(dir, 16)
	for _, c := range []train.HostCopies{{Staged: 7, InPlace: 2, Direct: 1}, {Direct: 5}, {Direct: 5, Unpinned: "no page-locked memory"}} {
		sum, err := deviceRun(t, dir, tinyConfig(dir), func(_ string, o train.BackendOptions) (train.Backend, error) {
			return countingBackend{train.NewReference(o), c}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		pinned := c.Staged+c.InPlace > 0 || c.Unpinned != ""
		if (sum.HostCopies != nil) != pinned || pinned && *sum.HostCopies != c {
			t.Errorf("copies %+v: summary's host_copies %+v", c, sum.HostCopies)
		}
		b, _ := json.Marshal(sum)
		if strings.Contains(string(b), `"host_copies"`) != pinned {
			t.Errorf("copies %+v: JSON %s", c, b)
		}
	}
	sum, err := deviceRun(t, dir, tinyConfig(dir), nil)
	if err != nil || sum.HostCopies != nil {
		t.Fatalf("reference: %v, host_copies %+v", err, sum.HostCopies)
	}
}
