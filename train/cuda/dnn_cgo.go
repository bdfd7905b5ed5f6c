//go:build cgo

package cuda

/*
#include <stdlib.h>
#include "dl.h"
#include "calls.h"
#include "gpu.h"
*/
import "C"

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/faster-training/faster/train"
)

// dnn is the convolutions (cuDNN's legacy API) and products (cuBLAS) of a
// machine, through gpu.c: the GPU machine's, and in a test a twin's whose
// cuDNN and cuBLAS are stand-ins built on the CPU. host is the memory and
// context they run in.
type dnn struct {
	host     dnnHost
	cudnn    unsafe.Pointer
	cublas   unsafe.Pointer
	autotune bool // cudnnFind…AlgorithmEx (cudnn.benchmark) instead of the heuristics
	math     int  // cuDNN's math type
	ws       uint64
	wsSize   int
	// blasWS is the cuBLAS handle's workspace (blas.go), blasWSSize bytes.
	blasWS     uint64
	blasWSSize int
	// algos are the algorithms chosen by shape and direction: a shape
	// seen before (by any op) is not chosen again; choices are
	// autotune's, for Tuner.
	algos   map[string]algo
	choices []train.TuneChoice
}

// open makes the stream and the handles (faster_gpu_setup: cuStreamCreate,
// cudnnCreate + cudnnSetStream, cublasCreate_v2 + cublasSetStream_v2 +
// cublasSetMathMode) in the host's context and returns the stream.
func (m *dnn) open() (stream unsafe.Pointer, err error) {
	err = m.host.do(func() error {
		var call *C.char
		if r := C.faster_gpu_setup(&stream, &m.cudnn, &m.cublas, C.int(cublasDefaultMath), &call); r != 0 {
			return dnnError(C.GoString(call), r)
		}
		return nil
	})
	return stream, err
}

// setBLASWorkspace allocates n bytes and makes them the cuBLAS handle's
// workspace (blas.go), once, after open and before any capture.
func (m *dnn) setBLASWorkspace(n int) error {
	if m.blasWS != 0 {
		return fmt.Errorf("cuda: the cuBLAS workspace is already set")
	}
	p, err := m.host.alloc(n)
	if err != nil {
		return fmt.Errorf("cuda: cuBLAS workspace of %d bytes: %w", n, err)
	}
	if err := m.host.do(func() error {
		return dnnError("cublasSetWorkspace_v2", C.faster_blas_workspace(m.cublas, C.ulonglong(p), C.size_t(n)))
	}); err != nil {
		m.host.free(p)
		return err
	}
	m.blasWS, m.blasWSSize = p, n
	return nil
}

// dnnHost is what dnn needs of its machine.
type dnnHost interface {
	do(func() error) error // with the device's context current
	alloc(bytes int) (uint64, error)
	free(p uint64)
	sync() error
}

// algo is one chosen convolution algorithm and its workspace.
type algo struct {
	id   int
	ws   int
	math int // the math type it was ranked with (faster_conv_choose)
}

// findWorkspace is the workspace cudnnFind…AlgorithmEx may measure
// algorithms in (PyTorch lets cudnn.benchmark try what fits free memory;
// a fixed cap keeps a plan's memory known).
const findWorkspace = 256 << 20

// dnnError is a failed cuDNN or cuBLAS call.
func dnnError(call string, code C.int) error {
	if code == 0 {
		return nil
	}
	name := "error"
	switch {
	case code > 0 && loaded(CUDNN) && strings.HasPrefix(call, "cudnn"):
		name = C.GoString(C.call_cudnnGetErrorString(code))
	case strings.HasPrefix(call, "cublas"):
		name = cublasStatusName(int(code))
	}
	return &Error{Call: call, Code: int(code), Name: name}
}

// workspace grows the shared workspace to n bytes (after the queued work
// that may use the old one).
func (m *dnn) workspace(n int) (uint64, error) {
	if n <= m.wsSize && m.ws != 0 {
		return m.ws, nil
	}
	if m.ws != 0 {
		if err := m.host.sync(); err != nil {
			return 0, err
		}
		m.host.free(m.ws)
		m.ws, m.wsSize = 0, 0
	}
	p, err := m.host.alloc(n)
	if err != nil {
		return 0, fmt.Errorf("cuda: convolution workspace of %d bytes: %w", n, err)
	}
	m.ws, m.wsSize = p, n
	return p, nil
}

