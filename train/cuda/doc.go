// Package cuda is the cuda train.Backend (issue 37 §2): training with
// every tensor in a GPU's memory, over the CUDA libraries loaded at run
// time, kernels.cu (package kernels) compiled by NVRTC, cuDNN's
// convolutions and cuBLAS's products. The same backend runs over a CPU
// twin, which is how it is tested where there is no GPU.
//
//	train.Open("cuda") ─► OpenBackend ─► Backend ─► machine ─┬─ gpuMachine  (Device, a stream,
//	                                        │                 │               cuDNN, cuBLAS, NVRTC)
//	OpenTwin (tests, planning) ─────────────┘                 └─ twinMachine (C memory, kernels.cu
//	                                                                          built by gcc, loops)
//
// # The backend
//
// Backend implements train.Backend and every optional interface of
// device-resident training that train.DeviceReference models: ParamStore
// (a State whose values, gradients, momentum and EMA average live in flat
// allocations; SGDStep is one sgd kernel, Unscale amp_unscale, NonFinite
// amp_unscale with a factor of 1 per parameter, EMAUpdate ema_update,
// EMASwap swap_f32), LossBackend (ce_loss and ce_sums: the sums stay on
// the device until LossOp.Sums), ByteInputBackend (normalize_u8),
// DeviceConvOp (cuDNN, then bias_act with the fused ReLU; backward
// relu_bwd, bias_grad and cuDNN's backward data and filter),
// DeviceLinearOp (sgemm, bias_act, bias_grad), DeviceBatchNormOp
// (bn_train, bn_eval, bn_bwd), and ReLU, pooling and Add as kernels;
// Syncer, DeviceNamer ("cuda:N"; the twin "cuda-twin"), DeviceMemory
// (free memory less 1 GiB) and PrecisionReporter. The ops' host-slice
// methods (ConvOp.Forward(x, w, b []float32) …) copy the slices in and
// out. BackendOptions.Precision bf16 and fp16 are emulated, as the
// reference backend emulates them and as torch.autocast computes: a
// convolution's or product's input, weights and output gradient are
// rounded through the cast kernels (round to nearest even) and the fp32
// call runs on the rounded values with float accumulation; the bias and
// everything else stay fp32 (PrecisionReporter: native false). cuDNN's
// and cuBLAS's half-precision tensors, the speed, are not used yet.
// BackendOptions.Device is "",
// "cuda" or "cuda:N" (ParseDevice); anything else is train.ErrDevice.
// Autotune is cudnn.benchmark: cudnnFind…AlgorithmEx measures each
// convolution shape's algorithms on its first call, instead of the _v7
// heuristics; the machine keeps each shape's choice for every op, and
// TuneChoices (train.Tuner) lists what was measured. Convolutions allow TF32 (CUDNN_DEFAULT_MATH, PyTorch's
// cudnn.allow_tf32 default); products do not (CUBLAS_DEFAULT_MATH,
// PyTorch's matmul.allow_tf32 default).
//
// The backend is registered as "cuda" by this package's init (import it,
// as cmd/faster does); the twin is not registered. Without a driver Open
// fails with the *LoadError naming every soname tried; built without cgo,
// with ErrNoCgo.
//
// # Machines
//
// machine is the small interface the backend needs of a device: memory,
// copies, a kernel launched by name with 8-byte argument slots,
// convolution forward and backward (cuDNN's semantics), column-major
// sgemm (cuBLAS's), sync, free memory and launch facts. gpuMachine queues
// kernels, cuDNN and cuBLAS on one stream of its own (cuStreamCreate,
// cudnnSetStream, cublasSetStream_v2) and waits only in copies out and
// Sync (cuStreamSynchronize); its C side is gpu.c. twinMachine allocates
// C memory, so an address is a pointer the kernels' CPU build
// (kernels.LaunchCPU) takes, plans the launches the H200 would run, and
// computes convolutions and products with loops that accumulate in double
// (twin.c). The GPU machine is PREPARED, NOT YET RUN on a GPU.
//
// # Libraries
//
// No CUDA header exists where the project is built, so the package
// declares the functions it calls itself (decls.h: handles as void *,
// enums as int; device facts read with cuDeviceGetAttribute; the one
// struct it reads, cuDNN's AlgoPerf, copied in gpu.h) and opens the
// libraries with dlopen by soname:
//
//	library    sonames tried, in order              Open needs it   the backend needs it
//	driver     libcuda.so.1                          yes             yes
//	cudart     libcudart.so.13, libcudart.so.12      no              no
//	nvrtc      libnvrtc.so.13, libnvrtc.so.12        yes             yes
//	cublas     libcublas.so.13                       no              yes
//	cublasLt   libcublasLt.so.13                     no              no
//	cudnn      libcudnn.so.9                         no              yes
//	nccl       libnccl.so.2                          no              no
//
// A library counts as opened only when every symbol declared for it
// resolves (dlsym); otherwise the next soname is tried. Decls lists
// decls.h in Go, consts.go the enum values passed (consts.h, consts_dnn.h,
// each value with the header it comes from); tests check them against the
// files and the loader's table (dl.c), and probe/ checks them against the
// real headers on the GPU machine (prepared, not yet run there).
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
// from the same slots, so the twin machine runs what the GPU does. Compiled images are kept in a Cache keyed by
// architecture, NVRTC version and the source's hash, written atomically; a
// corrupt or foreign entry is compiled again. Launch geometry comes from
// kernels.Facts.Plan with the device's SM count and thread limits.
//
// # Tests and the device check
//
// On the twin: traintest's RunLayers, RunTorchStep (PyTorch's recorded
// step), RunResNet18 and RunPrecision; eight Trainer steps of
// SmallThinNet within 1e-4 of the reference backend, in fp32 and in fp16
// with a GradScaler that skips steps; checkpoints across the twin and the
// reference; State, the loss and the byte input against the host's
// arithmetic. The GPU machine's cuDNN and cuBLAS plumbing (dnn, gpu.c)
// runs here against stand-in libraries built by gcc
// (testdata/standin_dnn.c: the calls' semantics over host memory, every
// argument checked against its descriptor): a twin whose convolutions and
// products go through it trains bit-identically to the twin. gpu_test.go runs every kernel on the GPU against its CPU
// build, gpu_backend_test.go the backend itself (the suites, and the
// Trainer against the twin); gpucheck.sh builds their test binary here and
// runs it on the GPU machine in one call. Prepared, not yet run.
//
// # Concurrency
//
// The libraries are loaded once (sync.Once). A Device's methods may be
// called from any goroutine: each locks its OS thread and makes the
// device's primary context current for the call; Device's own launches
// are synchronous (the device check's), the backend's are queued on its
// stream. A Backend, like every train.Backend, is used by one goroutine at
// a time, except its ByteInputOp, which may run beside ops on other
// tensors. The package starts no goroutine.
package cuda
