//go:build cgo

package cuda

// The cuda backend on the GPU, PREPARED and NOT YET RUN on one: the
// conformance suites, the fixed-seed training run against the twin, the
// state, loss and input ops. Skipped without a driver, failed under
// FASTER_REQUIRE_GPU=1 (gpucheck.sh sets it). Each test prints a
// "GPUBACKEND|…" line that gpucheck.sh tabulates.

import (
	"errors"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/traintest"
)

// gpuBackend opens the backend on device 0 with strict fp32 convolutions
// (CUDNN_FMA_MATH: the suites' tolerances are fp32's), or skips.
func gpuBackend(t *testing.T) *Backend { return openGPUFor(t, train.BackendOptions{}, true) }

func openGPUFor(t testing.TB, o train.BackendOptions, strict bool) *Backend {
	t.Helper()
	n, err := checkOptions(o)
	if err == nil {
		var m *gpuMachine
		if m, err = openGPU(n, o); err == nil {
			if strict {
				m.math = cudnnFMAMath
			}
			b := newBackend(m, o)
			t.Cleanup(func() { b.Close() })
			return b
		}
	}
	if v := os.Getenv("FASTER_REQUIRE_GPU"); v != "" && v != "0" {
		t.Fatalf("FASTER_REQUIRE_GPU=1 and the cuda backend does not open: %v", err)
	}
	t.Skipf("no GPU: %v", err)
	return nil
}

func report(t *testing.T, what string) {
	t.Cleanup(func() {
		verdict := "ok"
		if t.Failed() {
			verdict = "FAIL"
		}
		t.Logf("GPUBACKEND|%s|%s", what, verdict)
	})
}

func TestGPUBackendLayers(t *testing.T) {
	b := gpuBackend(t)
	report(t, "traintest.RunLayers (every layer: finite differences, the reference at 1e-4)")
	traintest.RunLayers(t, b)
}

func TestGPUBackendTorchStep(t *testing.T) {
	b := gpuBackend(t)
	report(t, "traintest.RunTorchStep (PyTorch's recorded ThinNet steps)")
	traintest.RunTorchStep(t, b)
}

func TestGPUBackendResNet18(t *testing.T) {
	b := gpuBackend(t)
	report(t, "traintest.RunResNet18 (a step against the reference)")
	traintest.RunResNet18(t, b)
}

// Native bf16 and fp16: cuDNN's 16-bit tensors with float compute and
// tensor-op math, cublasGemmEx; against the twin's same arithmetic
// (nativeAgainst: one 16-bit ulp for convolutions).
func TestGPUBackendPrecision(t *testing.T) {
	gpuBackend(t) // skips without a GPU
	report(t, "native bf16/fp16 (cuDNN 16-bit tensors, cublasGemmEx) against the twin")
	for _, p := range []train.Precision{train.BFloat16, train.Float16} {
		nativeAgainst(t, openGPUFor(t, train.BackendOptions{Precision: p}, false), p)
	}
}

// traintest.RunPrecision on the GPU (as TestTwinPrecision): 16-bit
// convolution outputs against the reference's rounded to the precision,
// the float32 backend in strict fp32 (no TF32).
func TestGPUBackendRunPrecision(t *testing.T) {
	gpuBackend(t) // skips without a GPU
	report(t, "traintest.RunPrecision (16-bit convolution outputs: the reference's rounded, one unit of the last place)")
	traintest.RunPrecision(t, func(o train.BackendOptions) (train.Backend, error) { return openGPUFor(t, o, true), nil })
}

// cudnn.benchmark: the choices name algorithms that ran, a shape is
// chosen once, and results match the heuristics' algorithms.
func TestGPUBackendAutotune(t *testing.T) {
	gpuBackend(t) // skips without a GPU
	report(t, "traintest.RunAutotune (cudnnFind…AlgorithmEx)")
	traintest.RunAutotune(t, func(o train.BackendOptions) (train.Backend, error) {
		n, err := checkOptions(o)
		if err != nil {
			return nil, err
		}
		m, err := openGPU(n, o)
		if err != nil {
			return nil, err
		}
		m.math = cudnnFMAMath
		return newBackend(m, o), nil
	})
}

