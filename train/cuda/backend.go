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
	low     dtype // the operands of convolutions and products
	// nhwc: 16-bit convolutions run channels-last, the casts around them
	// moving the values (BackendOptions.ChannelsLast).
	nhwc bool
	// noLowHandOff keeps the casts between a convolution and its
	// BatchNorm (tests compare the hand-off with them).
	noLowHandOff bool
	// noAddReLU runs a residual block's end as add, then relu_fwd, and
	// its gradients' sum through the block before's ReLU as add, then
	// relu_bwd (tests compare add_relu and add_relu_bwd with them).
	noAddReLU bool
	// noBNSum runs a residual block's end after its main path's last
	// BatchNorm, not in that BatchNorm's pass (tests compare BN_ADD with
	// it).
	noBNSum bool
	graph   stepGraph
	// spare is a released state's memory, for the next state of its
	// sizes (state.Release, takeMemory).
	spare  *stateMem
	closed bool
}

var (
	_ train.Backend            = (*Backend)(nil)
	_ train.ParamStore         = (*Backend)(nil)
	_ train.LossBackend        = (*Backend)(nil)
	_ train.ByteInputBackend   = (*Backend)(nil)
	_ train.DeviceInputBackend = (*Backend)(nil)
	_ train.Syncer             = (*Backend)(nil)
	_ train.DeviceNamer        = (*Backend)(nil)
	_ train.DeviceMemory       = (*Backend)(nil)
	_ train.PrecisionReporter  = (*Backend)(nil)
	_ train.Tuner              = (*Backend)(nil)
	_ train.HostMemoryBackend  = (*Backend)(nil)
	_ train.HostCopyReporter   = (*Backend)(nil)

	_ train.DeviceConvOp      = (*convOp)(nil)
	_ train.DeviceLinearOp    = (*linearOp)(nil)
	_ train.DeviceBatchNormOp = (*bnOp)(nil)

	_ train.ReLUDeferringConvOp   = (*convOp)(nil)
	_ train.ReLUInputBatchNormOp  = (*bnOp)(nil)
	_ train.ReLUOutputBatchNormOp = (*bnOp)(nil)
	_ train.AddReLUOp             = (*reluOp)(nil)
	_ train.ReLUSumBackwardOp     = (*reluOp)(nil)
	_ train.LowGradSumOp          = (*reluOp)(nil)
	_ train.LowGradOp             = (*convOp)(nil)
	_ train.LowCopyOp             = (*reluOp)(nil)
	_ train.LowOutputOp           = (*convOp)(nil)
	_ train.LowInputOp            = (*convOp)(nil)
	_ train.LowOutputOp           = (*bnOp)(nil)
	_ train.LowInputOp            = (*bnOp)(nil)
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
	return &Backend{m: m, facts: m.facts(), threads: 1, prec: o.Precision, low: dtypeOf(o.Precision),
		nhwc: o.ChannelsLast && o.Precision != train.Float32}
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

// Precision implements train.PrecisionReporter: native for all three.
// Under bf16 and fp16 (torch.autocast's arithmetic) a convolution's
// input, weights and output gradient are cast to 16 bits and cuDNN runs on
// 16-bit tensors with float accumulation (its output and gradients 16-bit,
// cast back to float for the ops after it: BatchNorm, the loss, the
// optimiser stay float32); a product's operands are cast to 16 bits and
// cublasGemmEx accumulates and writes in float. A State's weights are cast
// once per step into a 16-bit copy it keeps (state.lowValues).
func (b *Backend) Precision() (train.Precision, bool) { return b.prec, true }

// buf16 is 16-bit memory of the machine: room for n values.
type buf16 struct {
	p uint64
	n int
}

// grow makes s hold at least n values.
func (b *Backend) grow16(s *buf16, n int) error {
	if s.n >= n && s.p != 0 {
		return nil
	}
	b.free16(s)
	p, err := b.m.alloc(2 * max(n, 1))
	if err != nil {
		return fmt.Errorf("cuda: %s buffer of %d values: %w", b.prec, n, err)
	}
	s.p, s.n = p, n
	return nil
}

func (b *Backend) free16(s *buf16) {
	if s.p != 0 {
		b.m.free(s.p)
	}
	*s = buf16{}
}

// casts are the cast kernels to and from the backend's 16-bit type.
func (b *Backend) casts() (to, from string) {
	if b.prec == train.Float16 {
		return "cast_f32_f16", "cast_f16_f32"
	}
	return "cast_f32_bf16", "cast_bf16_f32"
}

// toLow casts the n float32 values at src into s (grown to n), rounding to
// nearest even, and returns s's address.
func (b *Backend) toLow(s *buf16, src uint64, n int) (uint64, error) {
	if err := b.grow16(s, n); err != nil {
		return 0, err
	}
	to, _ := b.casts()
	return s.p, b.run(to, kernels.Elementwise, n, 0, src, s.p, i64(n))
}

// fromLow casts the n 16-bit values at src to float32 at dst (exact).
func (b *Backend) fromLow(dst, src uint64, n int) error {
	_, from := b.casts()
	return b.run(from, kernels.Elementwise, n, 0, src, dst, i64(n))
}

// to16 casts n planes of c×hw float32 values at src (NCHW, or a filter's
// KCRS with n = K and hw = R·R) into s as a convolution's 16-bit operand,
// and returns s's address: in the same order, or under ChannelsLast
// channels-last (NHWC, KRSC), the cast moving the values.
func (b *Backend) to16(s *buf16, src uint64, n, c, hw int) (uint64, error) {
	if err := b.grow16(s, n*c*hw); err != nil {
		return 0, err
	}
	return s.p, b.cast16(s.p, src, n, c, hw)
}

// cast16 is to16 into dst, which holds n·c·hw 16-bit values.
func (b *Backend) cast16(dst, src uint64, n, c, hw int) error {
	if !b.nhwc {
		to, _ := b.casts()
		return b.run(to, kernels.Elementwise, n*c*hw, 0, src, dst, i64(n*c*hw))
	}
	name := "cast_nchw_nhwc_bf16"
	if b.prec == train.Float16 {
		name = "cast_nchw_nhwc_f16"
	}
	return b.run(name, kernels.PerRow, kernels.CastTiles(n, c, hw), kernels.TileValues, src, dst, i32(n), i32(c), i32(hw))
}

// from16 casts a convolution's 16-bit result at src (laid out as to16
// lays out its operands) to float32 NCHW (or KCRS) at dst (exact).
func (b *Backend) from16(dst, src uint64, n, c, hw int) error {
	if !b.nhwc {
		return b.fromLow(dst, src, n*c*hw)
	}
	name := "cast_nhwc_nchw_bf16"
	if b.prec == train.Float16 {
		name = "cast_nhwc_nchw_f16"
	}
	return b.run(name, kernels.PerRow, kernels.CastTiles(n, c, hw), kernels.TileValues, src, dst, i32(n), i32(c), i32(hw))
}

// weights16 is a convolution's 16-bit filter (k×c×rr values of wt at wp):
// the State's channels-first copy (lowWeights), or under ChannelsLast
// cast channels-last into scratch.
func (b *Backend) weights16(wt train.Tensor, wp uint64, k, c, rr int, scratch *buf16) (uint64, error) {
	if b.nhwc {
		return b.to16(scratch, wp, k, c, rr)
	}
	return b.lowWeights(wt, wp, k*c*rr, scratch)
}

// lowWeights is the 16-bit copy of the n weights of wt (at wp): the
// State's copy when wt is a State's tensor (cast once after each change of
// the values), else cast into scratch.
func (b *Backend) lowWeights(wt train.Tensor, wp uint64, n int, scratch *buf16) (uint64, error) {
	if t, ok := wt.(*tensor); ok && t != nil && t.st != nil && t.st.b == b {
		low, err := t.st.lowValues()
		if err != nil {
			return 0, err
		}
		return low + 2*uint64(t.off), nil
	}
	return b.toLow(scratch, wp, n)
}

// reduced reports whether convolutions and products take 16-bit operands.
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
	b.ReleaseStep() // and the spare state memory
	b.closed = true
	return b.m.close()
}

