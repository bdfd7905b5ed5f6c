//go:build cgo

package cuda

/*
#include <stdlib.h>
#include "dl.h"
#include "calls.h"
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"

	"github.com/faster-training/faster/train/cuda/kernels"
)

// Probe says what a binary finds on this machine, in one line: "no
// driver: tried libcuda.so.1 (…)" without one (Open's error names every
// library tried); else the driver's version, the
// devices and the libraries opened (faster --version's cuda).
func Probe() string {
	if err := requiredMissing(); err != nil {
		return describe(load(), true)
	}
	var n C.int
	ver := DriverVersion() // needs no cuInit
	if err := cuErr("cuInit", C.call_cuInit(0)); err != nil {
		return fmt.Sprintf("driver %d.%d found, cuInit failed: %s", ver/1000, ver%1000/10, err)
	}
	if err := cuErr("cuDeviceGetCount", C.call_cuDeviceGetCount(&n)); err != nil {
		return err.Error()
	}
	s := fmt.Sprintf("driver %d.%d, %d device(s)", ver/1000, ver%1000/10, n)
	if n > 0 {
		if f, err := facts(0); err == nil {
			s += fmt.Sprintf(" (0: %s, %s, %d SMs)", f.Name, f.Arch, f.SMs)
		}
	}
	return s + "; " + versions() + "; " + describe(load(), false)
}

// versions are the libraries' own versions.
func versions() string {
	var v []string
	if loaded(NVRTC) {
		v = append(v, "nvrtc "+nvrtcVersion())
	}
	if loaded(Runtime) {
		var r C.int
		C.call_cudaRuntimeGetVersion(&r)
		v = append(v, fmt.Sprintf("cudart %d", r))
	}
	if loaded(CUBLASLt) {
		v = append(v, fmt.Sprintf("cublasLt %d", C.call_cublasLtGetVersion()))
	}
	if loaded(CUDNN) {
		v = append(v, fmt.Sprintf("cudnn %d", C.call_cudnnGetVersion()))
	}
	if loaded(NCCL) {
		var r C.int
		C.call_ncclGetVersion(&r)
		v = append(v, fmt.Sprintf("nccl %d", r))
	}
	return strings.Join(v, ", ")
}

// facts reads device ordinal's facts (after cuInit).
func facts(ordinal int) (Facts, error) {
	var d C.int
	if err := cuErr("cuDeviceGet", C.call_cuDeviceGet(&d, C.int(ordinal))); err != nil {
		return Facts{}, err
	}
	attr := func(a int) (int, error) {
		var v C.int
		err := cuErr("cuDeviceGetAttribute", C.call_cuDeviceGetAttribute(&v, C.int(a), d))
		return int(v), err
	}
	var f Facts
	var err error
	var major, minor int
	for _, p := range []struct {
		attr int
		dst  *int
	}{{attrCCMajor, &major}, {attrCCMinor, &minor}, {attrSMs, &f.SMs},
		{attrMaxThreadsPerBlock, &f.MaxThreadsPerBlock}, {attrMaxThreadsPerSM, &f.MaxThreadsPerSM}} {
		if *p.dst, err = attr(p.attr); err != nil {
			return Facts{}, err
		}
	}
	f.Arch = Arch(major, minor)
	name := make([]byte, 256)
	if err := cuErr("cuDeviceGetName", C.call_cuDeviceGetName((*C.char)(unsafe.Pointer(&name[0])), 256, d)); err != nil {
		return Facts{}, err
	}
	f.Name = strings.TrimRight(string(name), "\x00")
	var mem C.size_t
	if err := cuErr("cuDeviceTotalMem", C.call_cuDeviceTotalMem(&mem, d)); err != nil {
		return Facts{}, err
	}
	f.Memory = uint64(mem)
	f.Driver = DriverVersion()
	f.NVRTC = nvrtcVersion()
	return f, f.Facts.Validate()
}

// Open loads the CUDA libraries and opens device o.Ordinal. Without a
// driver the error is a *LoadError (errors.Is ErrNoDriver) naming every
// library tried and why it did not open.
func Open(o Options) (*Device, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := requiredMissing(); err != nil {
		return nil, err
	}
	if err := cuErr("cuInit", C.call_cuInit(0)); err != nil {
		return nil, err
	}
	var n C.int
	if err := cuErr("cuDeviceGetCount", C.call_cuDeviceGetCount(&n)); err != nil {
		return nil, err
	}
	if o.Ordinal >= int(n) {
		return nil, fmt.Errorf("cuda: device %d: the machine has %d", o.Ordinal, n)
	}
	f, err := facts(o.Ordinal)
	if err != nil {
		return nil, err
	}
	d := &Device{Facts: f}
	if err := cuErr("cuDeviceGet", C.call_cuDeviceGet((*C.int)(unsafe.Pointer(&d.ordinal)), C.int(o.Ordinal))); err != nil {
		return nil, err
	}
	if err := cuErr("cuDevicePrimaryCtxRetain", C.call_cuDevicePrimaryCtxRetain(&d.ctx, C.int(d.ordinal))); err != nil {
		return nil, err
	}
	if !o.NoCache {
		dir := o.CacheDir
		if dir == "" {
			base, err := os.UserCacheDir()
			if err != nil {
				base = os.TempDir()
			}
			dir = filepath.Join(base, "faster", "nvrtc")
		}
		d.cache = &Cache{Dir: dir}
	}
	return d, nil
}

// do runs f on a locked thread with d's context current.
func (d *Device) do(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cuErr("cuCtxSetCurrent", C.call_cuCtxSetCurrent(d.ctx)); err != nil {
		return err
	}
	return f()
}

// Close unloads the modules and releases the primary context.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	return d.do(func() error {
		for _, m := range d.modules {
			C.call_cuModuleUnload(m)
		}
		return cuErr("cuDevicePrimaryCtxRelease", C.call_cuDevicePrimaryCtxRelease(C.int(d.ordinal)))
	})
}

// Alloc allocates n bytes of device memory, zeroed (cuMemsetD8: on the
// legacy stream, so it waits for every blocking stream of the context).
func (d *Device) Alloc(n int) (Buffer, error) {
	b, err := d.allocRaw(n)
	if err != nil {
		return b, err
	}
	err = d.do(func() error {
		return cuErr("cuMemsetD8", C.call_cuMemsetD8(C.ulonglong(b.ptr), 0, C.size_t(max(n, 1))))
	})
	return b, err
}

// allocRaw allocates n bytes of device memory, not zeroed.
func (d *Device) allocRaw(n int) (Buffer, error) {
	var b Buffer
	err := d.do(func() error {
		if err := cuErr("cuMemAlloc", C.call_cuMemAlloc((*C.ulonglong)(unsafe.Pointer(&b.ptr)), C.size_t(max(n, 1)))); err != nil {
			return err
		}
		b.size = n
		return nil
	})
	return b, err
}

// Free releases b.
func (d *Device) Free(b Buffer) error {
	return d.do(func() error { return cuErr("cuMemFree", C.call_cuMemFree(C.ulonglong(b.ptr))) })
}

// CopyIn copies src (a slice of plain numbers) into b.
func CopyIn[T any](d *Device, b Buffer, src []T) error {
	n := len(src) * int(unsafe.Sizeof(*new(T)))
	if n > b.size {
		return fmt.Errorf("cuda: copy of %d bytes into a buffer of %d", n, b.size)
	}
	if n == 0 {
		return nil
	}
	return d.do(func() error {
		return cuErr("cuMemcpyHtoD", C.call_cuMemcpyHtoD(C.ulonglong(b.ptr), unsafe.Pointer(&src[0]), C.size_t(n)))
	})
}

// CopyOut copies b's first bytes into dst (a slice of plain numbers).
func CopyOut[T any](d *Device, dst []T, b Buffer) error {
	n := len(dst) * int(unsafe.Sizeof(*new(T)))
	if n > b.size {
		return fmt.Errorf("cuda: copy of %d bytes out of a buffer of %d", n, b.size)
	}
	if n == 0 {
		return nil
	}
	return d.do(func() error {
		return cuErr("cuMemcpyDtoH", C.call_cuMemcpyDtoH(unsafe.Pointer(&dst[0]), C.ulonglong(b.ptr), C.size_t(n)))
	})
}

// Sync waits for the device's work.
func (d *Device) Sync() error {
	return d.do(func() error { return cuErr("cuCtxSynchronize", C.call_cuCtxSynchronize()) })
}

// compile runs NVRTC on k for k.Arch and returns the cubin; a failed
// compile's error carries NVRTC's log.
func compile(k CacheKey) ([]byte, error) {
	img, _, err := compileLog(k)
	return img, err
}

// compileLog is compile that also returns NVRTC's log of a successful
// compile (ptxas's report under --ptxas-options=-v).
func compileLog(k CacheKey) ([]byte, string, error) {
	src, name := C.CString(k.Source), C.CString("kernels.cu")
	defer C.free(unsafe.Pointer(src))
	defer C.free(unsafe.Pointer(name))
	var prog unsafe.Pointer
	if err := nvrtcErr("nvrtcCreateProgram", C.call_nvrtcCreateProgram(&prog, src, name)); err != nil {
		return nil, "", err
	}
	defer C.call_nvrtcDestroyProgram(&prog)
	opts := append([]string{"--gpu-architecture=" + k.Arch}, k.Options...)
	copts := make([]*C.char, len(opts))
	for i, o := range opts {
		copts[i] = C.CString(o)
		defer C.free(unsafe.Pointer(copts[i]))
	}
	// copts holds C pointers only: it may be passed to C.
	if err := nvrtcErr("nvrtcCompileProgram", C.call_nvrtcCompileProgram(prog, C.int(len(copts)), &copts[0])); err != nil {
		return nil, "", fmt.Errorf("%w\n%s", err, programLog(prog))
	}
	var n C.size_t
	if err := nvrtcErr("nvrtcGetCUBINSize", C.call_nvrtcGetCUBINSize(prog, &n)); err != nil {
		return nil, "", err
	}
	img := make([]byte, int(n))
	if err := nvrtcErr("nvrtcGetCUBIN", C.call_nvrtcGetCUBIN(prog, (*C.char)(unsafe.Pointer(&img[0])))); err != nil {
		return nil, "", err
	}
	return img, programLog(prog), nil
}

// programLog is NVRTC's log of prog.
func programLog(prog unsafe.Pointer) string {
	var n C.size_t
	C.call_nvrtcGetProgramLogSize(prog, &n)
	log := make([]byte, max(int(n), 1))
	C.call_nvrtcGetProgramLog(prog, (*C.char)(unsafe.Pointer(&log[0])))
	return strings.TrimRight(string(log), "\x00\n")
}

// Compile compiles src for the device with NVRTC (through the cache) and
// loads it.
func (d *Device) Compile(src string) (*Module, error) {
	k := CacheKey{Arch: d.Arch, NVRTC: d.NVRTC, Source: src, Options: nvrtcOptions}
	var img []byte
	var out Outcome
	var err error
	if d.cache != nil {
		img, out, err = d.cache.Load(k, compile)
	} else {
		img, err = compile(k)
	}
	if err != nil {
		return nil, err
	}
	m := &Module{d: d, Outcome: out, aligns: kernels.AlignsOf(src)}
	err = d.do(func() error {
		return cuErr("cuModuleLoadData", C.call_cuModuleLoadData(&m.m, unsafe.Pointer(&img[0])))
	})
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.modules = append(d.modules, m.m)
	d.mu.Unlock()
	return m, nil
}

// Function looks name up in m.
func (m *Module) Function(name string) (*Function, error) {
	f := &Function{d: m.d, Name: name, align: m.aligns[name]}
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	err := m.d.do(func() error {
		return cuErr("cuModuleGetFunction "+name, C.call_cuModuleGetFunction(&f.f, m.m, cs))
	})
	return f, err
}

// Launch runs f with launch l and args (in the kernel's parameter order
// and types) on the legacy default stream, and waits for the context's
// work (cuCtxSynchronize): every stream's, not f's alone.
func (f *Function) Launch(l kernels.Launch, args ...Arg) error {
	return f.d.do(func() error {
		if err := f.launch(nil, l, args); err != nil {
			return err
		}
		return cuErr("cuCtxSynchronize after "+f.Name, C.call_cuCtxSynchronize())
	})
}

// LaunchOn queues f with launch l and args on stream, a CUstream of f's
// device's primary context (a cudaStream_t the CUDA runtime made there is
// one), and returns without waiting: the caller synchronises the stream
// (package gpudecode/nvjpeg's stage, on a stream of its own).
func (f *Function) LaunchOn(stream unsafe.Pointer, l kernels.Launch, args ...Arg) error {
	return f.d.do(func() error { return f.launch(stream, l, args) })
}

// launch is cuLaunchKernel of f on stream (on d.do's thread), once its
// pointers are seen aligned: a misaligned one would fault
// (CUDA_ERROR_MISALIGNED_ADDRESS) and lose the context.
func (f *Function) launch(stream unsafe.Pointer, l kernels.Launch, args []Arg) error {
	vals := make([]uint64, len(args))
	for i, a := range args {
		vals[i] = a.v
	}
	if err := kernels.CheckAligned(f.Name, f.align, vals); err != nil {
		return err
	}
	var p *C.ulonglong
	if len(vals) > 0 {
		p = (*C.ulonglong)(unsafe.Pointer(&vals[0]))
	}
	return cuErr("cuLaunchKernel "+f.Name, C.call_cuLaunchKernelOn(stream, f.f, C.uint(l.Grid), C.uint(l.Block), p, C.int(len(vals))))
}

// Exercise calls each optional library once on d (a handle made and
// destroyed, a version read, an NCCL unique id made) and says what each
// answered: the device check's proof that the declarations work, beyond
// the symbols resolving. A library that did not open is reported so.
func (d *Device) Exercise() []string {
	var rows []string
	say := func(lib Library, format string, args ...any) {
		if !loaded(lib) {
			rows = append(rows, lib.String()+": not opened")
			return
		}
		rows = append(rows, lib.String()+": "+fmt.Sprintf(format, args...))
	}
	d.do(func() error {
		if loaded(Runtime) {
			var v C.int
			r := C.call_cudaRuntimeGetVersion(&v)
			say(Runtime, "cudaRuntimeGetVersion %d → %d", r, v)
		} else {
			say(Runtime, "")
		}
		if loaded(CUBLAS) {
			var h unsafe.Pointer
			r := C.call_cublasCreate(&h)
			var v C.int
			r2 := C.call_cublasGetVersion(h, &v)
			r3 := C.call_cublasDestroy(h)
			say(CUBLAS, "cublasCreate_v2 %d, cublasGetVersion_v2 %d → %d, cublasDestroy_v2 %d", r, r2, v, r3)
		} else {
			say(CUBLAS, "")
		}
		if loaded(CUBLASLt) {
			var h unsafe.Pointer
			r := C.call_cublasLtCreate(&h)
			say(CUBLASLt, "cublasLtCreate %d, cublasLtDestroy %d, version %d", r, C.call_cublasLtDestroy(h), C.call_cublasLtGetVersion())
		} else {
			say(CUBLASLt, "")
		}
		if loaded(CUDNN) {
			var h unsafe.Pointer
			r := C.call_cudnnCreate(&h)
			say(CUDNN, "cudnnCreate %d (%s), cudnnDestroy %d, version %d", r, C.GoString(C.call_cudnnGetErrorString(r)), C.call_cudnnDestroy(h), C.call_cudnnGetVersion())
		} else {
			say(CUDNN, "")
		}
		if loaded(NCCL) {
			id := make([]byte, 128) // ncclUniqueId: char internal[128]
			r := C.call_ncclGetUniqueId(unsafe.Pointer(&id[0]))
			var v C.int
			C.call_ncclGetVersion(&v)
			say(NCCL, "ncclGetUniqueId %d (%s), version %d", r, C.GoString(C.call_ncclGetErrorString(r)), v)
		} else {
			say(NCCL, "")
		}
		var s *C.char
		r := C.call_cuGetErrorString(100, &s)
		if r == cudaSuccess && s != nil {
			rows = append(rows, "driver: cuGetErrorString(100) → "+C.GoString(s))
		}
		return nil
	})
	return rows
}
