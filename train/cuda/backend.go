package cuda

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/cuda/kernels"
)

// Backend is the cuda train.Backend: tensors in a machine's memory, layers
// as kernels of kernels.cu, cuDNN convolutions and cuBLAS products, and
// every optional interface of device-resident training (ParamStore with
// fused SGD, LossBackend, ByteInputBackend, the Device*Ops, Syncer,
// DeviceNamer, DeviceMemory, PrecisionReporter). The same code runs over
// the GPU (OpenBackend, registered as "cuda") and over the CPU twin
// (OpenTwin, for tests and planning). Like every backend it is used by one
// goroutine at a time, except ByteInputOp.Normalize, which may run beside
// the ops on other tensors.
type Backend struct {
	m       machine
	facts   kernels.Facts
	threads int
	prec    train.Precision
	half    uint64 // round's 16-bit scratch
	nHalf   int
	closed  bool
}

var (
	_ train.Backend           = (*Backend)(nil)
	_ train.ParamStore        = (*Backend)(nil)
	_ train.LossBackend       = (*Backend)(nil)
	_ train.ByteInputBackend  = (*Backend)(nil)
	_ train.Syncer            = (*Backend)(nil)
	_ train.DeviceNamer       = (*Backend)(nil)
	_ train.DeviceMemory      = (*Backend)(nil)
	_ train.PrecisionReporter = (*Backend)(nil)
	_ train.Tuner             = (*Backend)(nil)

	_ train.DeviceConvOp      = (*convOp)(nil)
	_ train.DeviceLinearOp    = (*linearOp)(nil)
	_ train.DeviceBatchNormOp = (*bnOp)(nil)
)

// memoryReserve is what MemoryBudget keeps back from the free memory: the
// convolution workspaces, cuDNN's and cuBLAS's own buffers, fragmentation.
const memoryReserve = 1 << 30

// ParseDevice reads BackendOptions.Device for the cuda backend: "",
// "cuda" (device 0) or "cuda:N"; anything else is train.ErrDevice.
func ParseDevice(s string) (int, error) {
	switch {
	case s == "" || s == "cuda":
		return 0, nil
	case strings.HasPrefix(s, "cuda:"):
		n, err := strconv.Atoi(s[len("cuda:"):])
		if err == nil && n >= 0 && strconv.Itoa(n) == s[len("cuda:"):] {
			return n, nil
		}
	}
	return 0, fmt.Errorf("backend \"cuda\" runs on \"cuda\" or \"cuda:N\", not %q: %w", s, train.ErrDevice)
}

// checkOptions reads the device and refuses what the backend does not do.
func checkOptions(o train.BackendOptions) (int, error) {
	n, err := ParseDevice(o.Device)
	if err != nil {
		return 0, err
	}
	switch o.Precision {
	case train.Float32, train.BFloat16, train.Float16:
	default:
		return 0, fmt.Errorf("backend \"cuda\": precision %s: %w", o.Precision, train.ErrUnsupported)
	}
	return n, nil
}

func newBackend(m machine, o train.BackendOptions) *Backend {
	return &Backend{m: m, facts: m.facts(), threads: 1, prec: o.Precision}
}

func (b *Backend) Name() string { return "cuda" }

// Threads is 1: the host thread that queues the work.
func (b *Backend) Threads() int { return b.threads }

// Device implements train.DeviceNamer: "cuda:N", or "cuda-twin".
func (b *Backend) Device() string { return b.m.device() }

// Sync implements train.Syncer.
func (b *Backend) Sync() error { return b.m.sync() }

// MemoryBudget implements train.DeviceMemory: the free memory less a
// reserve of 1 GiB.
func (b *Backend) MemoryBudget() (int64, error) {
	f, err := b.m.freeMemory()
	if err != nil {
		return 0, err
	}
	return max(f-memoryReserve, 0), nil
}

// Precision implements train.PrecisionReporter. fp32 is native; bf16 and
// fp16 are emulated as the reference backend emulates them (and
// torch.autocast computes): a convolution's or product's input, weights
// and output gradient are rounded through the cast kernels and the fp32
// call runs on the rounded values, accumulating in float. cuDNN's and
// cuBLAS's half-precision tensors (the speed) are not used yet.
func (b *Backend) Precision() (train.Precision, bool) { return b.prec, b.prec == train.Float32 }

// round writes the n values at src rounded to the backend's precision
// (fp32 → fp16 or bf16 → fp32, cast kernels, round to nearest even) into
// *dst, made or regrown to shape.
func (b *Backend) round(dst **tensor, src uint64, shape ...int) (*tensor, error) {
	if err := b.ensure(dst, shape...); err != nil {
		return nil, err
	}
	n := (*dst).n
	if b.nHalf < n {
		if b.half != 0 {
			b.m.free(b.half)
			b.half, b.nHalf = 0, 0
		}
		p, err := b.m.alloc(2 * n)
		if err != nil {
			return nil, fmt.Errorf("cuda: %s scratch of %d values: %w", b.prec, n, err)
		}
		b.half, b.nHalf = p, n
	}
	to, from := "cast_f32_bf16", "cast_bf16_f32"
	if b.prec == train.Float16 {
		to, from = "cast_f32_f16", "cast_f16_f32"
	}
	if err := b.run(to, kernels.Elementwise, n, 0, src, b.half, i64(n)); err != nil {
		return nil, err
	}
	return *dst, b.run(from, kernels.Elementwise, n, 0, b.half, (*dst).p, i64(n))
}

