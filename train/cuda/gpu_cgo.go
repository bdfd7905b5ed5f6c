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
	"os"
	"sync"
	"unsafe"

	"github.com/faster-training/faster/train"
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
	// capturing: between beginCapture and endCapture, the stream is being
	// captured; copies, allocations, frees and syncs are refused here
	// before the driver refuses them.
	capturing bool
	// ring stages large copies from host memory through pinned buffers
	// (staging.go); nil with BackendOptions.Pageable.
	ring *stagingRing
}

// gpuGraph is a captured step: the graph and its instantiation.
type gpuGraph struct{ graph, exec unsafe.Pointer }

func (m *gpuMachine) refuseCapturing(what string) error {
	if m.capturing {
		return fmt.Errorf("cuda: %s while capturing a step (a CUDA graph cannot hold it)", what)
	}
	return nil
}

func (m *gpuMachine) beginCapture() error {
	if err := m.refuseCapturing("a second capture"); err != nil {
		return err
	}
	if m.closed {
		return errClosed
	}
	err := m.d.do(func() error { return cuErr("cuStreamBeginCapture", C.faster_capture_begin(m.stream)) })
	m.capturing = err == nil
	return err
}

func (m *gpuMachine) endCapture() (record, error) {
	if !m.capturing {
		return nil, errors.New("cuda: endCapture without beginCapture")
	}
	m.capturing = false
	g := &gpuGraph{}
	err := m.d.do(func() error {
		var call *C.char
		if r := C.faster_capture_end(m.stream, &g.graph, &g.exec, &call); r != 0 {
			return cuErr(C.GoString(call), r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

func (m *gpuMachine) replay(r record) error {
	g, ok := r.(*gpuGraph)
	if !ok || g.exec == nil {
		return fmt.Errorf("cuda: replay of %T", r)
	}
	if err := m.refuseCapturing("a replay"); err != nil {
		return err
	}
	return m.d.do(func() error { return cuErr("cuGraphLaunch", C.faster_graph_launch(g.exec, m.stream)) })
}

func (m *gpuMachine) dropRecord(r record) {
	g, ok := r.(*gpuGraph)
	if !ok || m.closed {
		return
	}
	m.sync() // the graph may be running
	m.d.do(func() error {
		C.faster_graph_destroy(g.graph, g.exec)
		return nil
	})
	g.graph, g.exec = nil, nil
}

// openGPU opens device ordinal and the machine on it: the libraries, the
// primary context, the stream and handles, kernels.cu compiled.
func openGPU(ordinal int, o train.BackendOptions) (*gpuMachine, error) {
	autotune := o.Autotune
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
	if !o.Pageable {
		m.ring = newStagingRing(gpuPinner{m})
	}
	m.dnn = dnn{host: m, autotune: autotune, math: cudnnDefaultMath, algos: map[string]algo{}}
	m.stream, err = m.dnn.open()
	if err == nil {
		var n int
		if n, err = blasWorkspaceBytes(d.Arch, os.Getenv(blasWorkspaceEnv)); err == nil {
			err = m.dnn.setBLASWorkspace(n)
		}
	}
	if err == nil {
		m.mod, err = d.Kernels()
	}
	// Every kernel looked up now, not at its first launch: under CUDA's
	// lazy module loading (the default since 12.2) a lookup loads the
	// kernel, which drivers before 12.3 refuse inside a stream capture.
	for name := range kernels.AlignsOf(kernels.Source) {
		if err != nil {
			break
		}
		var f *Function
		if f, err = m.mod.Function(name); err == nil {
			m.fns[name] = f
		}
	}
	if err != nil {
		m.close()
		return nil, err
	}
	return m, nil
}

// dnnOf is the machine's cuDNN and cuBLAS (the layout timings' way in).
func (m *gpuMachine) dnnOf() *dnn { return &m.dnn }

// do runs f with the device's context current.
func (m *gpuMachine) do(f func() error) error { return m.d.do(f) }

func (m *gpuMachine) alloc(bytes int) (uint64, error) {
	if err := m.refuseCapturing("an allocation"); err != nil {
		return 0, err
	}
	// Zeroed on the machine's stream, before whatever is queued there
	// after it, not by cuMemsetD8: a legacy-stream call waits for every
	// blocking stream of the context, and one that another replica is
	// capturing would end that capture with an error.
	b, err := m.d.allocRaw(bytes)
	if err != nil {
		return 0, err
	}
	if err := m.zero(b.ptr, max(bytes, 1)); err != nil {
		m.d.Free(b)
		return 0, err
	}
	return b.ptr, nil
}

// free waits for the stream's work (which may use p) and frees p;
// nothing once the machine is closed (its context took the memory).
func (m *gpuMachine) free(p uint64) {
	if m.closed || m.capturing {
		return
	}
	m.sync()
	m.d.Free(Buffer{ptr: p})
}

func (m *gpuMachine) copyIn(dst uint64, src unsafe.Pointer, bytes int) error {
	if err := m.refuseCapturing("a copy from host memory"); err != nil {
		return err
	}
	if bytes == 0 {
		return nil
	}
	direct := func() error {
		return m.d.do(func() error {
			return cuErr("cuMemcpyHtoDAsync", C.faster_copy_in(m.stream, C.ulonglong(dst), src, C.size_t(bytes)))
		})
	}
	if m.ring == nil {
		return direct()
	}
	return m.ring.copyIn(dst, src, bytes, direct)
}

// hostCopies counts the copies from host memory (Backend.HostCopies).
func (m *gpuMachine) hostCopies() train.HostCopies {
	if m.ring == nil {
		return train.HostCopies{}
	}
	c, _ := m.ring.stats()
	return c
}

// hostMemory is pinned memory whose copies are queued in place (Go
// memory with BackendOptions.Pageable).
func (m *gpuMachine) hostMemory(bytes int) (train.HostMemory, error) {
	if m.ring == nil {
		return goMemory(make([]byte, bytes)), nil
	}
	return m.ring.hostMemory(bytes)
}

// gpuPinner is the staging ring's pinner on m's stream.
type gpuPinner struct{ m *gpuMachine }

func (g gpuPinner) hostAlloc(bytes int) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	err := g.m.d.do(func() error { return cuErr("cuMemHostAlloc", C.faster_host_alloc(&p, C.size_t(bytes))) })
	return p, err
}

func (g gpuPinner) hostFree(p unsafe.Pointer) {
	g.m.d.do(func() error { return cuErr("cuMemFreeHost", C.faster_host_free(p)) })
}

func (g gpuPinner) newEvent() (unsafe.Pointer, error) { return g.m.newEvent() }
func (g gpuPinner) freeEvent(ev unsafe.Pointer)       { g.m.freeEvent(ev) }

func (m *gpuMachine) newEvent() (unsafe.Pointer, error) {
	var ev unsafe.Pointer
	err := m.d.do(func() error { return cuErr("cuEventCreate", C.faster_event_new(&ev)) })
	return ev, err
}

func (m *gpuMachine) freeEvent(ev unsafe.Pointer) {
	if m.closed {
		return
	}
	m.d.do(func() error { return cuErr("cuEventDestroy", C.faster_event_free(ev)) })
}

func (m *gpuMachine) recordEvent(ev unsafe.Pointer) error {
	if err := m.refuseCapturing("an event for another stream"); err != nil {
		return err
	}
	return m.d.do(func() error { return cuErr("cuEventRecord", C.faster_event_record(ev, m.stream)) })
}

// The profiler's timed events (eventTimer).
func (m *gpuMachine) newTimedEvent() (unsafe.Pointer, error) {
	var ev unsafe.Pointer
	err := m.d.do(func() error { return cuErr("cuEventCreate", C.faster_timed_event_new(&ev)) })
	return ev, err
}

func (m *gpuMachine) recordTimed(ev unsafe.Pointer) error { return m.recordEvent(ev) }

func (m *gpuMachine) elapsed(start, end unsafe.Pointer) (float64, error) {
	var ms C.float
	err := m.d.do(func() error { return cuErr("cuEventElapsedTime", C.faster_event_elapsed(&ms, start, end)) })
	return float64(ms), err
}

func (m *gpuMachine) streamWait(ev unsafe.Pointer) error {
	if err := m.refuseCapturing("a wait for another stream"); err != nil {
		return err
	}
	return m.d.do(func() error { return cuErr("cuStreamWaitEvent", C.faster_stream_wait(m.stream, ev)) })
}

func (g gpuPinner) copyPinned(dst uint64, src unsafe.Pointer, bytes int, ev unsafe.Pointer) error {
	return g.m.d.do(func() error {
		var call *C.char
		r := C.faster_copy_pinned(g.m.stream, C.ulonglong(dst), src, C.size_t(bytes), ev, &call)
		if r != 0 {
			return cuErr(C.GoString(call), r)
		}
		return nil
	})
}

func (g gpuPinner) waitEvent(ev unsafe.Pointer) error {
	return g.m.d.do(func() error { return cuErr("cuEventSynchronize", C.faster_event_wait(ev)) })
}

func (m *gpuMachine) copyOut(dst unsafe.Pointer, src uint64, bytes int) error {
	if err := m.refuseCapturing("a read back to host memory"); err != nil {
		return err
	}
	if bytes == 0 {
		return nil
	}
	return m.d.do(func() error {
		return cuErr("cuMemcpyDtoHAsync", C.faster_copy_out(m.stream, dst, C.ulonglong(src), C.size_t(bytes)))
	})
}

func (m *gpuMachine) copyDev(dst, src uint64, bytes int) error {
	if err := m.refuseCapturing("a copy of another producer's memory"); err != nil {
		return err
	}
	if bytes == 0 {
		return nil
	}
	return m.d.do(func() error {
		return cuErr("cuMemcpyDtoDAsync", C.faster_copy_dev(m.stream, C.ulonglong(dst), C.ulonglong(src), C.size_t(bytes)))
	})
}

func (m *gpuMachine) fence() error {
	if err := m.refuseCapturing("a wait for the stream"); err != nil {
		return err
	}
	return m.d.do(func() error {
		var call *C.char
		r := C.faster_fence_wait(m.stream, &call)
		if r != 0 {
			return cuErr(C.GoString(call), r)
		}
		return nil
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
	if err := m.refuseCapturing("a sync"); err != nil {
		return err
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
	if m.ring != nil {
		errs = append(errs, m.ring.close())
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
