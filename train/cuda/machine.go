package cuda

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/cuda/kernels"
)

// machine is what the backend needs of a device: memory, copies, kernels
// of kernels.cu launched by name, convolutions and matrix products, and
// facts. The GPU (gpuMachine: Device, its own stream, cuDNN, cuBLAS) and
// the CPU twin (twinMachine: host memory, kernels.cu built by gcc,
// convolutions and products by loops) implement it with the same
// semantics, so everything above it, the backend, runs the same code on
// both and is tested on the twin where there is no GPU.
//
// Addresses are uint64: device pointers on the GPU, host pointers of C
// memory on the twin. Work may be queued: launch, conv*, gemm and zero
// return before it finishes; copyOut and sync wait for everything queued.
// A machine is used by one goroutine at a time (the backend's contract);
// ByteInputOp's copies take the machine's lock.
// errClosed is a call on a closed machine (or its staging ring).
var errClosed = errors.New("cuda: the backend is closed")

type machine interface {
	// alloc returns bytes of zeroed memory; free releases it.
	alloc(bytes int) (uint64, error)
	free(p uint64)
	// copyIn copies bytes from host memory src to dst in queue order (src
	// may be reused when it returns); copyOut copies from src to host
	// memory dst after the work queued before it, and waits for it.
	copyIn(dst uint64, src unsafe.Pointer, bytes int) error
	copyOut(dst unsafe.Pointer, src uint64, bytes int) error
	// copyDev copies bytes of device memory src (another producer's on
	// the same device: a decode stage's batch) to dst in queue order;
	// fence waits for the work queued so far by this goroutine, and not
	// for work others queue after it (train.DeviceInputOp.Load's return).
	copyDev(dst, src uint64, bytes int) error
	fence() error
	// Events order work across the streams of one device (the replicas'
	// all-reduce, peer.go): recordEvent marks the work queued so far on
	// this machine's stream; streamWait makes the work queued on this
	// stream after it wait for ev's last mark, without the host waiting.
	// The twin runs everything at once: it has nothing to order.
	newEvent() (unsafe.Pointer, error)
	recordEvent(ev unsafe.Pointer) error
	streamWait(ev unsafe.Pointer) error
	freeEvent(ev unsafe.Pointer)
	// zero sets bytes at p to 0.
	zero(p uint64, bytes int) error
	// launch runs kernel name of kernels.cu with l and args, each in an
	// 8-byte slot (pointers and i64 as is, i32 and f32 in the low bytes).
	launch(name string, l kernels.Launch, args ...uint64) error
	// conv runs one direction of convolution c (cuDNN's semantics:
	// cross-correlation, NCHW of c.Dtype (float32, or 16-bit tensors with
	// float accumulation), pads and strides, no groups or
	// dilation; alpha 1, beta 0):
	//   convFwd:      out y (N×K×OH×OW) = conv(a x, b w)
	//   convBwdData:  out dx (N×C×H×W) from a w, b dy
	//   convBwdFilter: out dw (K×C×R×R) from a x, b dy
	conv(c *convShape, dir convDir, a, b, out uint64) error
	// gemm is cuBLAS's column-major sgemm: C (m×n, ldc) = alpha·op(A)·op(B)
	// + beta·C, op(A) m×k, op(B) k×n, op = transpose when ta/tb.
	gemm(g gemmArgs) error
	// sync waits for everything queued.
	sync() error
	// freeMemory is the device's free memory in bytes.
	freeMemory() (int64, error)
	// facts are the launch facts kernels.Facts.Plan takes.
	facts() kernels.Facts
	// device names the machine ("cuda:0", "cuda-twin").
	device() string
	// tuneChoices are the convolution algorithms measured and chosen
	// under BackendOptions.Autotune, in the order chosen.
	tuneChoices() []train.TuneChoice
	// beginCapture starts recording the work queued (launch, conv, gemm,
	// zero) instead of running it; until endCapture the machine refuses
	// copies, allocations, frees and sync. endCapture ends the recording
	// and returns the record, ready to replay (the GPU: a CUDA graph,
	// instantiated); replay queues the recorded work; dropRecord releases
	// a record. capture.go's recorder keeps the forbidden calls away.
	beginCapture() error
	endCapture() (record, error)
	replay(r record) error
	dropRecord(r record)
	close() error
}

// convDir is one direction of a convolution.
type convDir int

const (
	convFwd convDir = iota
	convBwdData
	convBwdFilter
)

func (d convDir) String() string {
	return [...]string{"forward", "backward data", "backward filter"}[d]
}

// dtype is the element type of a convolution's tensors or of a
// product's inputs: float32, or 16 bits (BackendOptions.Precision fp16 or
// bf16, torch.autocast's operands).
type dtype int

const (
	dtFloat dtype = iota
	dtHalf        // IEEE binary16
	dtBF16        // bfloat16
)

func (d dtype) String() string { return [...]string{"fp32", "fp16", "bf16"}[d] }

// dtypeOf is the operand type of precision p.
func dtypeOf(p train.Precision) dtype {
	switch p {
	case train.Float16:
		return dtHalf
	case train.BFloat16:
		return dtBF16
	}
	return dtFloat
}

// convShape is one convolution's sizes; the GPU machine keeps its cuDNN
// descriptors and chosen algorithms in state (released by releaseConv).
type convShape struct {
	N, C, H, W  int // input
	K, R        int // output channels, square kernel
	Pad, Stride int
	OH, OW      int
	// Dtype is every tensor's type (x, w, y and their gradients): 16-bit
	// tensors with float accumulation under fp16 and bf16 (cuDNN's
	// PSEUDO_HALF and PSEUDO_BFLOAT16 configurations: the output is 16-bit
	// too, as torch.autocast's convolution's).
	Dtype dtype
	// NHWC lays x, y and their gradients out channels-last (N×H×W×C) and
	// the filter K×R×R×C (cuDNN's CUDNN_TENSOR_NHWC; 16-bit convolutions
	// under BackendOptions.ChannelsLast).
	NHWC         bool
	state        any
	releaseState func()
}

func (c *convShape) String() string {
	s := fmt.Sprintf("conv %dx%dx%dx%d -> %d k%d s%d p%d", c.N, c.C, c.H, c.W, c.K, c.R, c.Stride, c.Pad)
	if c.Dtype != dtFloat {
		s += " " + c.Dtype.String()
	}
	if c.NHWC {
		s += " nhwc"
	}
	return s
}

// release frees what a machine keeps for c.
func (c *convShape) release() {
	if c.releaseState != nil {
		c.releaseState()
	}
	c.state, c.releaseState = nil, nil
}

// gemmArgs are cublasSgemm's arguments (column-major); with In fp16 or
// bf16, cublasGemmEx's: A and B 16-bit, C float32, float accumulation
// (CUBLAS_COMPUTE_32F).
type gemmArgs struct {
	In          dtype
	TA, TB      bool
	M, N, K     int
	Alpha, Beta float32
	A, B, C     uint64
	LDA, LDB    int
	LDC         int
}
