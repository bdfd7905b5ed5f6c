package train

import (
	"errors"
	"fmt"
	"slices"

	"github.com/faster-training/faster/internal/registry"
)

// Tensor is a batch of activations or gradients in a backend's memory.
type Tensor interface {
	// Shape returns the logical dimensions: (N, C, H, W) or (N, F).
	Shape() []int
	// Read copies the tensor into dst (len = product of Shape) in plain
	// row-major order.
	Read(dst []float32) error
	// Write copies src (plain row-major) into the tensor.
	Write(src []float32) error
	// Release frees the tensor's memory. Only tensors made by
	// Backend.NewTensor are released by their user; layers own their
	// outputs.
	Release()
}

// Backend runs the arithmetic of layers. Ops are created per layer and
// specialise themselves (memory formats, primitives, buffers) to the first
// input shape they see, re-specialising when it changes.
type Backend interface {
	// Name is the name the backend is registered under.
	Name() string
	// Threads is the number of threads each op may use.
	Threads() int
	// NewTensor makes a zeroed tensor of the given shape.
	NewTensor(shape ...int) (Tensor, error)
	NewConv(ConvSpec) (ConvOp, error)
	NewBatchNorm(BatchNormSpec) (BatchNormOp, error)
	NewReLU() (ReLUOp, error)
	NewPool(PoolSpec) (PoolOp, error)
	NewLinear(LinearSpec) (LinearOp, error)
	NewAdd() (AddOp, error)
	// Close releases what the backend holds. Ops and tensors must not be
	// used afterwards.
	Close() error
}

// ConvSpec describes a 2-D convolution (square kernel, equal stride and
// padding on both axes, no dilation or groups).
type ConvSpec struct {
	In, Out int // channels
	Kernel  int
	Stride  int // 0 means 1
	Pad     int
	Bias    bool
	// ReLU applies max(·, 0) to the output, fused into the convolution
	// (a oneDNN post-op): Forward returns ReLU(conv(x, w) + b) and
	// Backward takes the gradient with respect to that, masking it where
	// the output is 0, as a separate ReLU after the convolution would.
	ReLU bool
}

func (s ConvSpec) stride() int { return max(s.Stride, 1) }

// ConvOp computes y = conv(x, w) + b with w in OIHW layout (then ReLU
// when the spec says so).
type ConvOp interface {
	// Forward returns y (owned by the op). b is nil when the spec has no bias.
	Forward(x Tensor, w, b []float32) (Tensor, error)
	// Backward takes dL/dy for the last Forward, overwrites dw (and db when
	// not nil) and returns dL/dx, or nil when needDX is false.
	Backward(dy Tensor, w, dw, db []float32, needDX bool) (Tensor, error)
	Close()
}

// BatchNormSpec describes a per-channel batch normalisation.
type BatchNormSpec struct {
	C   int
	Eps float32 // 0 means 1e-5
}

func (s BatchNormSpec) eps() float32 {
	if s.Eps == 0 {
		return 1e-5
	}
	return s.Eps
}

// BatchNormOp normalises x per channel: y = gamma·(x−mean)/√(var+eps) + beta.
type BatchNormOp interface {
	// Forward in training mode normalises with the batch's statistics and
	// writes them (variance biased, as used to normalise) into mean and
	// variance; otherwise it normalises with mean and variance as given.
	Forward(x Tensor, gamma, beta, mean, variance []float32, training bool) (Tensor, error)
	// Backward (after a training Forward) overwrites dgamma and dbeta and
	// returns dL/dx.
	Backward(dy Tensor, gamma, beta, dgamma, dbeta []float32) (Tensor, error)
	Close()
}

// ReLUOp computes y = max(x, 0).
type ReLUOp interface {
	Forward(x Tensor) (Tensor, error)
	Backward(dy Tensor) (Tensor, error)
	Close()
}

// PoolKind selects max or average pooling.
type PoolKind int

const (
	MaxPool PoolKind = iota
	AvgPool
)

// PoolSpec describes a 2-D pooling window.
type PoolSpec struct {
	Kind             PoolKind
	KernelH, KernelW int
	StrideH, StrideW int
	PadH, PadW       int
	ExcludePad       bool // average over the valid elements only (PyTorch's count_include_pad=False)
}

// PoolOp pools over spatial windows.
type PoolOp interface {
	Forward(x Tensor, training bool) (Tensor, error)
	Backward(dy Tensor) (Tensor, error)
	Close()
}

// LinearSpec describes a fully connected layer with bias. Its input is
// flattened per sample (like torch.flatten(x, 1)), so In = C·H·W for
// feature maps.
type LinearSpec struct{ In, Out int }

