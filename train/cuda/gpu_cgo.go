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
	"sync"
	"unsafe"

	"github.com/faster-training/faster/train/cuda/kernels"
)

// gpuMachine is the machine on a GPU: Device's memory and kernels.cu
// compiled by NVRTC, with a stream of its own on which kernels, cuDNN and
// cuBLAS queue their work; copies and sync wait for it. PREPARED, NOT YET
// RUN on a GPU.
type gpuMachine struct {
	dnn     // convolutions and products, on this machine's stream
	mu      sync.Mutex
	d       *Device
	mod     *Module
	fns     map[string]*Function
	stream  unsafe.Pointer
	ordinal int
	closed  bool
}

// errClosed is the error of a call on a closed machine.
var errClosed = errors.New("cuda: the backend is closed")

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
	m := &gpuMachine{d: d, fns: map[string]*Function{}, ordinal: ordinal}
	m.dnn = dnn{host: m, autotune: autotune, math: cudnnDefaultMath, algos: map[string]algo{}}
	m.stream, err = m.dnn.open()
	if err == nil {
		m.mod, err = d.Kernels()
	}
	if err != nil {
		m.close()
		return nil, err
	}
	return m, nil
}

// do runs f with the device's context current.
func (m *gpuMachine) do(f func() error) error { return m.d.do(f) }

func (m *gpuMachine) alloc(bytes int) (uint64, error) {
	b, err := m.d.Alloc(bytes)
	return b.ptr, err
}

// free waits for the stream's work (which may use p) and frees p;
// nothing once the machine is closed (its context took the memory).
func (m *gpuMachine) free(p uint64) {
	if m.closed {
		return
	}
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

func (m *gpuMachine) sync() error {
	if m.closed {
		return errClosed
	}
	return m.d.do(func() error { return cuErr("cuStreamSynchronize", C.faster_stream_sync(m.stream)) })
}

func (m *gpuMachine) freeMemory() (int64, error) {
	var free, total C.size_t
	err := m.d.do(func() error { return cuErr("cuMemGetInfo", C.faster_mem_info(&free, &total)) })
	return int64(free), err
}

func (m *gpuMachine) facts() kernels.Facts { return m.d.Facts.Facts }

func (m *gpuMachine) device() string { return fmt.Sprintf("cuda:%d", m.ordinal) }

func (m *gpuMachine) close() error {
	if m.closed {
		return nil
	}
	var errs []error
	if m.stream != nil {
		errs = append(errs, m.sync())
	}
	m.releaseWorkspace()
	m.d.do(func() error {
		C.faster_gpu_teardown(m.stream, m.cudnn, m.cublas)
		return nil
	})
	m.stream, m.cudnn, m.cublas = nil, nil, nil
	errs = append(errs, m.d.Close())
	m.closed = true
	return errors.Join(errs...)
}
