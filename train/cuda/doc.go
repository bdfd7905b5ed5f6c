// Package cuda is the beginning of the CUDA backend (issue 37 §2): the
// CUDA libraries loaded at run time, the device, the NVRTC compile cache
// and, in package kernels, the backend's own kernels. It does not yet
// implement train.Backend, so it registers nothing: train.Open("cuda")
// waits for the engine's device interfaces (§1).
//
// # Libraries
//
// No CUDA header exists where the project is built, so the package
// declares the few functions it calls itself (decls.h: handles as void *,
// enums as int; device facts read with cuDeviceGetAttribute, never a
// version-dependent struct) and opens the libraries with dlopen by soname:
//
//	library    sonames tried, in order              Open needs it
//	driver     libcuda.so.1                          yes
//	cudart     libcudart.so.13, libcudart.so.12      no
//	nvrtc      libnvrtc.so.13, libnvrtc.so.12        yes
//	cublas     libcublas.so.13                       no
//	cublasLt   libcublasLt.so.13                     no
//	cudnn      libcudnn.so.9                         no
//	nccl       libnccl.so.2                          no
//
// A library counts as opened only when every symbol declared for it
// resolves (dlsym); otherwise the next soname is tried. Without a driver,
// Open returns a *LoadError (errors.Is ErrNoDriver) naming every soname
// tried and dlerror's words for each; Probe says the same in one line for
// `faster --version`. Built without cgo, Open returns ErrNoCgo.
//
// Decls lists decls.h in Go; tests check it against the file and against
// the loader's table (dl.c), and probe/ checks decls.h against the real
// headers on the GPU machine (prepared, not yet run there).
//
// # Kernels and their cache
//
// Device.Kernels compiles kernels.cu (package kernels) with NVRTC for the
// device's architecture (sm_XY from its compute capability), with
// --fmad=false, and loads it. The kernels: casts, input normalisation,
// SGD, the GradScaler's unscale, cross-entropy, the layers the cuDNN and
// cuBLAS calls leave (ReLU, add, bias and fused ReLU, bias gradient,
// BatchNorm training, eval and backward with or without the ReLU before
// it, max and average pooling forward and backward as gathers) and the
// weights' bookkeeping (EMA update, swap, copy, fill); package kernels'
// documentation lists them. Each is called by name with one 8-byte slot an
// argument (Arg); kernels.LaunchCPU runs the CPU build of the same kernel
// from the same slots, so a CPU twin of the backend runs what the GPU
// does. Compiled images are kept in a Cache keyed by
// architecture, NVRTC version and the source's hash, written atomically; a
// corrupt or foreign entry is compiled again. Launch geometry comes from
// kernels.Facts.Plan with the device's SM count and thread limits.
//
// # The device check
//
// gpu_test.go runs every kernel on the GPU at a ThinNet and a ResNet-18
// step's sizes against its CPU build; gpucheck.sh builds its test binary
// here and runs it on the GPU machine in one call. Prepared, not yet run.
//
// # Concurrency
//
// The libraries are loaded once (sync.Once). A Device's methods may be
// called from any goroutine: each locks its OS thread and makes the
// device's primary context current for the call. Launches are synchronous
// for now (the legacy default stream, then cuCtxSynchronize).
package cuda