// ---- tensors ----

// tensor is float32 memory of the machine, row-major.
type tensor struct {
	b     *Backend
	shape []int
	p     uint64
	n     int    // elements
	own   bool   // made by NewTensor: Release frees it
	view  bool   // part of another allocation: never freed on its own
	st    *state // a State's values: st's view at element off
	off   int
	// low: 16-bit values in the backend's precision, 2 bytes each, laid
	// out as the convolutions' operands (NCHW, or NHWC under
	// ChannelsLast; the shape stays N, C, H, W), passed between a
	// convolution and a BatchNorm right after each other
	// (train.LowOutputOp, train.LowInputOp): the convolution's output as
	// cuDNN wrote it and the BatchNorm's input gradient rounded, or the
	// BatchNorm's output rounded and the convolution's input gradient as
	// cuDNN wrote it. Only those ops take one (asT refuses it); Read and
	// Write convert (to16, from16).
	low bool
	// lowCopy: these float32 values rounded to 16 bits in the
	// convolutions' operand layout, written with them (a residual block's
	// output for the next block's convolutions, train.LowCopyOp): a
	// convolution reads it instead of casting. Write drops it.
	lowCopy *tensor
}

func (t *tensor) Shape() []int { return t.shape }

func (t *tensor) Read(dst []float32) error {
	if len(dst) != t.n {
		return fmt.Errorf("cuda: tensor %v: read into %d values", t.shape, len(dst))
	}
	if t.low {
		return t.b.viaFloat(t, func(f *tensor) error {
			n, c, hw := t.planes()
			if err := t.b.from16(f.p, t.p, n, c, hw); err != nil {
				return err
			}
			return t.b.copyOut(dst, f.p)
		})
	}
	return t.b.copyOut(dst, t.p)
}