func (m *dnn) conv(c *convShape, dir convDir, a, b, out uint64) error {
	cs, _ := c.state.(*C.struct_faster_conv)
	err := m.host.do(func() error {
		var call *C.char
		if cs == nil {
			cs = (*C.struct_faster_conv)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_faster_conv{}))))
			if r := C.faster_conv_create(cs, C.int(c.N), C.int(c.C), C.int(c.H), C.int(c.W), C.int(c.K), C.int(c.R),
				C.int(c.Pad), C.int(c.Stride), C.int(c.OH), C.int(c.OW), C.int(cudnnType(c.Dtype)), C.int(m.mathFor(c.Dtype)), C.int(layoutOf(c)), &call); r != 0 {
				C.faster_conv_destroy(cs)
				C.free(unsafe.Pointer(cs))
				cs = nil
				return dnnError(C.GoString(call), r)
			}
			c.state = cs
			c.releaseState = func() {
				m.host.do(func() error {
					C.faster_conv_destroy(cs)
					C.free(unsafe.Pointer(cs))
					return nil
				})
			}
		}
		if cs.algo[dir] >= 0 {
			return nil
		}
		key := fmt.Sprintf("%s %s math %d", c, dir, m.mathFor(c.Dtype))
		if a, ok := m.algos[key]; ok {
			cs.algo[dir], cs.ws[dir], cs.math[dir] = C.int(a.id), C.size_t(a.ws), C.int(a.math)
			return nil
		}
		// Found within findWorkspace; ranked, the first whose workspace
		// fits it preferred.
		var ws uint64
		wsBytes := findWorkspace
		if m.autotune {
			var err error
			if ws, err = m.workspace(findWorkspace); err != nil {
				return err
			}
		}
		var perf [C.FASTER_NPERF]C.struct_faster_conv_perf
		var nperf C.int
		start := time.Now()
		if r := C.faster_conv_choose(m.cudnn, cs, C.int(dir), b2c(m.autotune), C.ulonglong(a), C.ulonglong(b), C.ulonglong(out),
			C.ulonglong(ws), C.size_t(wsBytes), &perf[0], &nperf, &call); r != 0 {
			return fmt.Errorf("%s %s: %w", c, dir, dnnError(C.GoString(call), r))
		}
		m.algos[key] = algo{id: int(cs.algo[dir]), ws: int(cs.ws[dir]), math: int(cs.math[dir])}
		if m.autotune {
			ch := train.TuneChoice{Op: c.String() + " " + dir.String(), Chosen: fmt.Sprintf("algo %d", cs.algo[dir]),
				Seconds: time.Since(start).Seconds()}
			for _, p := range perf[:nperf] {
				k := train.TuneCandidate{Name: fmt.Sprintf("algo %d", p.algo), Seconds: float64(p.time) / 1000}
				if p.status != cudnnStatusSuccess {
					k.Err, k.Seconds = dnnError("cudnnFind…AlgorithmEx", p.status).Error(), 0
				} else if p.memory > findWorkspace {
					k.Err = fmt.Sprintf("its workspace, %d bytes, over the %d it was found in", p.memory, findWorkspace)
				}
				ch.Candidates = append(ch.Candidates, k)
			}
			m.choices = append(m.choices, ch)
		}
		return nil
	})
	if err != nil {
		return err
	}
	ws, err := m.workspace(max(int(cs.ws[dir]), 1))
	if err != nil {
		return err
	}
	return m.host.do(func() error {
		var call *C.char
		if r := C.faster_conv_run(m.cudnn, cs, C.int(dir), C.ulonglong(a), C.ulonglong(b), C.ulonglong(out), C.ulonglong(ws),
			C.size_t(cs.ws[dir]), &call); r != 0 {
			return fmt.Errorf("%s %s: %w", c, dir, dnnError(C.GoString(call), r))
		}
		return nil
	})
}

func op(t bool) C.int {
	if t {
		return cublasOpT
	}
	return cublasOpN
}

// cudnnType is cuDNN's data type of d.
func cudnnType(d dtype) int {
	switch d {
	case dtHalf:
		return cudnnDataHalf
	case dtBF16:
		return cudnnDataBFloat16
	}
	return cudnnDataFloat
}

// mathFor is the convolution math type for tensors of type d: the
// machine's (TF32 allowed) for float, tensor cores for 16-bit (PyTorch
// sets CUDNN_TENSOR_OP_MATH on its half and bfloat16 descriptors).
func (m *dnn) mathFor(d dtype) int {
	if d == dtFloat {
		return m.math
	}
	return cudnnTensorOpMath
}