func TestGPUBackendState(t *testing.T) {
	gpuBackend(t) // skips without a GPU
	report(t, "State against the host's SGD, unscale, finite checks, EMA")
	stateMatchesHost(t, gpuBackend)
}

func TestGPUBackendLoss(t *testing.T) {
	b := gpuBackend(t)
	report(t, "loss against CrossEntropy")
	lossMatchesReference(t, b)
}

func TestGPUBackendByteInput(t *testing.T) {
	b := gpuBackend(t)
	report(t, "normalize_u8 bit-identical to NormalizeHWC")
	byteInputMatchesHost(t, b)
}

// Rows in device memory (a decode stage's batches: U8 read in place by
// normalize_u8, F32 copied device to device, the copy's end waited for
// with an event) train on the GPU as the same batches from host floats,
// with the feeder's overlap and with the step captured.
func TestGPUBackendDeviceRows(t *testing.T) {
	gpuBackend(t) // skips without a GPU
	run := func(t *testing.T, rows, f32, capture bool) outcome {
		b := openGPUFor(t, train.BackendOptions{}, true)
		var stream func(*train.Trainer, *train.Images) train.Stream
		if rows {
			stream = func(tr *train.Trainer, d *train.Images) train.Stream { return newRows(t, tr, d, f32, b.m) }
		}
		return trainRunStream(t, b, 2, "", "", func(tr *train.Trainer) { tr.CaptureStep = capture }, stream)
	}
	for _, c := range []struct {
		name         string
		f32, capture bool
	}{{"u8", false, false}, {"f32", true, false}, {"u8 captured", false, true}} {
		t.Run(c.name, func(t *testing.T) {
			report(t, "8 steps on device rows ("+c.name+") against host floats at 1e-3")
			want := run(t, false, false, c.capture)
			got := run(t, true, c.f32, c.capture)
			nearLosses(t, got.losses, want.losses, gpuTrainTol)
			near(t, "weights", got.weights, want.weights, gpuTrainTol)
		})
	}
}

// gpuTrainTol bounds the GPU's drift from the twin over 8 steps: cuDNN
// and cuBLAS accumulate in float32 where the twin accumulates in double.
const gpuTrainTol = 1e-3

// The fixed-seed Trainer run on the GPU (heuristic algorithms; then
// cudnn.benchmark's measured ones) against the twin.
func TestGPUBackendTrainsLikeTwin(t *testing.T) {
	gpuBackend(t) // skips without a GPU
	want := trainRun(t, twinBackend(t), 2, "", "")
	for _, c := range []struct {
		name string
		o    train.BackendOptions
	}{{"heuristics", train.BackendOptions{}}, {"autotune", train.BackendOptions{Autotune: true}}} {
		t.Run(c.name, func(t *testing.T) {
			report(t, "8 Trainer steps against the twin at 1e-3, "+c.name)
			got := trainRun(t, openGPUFor(t, c.o, true), 2, "", "")
			if !got.bound {
				t.Fatal("the parameters were never bound to a device state")
			}
			nearLosses(t, got.losses, want.losses, gpuTrainTol)
			near(t, "weights", got.weights, want.weights, gpuTrainTol)
			near(t, "momentum", got.velocity, want.velocity, gpuTrainTol)
			near(t, "EMA", got.ema, want.ema, gpuTrainTol)
		})
	}
}

// train.Sequential's pairs on the GPU (16-bit values passed between a
// convolution and a BatchNorm, a ReLU folded into the BatchNorm before
// it): bf16 and fp16, ThinNet and a small ResNet-18, eager, against the
// same run with the ops apart on the GPU and the paired run on the twin,
// within ampTol (cuDNN's float accumulation and algorithms).
func TestGPUBackendPairs(t *testing.T) {
	gpuBackend(t) // skips without a GPU
	report(t, "paired conv/BN/ReLU (16-bit hand-off, folded ReLU) against apart and the twin, bf16 and fp16, channels-first and -last")
	for _, p := range []train.Precision{train.BFloat16, train.Float16} {
		for _, net := range pairNets {
			for _, last := range []bool{false, true} {
				name := fmt.Sprintf("%s %s channels-last=%v", p, net.name, last)
				o := train.BackendOptions{Precision: p, ChannelsLast: last}
				paired := pairRun(t, openGPUFor(t, o, true), net.build, false, false)
				pairsAgree(t, name+" apart", paired, pairRun(t, openGPUFor(t, o, true), net.build, false, true), ampTol)
				pairsAgree(t, name+" twin", paired, pairRun(t, twinWith(t, o), net.build, false, false), ampTol)
			}
		}
	}
}

