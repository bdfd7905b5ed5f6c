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
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/cuda/kernels"
)

// gpuMachine is the machine on a GPU: Device's memory and kernels.cu
// compiled by NVRTC, with a stream of its own on which kernels, cuDNN and
// cuBLAS queue their work; copies and sync wait for it. PREPARED, NOT YET
// RUN on a GPU.
type gpuMachine struct {
	mu       sync.Mutex
	d        *Device
	mod      *Module
	fns      map[string]*Function
	stream   unsafe.Pointer
	cudnn    unsafe.Pointer
	cublas   unsafe.Pointer
	autotune bool // cudnnFind…AlgorithmEx (cudnn.benchmark) instead of the heuristics
	math     int  // cuDNN's math type
	ws       uint64
	wsSize   int
	ordinal  int
	// algos are the algorithms chosen by shape and direction: a shape
	// seen before (by any op) is not chosen again; choices are
	// autotune's, for Tuner.
	algos   map[string]algo
	choices []train.TuneChoice
}

// algo is one chosen convolution algorithm and its workspace.
type algo struct {
	id int
	ws int
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
	if code > 0 && loaded(CUDNN) && len(call) >= 5 && call[:5] == "cudnn" {
		name = C.GoString(C.call_cudnnGetErrorString(code))
	}
	return &Error{Call: call, Code: int(code), Name: name}
}

// openGPU opens device ordinal and the machine on it: the libraries, the
// primary context, the stream and handles, kernels.cu compiled.
func openGPU(ordinal int, autotune bool) (*gpuMachine, error) {
	d, err := Open(Options{Ordinal: ordinal})
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, l := range []Library{CUDNN, CUBLAS} {
		if !loaded(l) {
			missing = append(missing, l.String())
		}
	}
	if len(missing) > 0 {
		d.Close()
		return nil, fmt.Errorf("cuda: the backend needs %v: %w", missing, &LoadError{Attempts: load()})
	}
	m := &gpuMachine{d: d, fns: map[string]*Function{}, autotune: autotune, math: cudnnDefaultMath, ordinal: ordinal,
		algos: map[string]algo{}}
	err = d.do(func() error {
		var call *C.char
		if r := C.faster_gpu_setup(&m.stream, &m.cudnn, &m.cublas, C.int(cublasDefaultMath), &call); r != 0 {
			return dnnError(C.GoString(call), r)
		}
		return nil
	})
	if err == nil {
		m.mod, err = d.Kernels()
	}
	if err != nil {
		m.close()
		return nil, err
	}
	return m, nil
}

func (m *gpuMachine) alloc(bytes int) (uint64, error) {
	b, err := m.d.Alloc(bytes)
	return b.ptr, err
}

// free waits for the stream's work (which may use p) and frees p.
func (m *gpuMachine) free(p uint64) {
	m.sync()
	m.d.Free(Buffer{ptr: p})
}

func (m *gpuMachine) copyIn(dst uint64, src unsafe.Pointer, bytes int) error {
	if bytes == 0 {
		return nil
	}
	return m.d.do(func() error {
		return cuErr("cuMemcpyHtoDAsync", C.faster_copy_in(m.stream, C.ulonglong(dst), src, C.size_t(bytes)))
	})
}

func (m *gpuMachine) copyOut(dst unsafe.Pointer, src uint64, bytes int) error {
	if bytes == 0 {
		return nil
	}
	return m.d.do(func() error {
		return cuErr("cuMemcpyDtoHAsync", C.faster_copy_out(m.stream, dst, C.ulonglong(src), C.size_t(bytes)))
	})
}

func (m *gpuMachine) zero(p uint64, bytes int) error {
	if bytes == 0 {
		return nil
	}
	return m.d.do(func() error {
		return cuErr("cuMemsetD8Async", C.faster_zero(m.stream, C.ulonglong(p), C.size_t(bytes)))
	})
}

func (m *gpuMachine) launch(name string, l kernels.Launch, args ...uint64) error {
	m.mu.Lock()
	f, ok := m.fns[name]
	m.mu.Unlock()
	if !ok {
		var err error
		if f, err = m.mod.Function(name); err != nil {
			return err
		}
		m.mu.Lock()
		m.fns[name] = f
		m.mu.Unlock()
	}
	vals := make([]C.ulonglong, max(len(args), 1))
	for i, a := range args {
		vals[i] = C.ulonglong(a)
	}
	return m.d.do(func() error {
		return cuErr("cuLaunchKernel "+name, C.faster_launch_on(m.stream, f.f, C.uint(l.Grid), C.uint(l.Block), &vals[0], C.int(len(args))))
	})
}

// workspace grows the shared workspace to n bytes (after the queued work
// that may use the old one).
func (m *gpuMachine) workspace(n int) (uint64, error) {
	if n <= m.wsSize && m.ws != 0 {
		return m.ws, nil
	}
	if m.ws != 0 {
		if err := m.sync(); err != nil {
			return 0, err
		}
		m.free(m.ws)
		m.ws, m.wsSize = 0, 0
	}
	p, err := m.alloc(n)
	if err != nil {
		return 0, fmt.Errorf("cuda: convolution workspace of %d bytes: %w", n, err)
	}
	m.ws, m.wsSize = p, n
	return p, nil
}