// reduced reports whether convolutions and products round their operands.
func (b *Backend) reduced() bool { return b.prec != train.Float32 }

// TuneChoices implements train.Tuner: under Autotune, the convolution
// algorithms cudnnFind…AlgorithmEx measured, by shape and direction (each
// shape once per backend, whichever op saw it first); none on the twin.
func (b *Backend) TuneChoices() []train.TuneChoice { return b.m.tuneChoices() }

// Close syncs and releases the machine (every tensor and op with it).
func (b *Backend) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	if b.half != 0 {
		b.m.free(b.half)
		b.half = 0
	}
	return b.m.close()
}

// ---- tensors ----

// tensor is float32 memory of the machine, row-major.
type tensor struct {
	b     *Backend
	shape []int
	p     uint64
	n     int  // elements
	own   bool // made by NewTensor: Release frees it
	view  bool // part of another allocation: never freed on its own
}

func (t *tensor) Shape() []int { return t.shape }

func (t *tensor) Read(dst []float32) error {
	if len(dst) != t.n {
		return fmt.Errorf("cuda: tensor %v: read into %d values", t.shape, len(dst))
	}
	return t.b.copyOut(dst, t.p)
}

func (t *tensor) Write(src []float32) error {
	if len(src) != t.n {
		return fmt.Errorf("cuda: tensor %v: write of %d values", t.shape, len(src))
	}
	return t.b.copyIn(t.p, src)
}

func (t *tensor) Release() {
	if t.own && t.p != 0 {
		t.b.m.free(t.p)
		t.p = 0
	}
}

// free releases an op's own tensor.
func (t *tensor) free() {
	if t != nil && !t.view && t.p != 0 {
		t.b.m.free(t.p)
		t.p = 0
	}
}

func (b *Backend) copyIn(dst uint64, src []float32) error {
	if len(src) == 0 {
		return nil
	}
	return b.m.copyIn(dst, unsafe.Pointer(&src[0]), 4*len(src))
}

func (b *Backend) copyOut(dst []float32, src uint64) error {
	if len(dst) == 0 {
		return nil
	}
	return b.m.copyOut(unsafe.Pointer(&dst[0]), src, 4*len(dst))
}

func (b *Backend) alloc(shape ...int) (*tensor, error) {
	n := train.Numel(shape)
	p, err := b.m.alloc(4 * n)
	if err != nil {
		return nil, fmt.Errorf("cuda: tensor %v: %w", shape, err)
	}
	return &tensor{b: b, shape: slices.Clone(shape), p: p, n: n}, nil
}

// NewTensor implements train.Backend: a zeroed tensor.
func (b *Backend) NewTensor(shape ...int) (train.Tensor, error) {
	for _, d := range shape {
		if d <= 0 {
			return nil, fmt.Errorf("cuda: tensor shape %v: dimensions must be positive", shape)
		}
	}
	t, err := b.alloc(shape...)
	if err != nil {
		return nil, err
	}
	t.own = true
	return t, nil
}

// ensure makes *t a tensor of shape, reusing it when it has that shape.
func (b *Backend) ensure(t **tensor, shape ...int) error {
	if *t != nil && slices.Equal((*t).shape, shape) {
		return nil
	}
	(*t).free()
	nt, err := b.alloc(shape...)
	if err != nil {
		return err
	}
	*t = nt
	return nil
}

// hostTensor writes v into *t (made or regrown to len(v)): the host
// paths' weights.
func (b *Backend) hostTensor(t **tensor, v []float32) (*tensor, error) {
	if err := b.ensure(t, len(v)); err != nil {
		return nil, err
	}
	return *t, (*t).Write(v)
}

// asT is x as this backend's tensor, of one of the ranks when given.
func asT(x train.Tensor, rank ...int) (*tensor, error) {
	t, ok := x.(*tensor)
	if !ok || t == nil {
		return nil, fmt.Errorf("cuda: tensor of another backend (%T)", x)
	}
	if len(rank) > 0 && !slices.Contains(rank, len(t.shape)) {
		return nil, fmt.Errorf("cuda: tensor of shape %v: want rank %v", t.shape, rank)
	}
	return t, nil
}

// ptrOf is x's address, 0 for a nil x; want is its element count.
func ptrOf(what string, x train.Tensor, want int) (uint64, error) {
	if x == nil {
		return 0, nil
	}
	t, err := asT(x)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	if t.n != want {
		return 0, fmt.Errorf("cuda: %s has %d values, want %d", what, t.n, want)
	}
	return t.p, nil
}

// ---- kernels ----

func i32(v int) uint64     { return uint64(uint32(int32(v))) }
func i64(v int) uint64     { return uint64(int64(v)) }
func f32(v float32) uint64 { return uint64(math.Float32bits(v)) }
func flag(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// run launches kernel name planned as shape s over items of size.
func (b *Backend) run(name string, s kernels.Shape, items, size int, args ...uint64) error {
	l, err := b.facts.Plan(s, int64(items), int64(size))
	if err != nil {
		return fmt.Errorf("cuda: %s: %w", name, err)
	}
	if err := b.m.launch(name, l, args...); err != nil {
		return fmt.Errorf("cuda: kernel %s: %w", name, err)
	}
	return nil
}

// planes returns N, C and the size of one channel's plane.
func planes(shape []int) (n, c, hw int) {
	n, c, hw = shape[0], shape[1], 1
	for _, d := range shape[2:] {
		hw *= d
	}
	return
}