// LinearOp computes y = x·wᵀ + b, w being Out×In.
type LinearOp interface {
	Forward(x Tensor, w, b []float32) (Tensor, error)
	Backward(dy Tensor, w, dw, db []float32, needDX bool) (Tensor, error)
	Close()
}

// AddOp adds two tensors of the same shape (residual connections).
type AddOp interface {
	// Forward returns a + b (owned by the op).
	Forward(a, b Tensor) (Tensor, error)
	Close()
}

// SyncBatchNormOp is a BatchNormOp that can normalise with the statistics
// of one batch spread over several replicas (SyncBN, as
// torch.nn.SyncBatchNorm). reduce sums v element-wise over the replicas in
// place; every replica calls it the same number of times in the same order.
type SyncBatchNormOp interface {
	BatchNormOp
	// ForwardSync is a training Forward whose statistics are the global
	// batch's: it reduces [Σx per channel, Σx² per channel, element count
	// per channel] (2C+1 values) and writes the global mean and biased
	// variance into mean and variance. It returns the global element count
	// per channel (N·H·W summed over the replicas).
	ForwardSync(x Tensor, gamma, beta, mean, variance []float32, reduce func([]float64) error) (Tensor, int, error)
	// BackwardSync, after ForwardSync, reduces [Σdy, Σdy·x̂] per channel
	// (2C values) and returns dL/dx for the global batch:
	// γ/σ·(dy − Σdy/M − x̂·Σdy·x̂/M) with the global sums and count M.
	// dgamma and dbeta get this replica's local sums (Σdy·x̂, Σdy); the
	// gradient all-reduce adds them up with the other parameters.
	BackwardSync(dy Tensor, gamma, beta, dgamma, dbeta []float32, reduce func([]float64) error) (Tensor, error)
}

// Precision is the arithmetic of convolutions and matrix products.
type Precision int

const (
	// Float32 computes in float32 throughout.
	Float32 Precision = iota
	// BFloat16 rounds the inputs, weights and output gradients of
	// convolutions and matrix products to bfloat16 and accumulates in
	// float32 (torch.autocast(dtype=torch.bfloat16)): natively where the
	// CPU has bf16 instructions, otherwise emulated by rounding.
	BFloat16
	// Float16 is BFloat16 with IEEE half precision (values beyond ±65504
	// become ±Inf, which a GradScaler detects).
	Float16
)

func (p Precision) String() string {
	switch p {
	case Float32:
		return "fp32"
	case BFloat16:
		return "bf16"
	case Float16:
		return "fp16"
	}
	return fmt.Sprintf("Precision(%d)", int(p))
}

// ParsePrecision parses "fp32", "bf16" or "fp16".
func ParsePrecision(s string) (Precision, error) {
	for _, p := range []Precision{Float32, BFloat16, Float16} {
		if s == p.String() {
			return p, nil
		}
	}
	return 0, fmt.Errorf("precision %q: want fp32, bf16 or fp16", s)
}

// PrecisionReporter is implemented by backends that say how they run
// reduced precision.
type PrecisionReporter interface {
	// Precision returns the configured precision and whether it runs on
	// native instructions (false: emulated by rounding float32 values).
	Precision() (p Precision, native bool)
}