// With TF32 allowed (the registered backend's default, PyTorch's
// cudnn.allow_tf32), the run stays near the twin's: TF32 keeps 10 bits of
// mantissa, so the bound is 2e-2; the largest relative deviation is
// logged.
func TestGPUBackendTF32(t *testing.T) {
	gpuBackend(t) // skips without a GPU
	want := trainRun(t, twinBackend(t), 2, "", "")
	report(t, "8 Trainer steps with TF32 convolutions against the twin at 2e-2")
	got := trainRun(t, openGPUFor(t, train.BackendOptions{}, false), 2, "", "")
	worst := 0.0
	for i := range want.losses {
		worst = math.Max(worst, math.Abs(got.losses[i]-want.losses[i])/math.Max(1, want.losses[i]))
	}
	t.Logf("GPUBACKEND|TF32 largest loss deviation %.3g|info", worst)
	nearLosses(t, got.losses, want.losses, 2e-2)
	near(t, "weights", got.weights, want.weights, 2e-2)
}

// The registered name opens the GPU, names it, and reports its memory.
func TestGPUBackendRegistered(t *testing.T) {
	gpuBackend(t) // skips without a GPU
	report(t, `train.Open("cuda"): device cuda:0, a memory budget`)
	b, err := train.Open("cuda", train.BackendOptions{Device: "cuda:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	n, ok, err := train.MemoryBudget(b)
	if train.DeviceOf(b) != "cuda:0" || !ok || err != nil || n <= 0 {
		t.Errorf("device %q, budget %d %v %v", train.DeviceOf(b), n, ok, err)
	}
	t.Logf("GPUBACKEND|memory budget %d MiB|info", n>>20)
}

// The step as a CUDA graph on the GPU (stream capture, instantiate,
// launch): fp32 and fp16 steps through RunStep, eager, captured and
// replayed, against eager steps on the same device (within 1e-5: cuDNN may
// choose algorithms that sum in a run-dependent order), a new key
// re-captured; then a read back inside the captured region refused.
func TestGPUBackendStepCapture(t *testing.T) {
	gpuBackend(t) // skips without a GPU
	report(t, "the step as a CUDA graph: replays match eager steps, re-capture on a new shape, host reads refused")
	stepCapture(t, func(o train.BackendOptions) *Backend { return openGPUFor(t, o, true) }, 1e-5)
	b := gpuBackend(t)
	n := newTinyNet(t, b)
	step := func(s int) func() error {
		return func() error {
			if err := n.step(s, 4); err != nil {
				return err
			}
			_, err := n.loss.Sums()
			return err
		}
	}
	if _, err := b.RunStep("k", step(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.RunStep("k", step(1)); !errors.Is(err, errHostRead) {
		t.Fatalf("a read inside the captured step: %v, want errHostRead", err)
	}
	if run, err := b.RunStep("k", func() error { return n.step(2, 4) }); err != nil || run != train.StepEager {
		t.Fatalf("after the refusal: %v %v, want an eager step", run, err)
	}
}

// train.Trainer with CaptureStep on the GPU (TestTwinTrainerCapture's
// plan: three epochs, fp32 and fp16 with skipped steps, each epoch
// warmed, captured and replayed) against the same run without it on the
// same device, within 1e-4 (cuDNN's run-dependent summation orders over
// twelve steps).
func TestGPUBackendTrainerCapture(t *testing.T) {
	gpuBackend(t) // skips without a GPU
	report(t, "the Trainer's step as a CUDA graph: whole runs as without capture, skipped fp16 steps decided on the device")
	trainerCapture(t, func(o train.BackendOptions) *Backend { return openGPUFor(t, o, true) }, 1e-4)
}

// DDP at world size 1 on the GPU's backend (as OpenBackend returns it):
// the trainer's gradient buckets summed by the backend's own all-reduce,
// NCCL over one rank, ending with the single-device run's weights (a sum
// over one rank leaves them as they are); ZeroGrad on the device too.
func TestGPUBackendDDPNCCL(t *testing.T) {
	gpuBackend(t) // skips without a GPU
	report(t, "DDP at world size 1 through train.AllReduceBackend (NCCL), ZeroGrad on the device: the single run's weights")
	ddpOneRank(t, openGPUFor(t, train.BackendOptions{}, true), &ncclBackend{openGPUFor(t, train.BackendOptions{}, true)}, 1e-5)
}

// NCCL at world size 1 on the backend's stream: ncclGetUniqueId,
// ncclCommInitRank with the id by value (GPU.md: a ctypes probe got 3
// here), an in-place ncclAllReduce that leaves the values as they are,
// ncclCommDestroy.
func TestGPUBackendNCCL(t *testing.T) {
	b := gpuBackend(t)
	report(t, "NCCL at world size 1 (ncclCommInitRank with the id by value, ncclAllReduce in place)")
	id, err := NewNCCLID()
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.NCCL(1, 0, id)
	if err != nil {
		t.Fatal(err)
	}
	x, err := b.NewTensor(1000)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Release()
	in := make([]float32, 1000)
	for i := range in {
		in[i] = float32(i)*0.25 - 100
	}
	if err := x.Write(in); err != nil {
		t.Fatal(err)
	}
	if err := c.AllReduceSum(x); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, len(in))
	if err := x.Read(got); err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if got[i] != in[i] {
			t.Fatalf("value %d: %v after a sum over one rank, want %v", i, got[i], in[i])
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// Copies from host memory through the staging ring (pinned buffers, the
// DMA queued without waiting) land what was written, in order, as do the
// same copies straight from pageable memory; their rates are
// BenchmarkGPUCopyIn's.
func TestGPUBackendStagedCopies(t *testing.T) {
	report(t, "staged copies from host memory (pinned ring) against pageable ones")
	const n = 6 << 20 / 4 // ThinNet's batch of 512 at 3×32×32, float32
	for _, pageable := range []bool{false, true} {
		b := openGPUFor(t, train.BackendOptions{Pageable: pageable}, false)
		x, err := b.NewTensor(n)
		if err != nil {
			t.Fatal(err)
		}
		src, got := make([]float32, n), make([]float32, n)
		const rounds = 20
		for i := range rounds {
			for k := range src {
				src[k] = float32(i*n + k)
			}
			if err := x.Write(src); err != nil {
				t.Fatal(err)
			}
		}
		if err := x.Read(got); err != nil {
			t.Fatal(err)
		}
		for k := range got {
			if got[k] != src[k] {
				t.Fatalf("pageable=%v: element %d is %v after the last copy, want %v", pageable, k, got[k], src[k])
			}
		}
		if st := b.HostCopies(); pageable != (st.Staged == 0) || !pageable && st.Staged < rounds {
			t.Fatalf("pageable=%v: host copies %+v, want %d staged copies unless pageable", pageable, st, rounds)
		}
	}
}

// BenchmarkGPUCopyIn: a ThinNet batch (6 MiB of float32) copied from a Go
// slice into the device, through the staging ring (pinned) and straight
// from pageable memory (the study's pin_memory on and off; GPU.md: 54.9
// GB/s pinned, 6.7 pageable with torch). gpucheck.sh runs it.
func BenchmarkGPUCopyIn(b *testing.B) {
	for _, pageable := range []bool{false, true} {
		b.Run(fmt.Sprintf("pageable=%v", pageable), func(b *testing.B) {
			be := openGPUFor(b, train.BackendOptions{Pageable: pageable}, false)
			const n = 6 << 20 / 4
			x, err := be.NewTensor(n)
			if err != nil {
				b.Fatal(err)
			}
			src := make([]float32, n)
			b.SetBytes(4 * n)
			b.ResetTimer()
			for range b.N {
				if err := x.Write(src); err != nil {
					b.Fatal(err)
				}
			}
			if err := be.Sync(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// Replicas on one GPU, each backend on its own stream, sum on the device
// (peerAllReduce: events between the streams, the add kernel, device
// copies), every rank getting the rank-order sum.
func TestGPUBackendReplicaSum(t *testing.T) {
	gpuBackend(t) // skips without a GPU
	report(t, "replicas' all-reduce on the device (three streams of one GPU, events between them)")
	sumOverRanks(t, func(int) *Backend { return openGPUFor(t, train.BackendOptions{}, false) }, true)
}