func (t *tensor) Write(src []float32) error {
	if len(src) != t.n {
		return fmt.Errorf("cuda: tensor %v: write of %d values", t.shape, len(src))
	}
	if t.st != nil {
		t.st.changed()
	}
	t.lowCopy = nil
	if t.low {
		return t.b.viaFloat(t, func(f *tensor) error {
			if err := t.b.copyIn(f.p, src); err != nil {
				return err
			}
			n, c, hw := t.planes()
			return t.b.cast16(t.p, f.p, n, c, hw)
		})
	}
	return t.b.copyIn(t.p, src)
}

// planes are a 16-bit tensor's dimensions as to16 and from16 take them:
// a rank-4 tensor's images, channels and positions, any other's values
// as one plane (the channels-last casts move rank-4 tensors only).
func (t *tensor) planes() (n, c, hw int) {
	if len(t.shape) == 4 {
		return planes(t.shape)
	}
	return 1, 1, t.n
}

// viaFloat runs do with a float32 tensor of t's size, freed after: the
// host's reads and writes of a 16-bit tensor, cast on the machine.
func (b *Backend) viaFloat(t *tensor, do func(f *tensor) error) error {
	f, err := b.alloc(t.shape...)
	if err != nil {
		return err
	}
	defer f.free()
	return do(f)
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

// ensureLow makes *t a 16-bit tensor (tensor.low) of shape, reusing it
// when it has that shape.
func (b *Backend) ensureLow(t **tensor, shape ...int) error {
	if *t != nil && (*t).low && slices.Equal((*t).shape, shape) {
		return nil
	}
	(*t).free()
	n := train.Numel(shape)
	p, err := b.m.alloc(2 * max(n, 1))
	if err != nil {
		return fmt.Errorf("cuda: %s tensor %v: %w", b.prec, shape, err)
	}
	*t = &tensor{b: b, shape: slices.Clone(shape), p: p, n: n, low: true}
	return nil
}

// format is the kernels' name of the backend's 16-bit type.
func (b *Backend) format() kernels.Format {
	if b.prec == train.Float16 {
		return kernels.Float16
	}
	return kernels.BFloat16
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
	if *t != nil && !(*t).low && slices.Equal((*t).shape, shape) {
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

// asT is x as this backend's tensor of float32 values, of one of the
// ranks when given.
func asT(x train.Tensor, rank ...int) (*tensor, error) {
	t, err := asAny(x, rank...)
	if err == nil && t.low {
		return nil, fmt.Errorf("cuda: a 16-bit tensor %v given to an op that reads float32 (only a convolution and a BatchNorm next to each other pass them)", t.shape)
	}
	return t, err
}

// asAny is asT taking a 16-bit tensor too (tensor.low).
func asAny(x train.Tensor, rank ...int) (*tensor, error) {
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
	if err := kernels.CheckAlign(name, args); err != nil { // a GPU would fault and lose the context
		return fmt.Errorf("cuda: %w", err)
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