func (m *dnn) gemm(g gemmArgs) error {
	if g.In != dtFloat {
		ab := cudaR16F
		if g.In == dtBF16 {
			ab = cudaR16BF
		}
		return m.host.do(func() error {
			r := C.faster_gemm_ex(m.cublas, op(g.TA), op(g.TB), C.int(g.M), C.int(g.N), C.int(g.K), C.float(g.Alpha), C.ulonglong(g.A),
				C.int(ab), C.int(g.LDA), C.ulonglong(g.B), C.int(g.LDB), C.float(g.Beta), C.ulonglong(g.C), C.int(g.LDC))
			if r != 0 {
				return fmt.Errorf("cublasGemmEx %s %dx%dx%d: %w", g.In, g.M, g.N, g.K, &Error{Call: "cublasGemmEx", Code: int(r), Name: cublasStatusName(int(r))})
			}
			return nil
		})
	}
	return m.host.do(func() error {
		r := C.faster_sgemm(m.cublas, op(g.TA), op(g.TB), C.int(g.M), C.int(g.N), C.int(g.K), C.float(g.Alpha), C.ulonglong(g.A),
			C.int(g.LDA), C.ulonglong(g.B), C.int(g.LDB), C.float(g.Beta), C.ulonglong(g.C), C.int(g.LDC))
		if r != 0 {
			return fmt.Errorf("cublasSgemm_v2 %dx%dx%d: %w", g.M, g.N, g.K, &Error{Call: "cublasSgemm_v2", Code: int(r), Name: cublasStatusName(int(r))})
		}
		return nil
	})
}

func (m *dnn) tuneChoices() []train.TuneChoice { return slices.Clone(m.choices) }

// workspaceAddr is the workspace's address (0: none yet): the recorder's
// (workspacer).
func (m *dnn) workspaceAddr() uint64 { return m.ws }

// releaseWorkspace frees the workspaces, the convolutions' and cuBLAS's;
// the handles must run nothing more.
func (m *dnn) releaseWorkspace() {
	if m.ws != 0 {
		m.host.free(m.ws)
		m.ws, m.wsSize = 0, 0
	}
	if m.blasWS != 0 {
		m.host.free(m.blasWS)
		m.blasWS, m.blasWSSize = 0, 0
	}
}

// convTime is one direction's fastest algorithm as cudnnFind…AlgorithmEx
// measured it, and its time.
type convTime struct {
	Algo int
	Ms   float64
}

// findTimes measures c's three directions (forward, backward data,
// backward filter) in layout format — cudnnTensorNCHW, the backend's, or
// cudnnTensorNHWC, channels_last — with cudnnFind…AlgorithmEx on scratch
// buffers of its own: each direction's fastest algorithm that fits the
// find workspace, and its time. It chooses nothing for the backend (what
// TestGPUConvLayouts reports: whether channels_last would pay).
func (m *dnn) findTimes(c convShape, format int) ([3]convTime, error) {
	var out [3]convTime
	elem := 4
	if c.Dtype != dtFloat {
		elem = 2
	}
	sizes := []int{c.N * c.C * c.H * c.W, c.K * c.C * c.R * c.R, c.N * c.K * c.OH * c.OW}
	var bufs [3]uint64
	defer func() {
		m.host.sync()
		for _, p := range bufs {
			if p != 0 {
				m.host.free(p)
			}
		}
	}()
	for i, n := range sizes {
		p, err := m.host.alloc(n * elem)
		if err != nil {
			return out, err
		}
		bufs[i] = p
	}
	ws, err := m.workspace(findWorkspace)
	if err != nil {
		return out, err
	}
	x, w, y := bufs[0], bufs[1], bufs[2]
	err = m.host.do(func() error {
		var call *C.char
		cs := (*C.struct_faster_conv)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_faster_conv{}))))
		defer func() {
			C.faster_conv_destroy(cs)
			C.free(unsafe.Pointer(cs))
		}()
		if r := C.faster_conv_create(cs, C.int(c.N), C.int(c.C), C.int(c.H), C.int(c.W), C.int(c.K), C.int(c.R),
			C.int(c.Pad), C.int(c.Stride), C.int(c.OH), C.int(c.OW), C.int(cudnnType(c.Dtype)), C.int(m.mathFor(c.Dtype)), C.int(format), &call); r != 0 {
			return dnnError(C.GoString(call), r)
		}
		// Each direction's buffers in faster_conv_choose's order.
		args := [3][3]uint64{{x, w, y}, {w, y, x}, {x, y, w}}
		for dir := range 3 {
			var perf [C.FASTER_NPERF]C.struct_faster_conv_perf
			var nperf C.int
			a := args[dir]
			if r := C.faster_conv_choose(m.cudnn, cs, C.int(dir), 1, C.ulonglong(a[0]), C.ulonglong(a[1]), C.ulonglong(a[2]),
				C.ulonglong(ws), C.size_t(findWorkspace), &perf[0], &nperf, &call); r != 0 {
				return fmt.Errorf("%s %s: %w", &c, convDir(dir), dnnError(C.GoString(call), r))
			}
			out[dir] = convTime{Algo: int(cs.algo[dir]), Ms: -1}
			for _, p := range perf[:nperf] {
				if p.algo == cs.algo[dir] && p.status == cudnnStatusSuccess {
					out[dir].Ms = float64(p.time)
					break
				}
			}
		}
		return nil
	})
	return out, err
}

// layoutOf is c's cuDNN tensor format.
func layoutOf(c *convShape) int {
	if c.NHWC {
		return cudnnTensorNHWC
	}
	return cudnnTensorNCHW
}