// TuneCandidate is one implementation an autotuning backend timed.
type TuneCandidate struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`         // best time of one forward+backward
	Err     string  `json:"error,omitempty"` // why it could not be used
}

// TuneChoice is what an autotuning backend picked for one op and shape.
type TuneChoice struct {
	Op         string          `json:"op"` // e.g. "conv 64x32x26x26 -> 64 k3 s1 p0"
	Chosen     string          `json:"chosen"`
	Candidates []TuneCandidate `json:"candidates"`
	Seconds    float64         `json:"seconds"` // time spent choosing (warm-ups and timing)
	// Cached is set when the choice came from BackendOptions.TuneCache
	// (made by an earlier run on this machine): nothing was timed.
	Cached bool `json:"cached,omitempty"`
}

// Tuner is implemented by backends that autotune (BackendOptions.Autotune).
type Tuner interface {
	// TuneChoices lists the choices made so far, in the order made.
	TuneChoices() []TuneChoice
}

// TuneFlusher is implemented by backends that keep autotuning's choices in
// a TuneCache (BackendOptions.TuneCache). FlushTuneCache writes the
// choices made since the last call, nothing when there are none, and warns
// (never fails) when it cannot: a cache is never worth stopping a run for.
// The trainer calls it after each step, so that a run killed later keeps
// what it tuned; the backend's Close writes the rest.
type TuneFlusher interface {
	FlushTuneCache()
}

// BackendOptions configures a backend.
type BackendOptions struct {
	// Precision of convolutions and matrix products (default Float32).
	Precision Precision
	// Autotune times the candidate implementations of each op the first
	// time it sees a shape and keeps the fastest (like
	// torch.backends.cudnn.benchmark); see Tuner.
	Autotune bool
	// TuneCache, with Autotune, is the file that keeps the choices across
	// runs (by machine; see TuneCache, DefaultTuneCachePath): a
	// configuration chosen before on this machine is not timed again.
	// "": each run tunes.
	TuneCache string
	Threads   int // 0: runtime.NumCPU()
	// NormThreads caps the threads of BatchNorm (0: Threads). BatchNorm
	// synchronises its threads several times per call; on cores shared with
	// other work a descheduled thread stalls the others, and 1 thread was
	// 15–20% faster per ThinNet step at batch 512 on a busy 2-core machine.
	NormThreads int
	// Winograd runs the onednn backend's float32 3×3 convolutions of
	// stride 1 whose channel counts are multiples of 16 with Winograd
	// F(4×4, 3×3) instead of the direct algorithm: about twice as fast on
	// ThinNet's layers (2.3–3.0× PyTorch's step where direct is ≈1.6×),
	// with results that differ by rounding (relative 1e-6 to 1e-5 per
	// layer). Over whole runs its curves differ from direct's no more than
	// rounding alone moves them: the fast recipe on Fashion-MNIST (ThinNet
	// 8/16/32, 2 epochs, seeds 1-4, bench/run_winograd_curves.sh) ended at
	// 84.38 ± 3.36% with it and 84.80 ± 3.07% direct, and its curves lay
	// 2.47 points from direct's on average where direct with 2 threads
	// instead of 1 (the same arithmetic summed in another order) lay 3.12.
	// faster train turns it on (--winograd=false: direct); the zero
	// BackendOptions keep direct, the algorithm every backend has.
	Winograd bool
	// Device names where the backend runs: "" or "cpu" for the host's
	// CPU (the only device of reference and onednn, which refuse others
	// with ErrDevice), "cuda:0" for a GPU backend's first GPU. See
	// DeviceNamer.
	Device string
	// Pageable copies host memory into a GPU backend's device straight
	// from the caller's pageable memory, as PyTorch without pin_memory:
	// such a copy waits for the device to reach it. By default a GPU
	// backend copies large ones through pinned buffers of its own, and
	// the copy returns without waiting (pin_memory=True with
	// non_blocking=True). fit sets it with parallel.no_overlap, to
	// measure the difference; CPU backends have nothing to pin.
	Pageable bool
	// ChannelsLast runs a GPU backend's 16-bit convolutions (bf16, fp16)
	// channels-last, as PyTorch's channels_last memory format: cuDNN's
	// tensor-core kernels take NHWC without transposing internally. The
	// network's tensors stay NCHW: the casts to and from 16 bits around
	// each convolution move the values, so the arithmetic is unchanged.
	// Float32 and the CPU backends ignore it.
	ChannelsLast bool
}

// BackendFactory opens a backend.
type BackendFactory func(BackendOptions) (Backend, error)

var backends registry.Registry[BackendFactory]

func init() {
	backends.Register("reference", func(o BackendOptions) (Backend, error) {
		if err := CheckCPUDevice("reference", o); err != nil {
			return nil, err
		}
		return NewReference(o), nil
	})
}

// Register makes a backend available to Open under name. Backends register
// themselves from an init function (import _ ".../train/onednn").
func Register(name string, f BackendFactory) { backends.Register(name, f) }

// Backends lists the registered backend names, sorted.
func Backends() []string { return backends.Names() }

// ErrNoBackend reports a backend name that is not registered.
var ErrNoBackend = errors.New("no such backend")

// Open opens the backend registered as name.
func Open(name string, o BackendOptions) (Backend, error) {
	f, ok := backends.Get(name)
	if !ok {
		return nil, fmt.Errorf("backend %q: %w (have %v)", name, ErrNoBackend, Backends())
	}
	return f(o)
}

// Default opens "onednn" when it is registered, else "reference".
func Default(o BackendOptions) (Backend, error) {
	if slices.Contains(Backends(), "onednn") {
		return Open("onednn", o)
	}
	return Open("reference", o)
}

// numel is the product of dims.
func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Numel is the number of elements of a tensor of the given shape.
func Numel(shape []int) int { return numel(shape) }

// ConvOut is the output size of a convolution or pooling window along one
// axis.
func ConvOut(in, kernel, stride, pad int) int { return (in+2*pad-kernel)/stride + 1 }