func (m *gpuMachine) conv(c *convShape, dir convDir, a, b, out uint64) error {
	cs, _ := c.state.(*C.struct_faster_conv)
	err := m.d.do(func() error {
		var call *C.char
		if cs == nil {
			cs = (*C.struct_faster_conv)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_faster_conv{}))))
			if r := C.faster_conv_create(cs, C.int(c.N), C.int(c.C), C.int(c.H), C.int(c.W), C.int(c.K), C.int(c.R),
				C.int(c.Pad), C.int(c.Stride), C.int(c.OH), C.int(c.OW), C.int(m.math), &call); r != 0 {
				C.faster_conv_destroy(cs)
				C.free(unsafe.Pointer(cs))
				cs = nil
				return dnnError(C.GoString(call), r)
			}
			c.state = cs
			c.releaseState = func() {
				m.d.do(func() error {
					C.faster_conv_destroy(cs)
					C.free(unsafe.Pointer(cs))
					return nil
				})
			}
		}
		if cs.algo[dir] >= 0 {
			return nil
		}
		key := fmt.Sprintf("%s %s math %d", c, dir, m.math)
		if a, ok := m.algos[key]; ok {
			cs.algo[dir], cs.ws[dir] = C.int(a.id), C.size_t(a.ws)
			return nil
		}
		var ws uint64
		var wsBytes int
		if m.autotune {
			var err error
			if ws, err = m.workspace(findWorkspace); err != nil {
				return err
			}
			wsBytes = findWorkspace
		}
		var perf [C.FASTER_NPERF]C.struct_faster_conv_perf
		var nperf C.int
		start := time.Now()
		if r := C.faster_conv_choose(m.cudnn, cs, C.int(dir), b2c(m.autotune), C.ulonglong(a), C.ulonglong(b), C.ulonglong(out),
			C.ulonglong(ws), C.size_t(wsBytes), &perf[0], &nperf, &call); r != 0 {
			return fmt.Errorf("%s %s: %w", c, dir, dnnError(C.GoString(call), r))
		}
		m.algos[key] = algo{id: int(cs.algo[dir]), ws: int(cs.ws[dir])}
		if m.autotune {
			ch := train.TuneChoice{Op: c.String() + " " + dir.String(), Chosen: fmt.Sprintf("algo %d", cs.algo[dir]),
				Seconds: time.Since(start).Seconds()}
			for _, p := range perf[:nperf] {
				k := train.TuneCandidate{Name: fmt.Sprintf("algo %d", p.algo), Seconds: float64(p.time) / 1000}
				if p.status != cudnnStatusSuccess {
					k.Err, k.Seconds = dnnError("cudnnFind…AlgorithmEx", p.status).Error(), 0
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
	return m.d.do(func() error {
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

func (m *gpuMachine) gemm(g gemmArgs) error {
	return m.d.do(func() error {
		r := C.faster_sgemm(m.cublas, op(g.TA), op(g.TB), C.int(g.M), C.int(g.N), C.int(g.K), C.float(g.Alpha), C.ulonglong(g.A),
			C.int(g.LDA), C.ulonglong(g.B), C.int(g.LDB), C.float(g.Beta), C.ulonglong(g.C), C.int(g.LDC))
		if r != 0 {
			return fmt.Errorf("cublasSgemm_v2 %dx%dx%d: %w", g.M, g.N, g.K, &Error{Call: "cublasSgemm_v2", Code: int(r), Name: "cublasStatus"})
		}
		return nil
	})
}

func (m *gpuMachine) sync() error {
	return m.d.do(func() error { return cuErr("cuStreamSynchronize", C.faster_stream_sync(m.stream)) })
}

func (m *gpuMachine) freeMemory() (int64, error) {
	var free, total C.size_t
	err := m.d.do(func() error { return cuErr("cuMemGetInfo", C.faster_mem_info(&free, &total)) })
	return int64(free), err
}

func (m *gpuMachine) facts() kernels.Facts { return m.d.Facts.Facts }

func (m *gpuMachine) tuneChoices() []train.TuneChoice { return slices.Clone(m.choices) }
func (m *gpuMachine) device() string                  { return fmt.Sprintf("cuda:%d", m.ordinal) }

func (m *gpuMachine) close() error {
	var errs []error
	if m.stream != nil {
		errs = append(errs, m.sync())
	}
	if m.ws != 0 {
		m.free(m.ws)
		m.ws = 0
	}
	m.d.do(func() error {
		C.faster_gpu_teardown(m.stream, m.cudnn, m.cublas)
		return nil
	})
	m.stream, m.cudnn, m.cublas = nil, nil, nil
	errs = append(errs, m.d.Close())
	return errors.Join(errs...)
}
