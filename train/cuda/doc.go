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
// (training: bn_plane_sum, bn_stats, bn_apply,
// a block per plane, then a block per channel; bn_eval; the backward
// bn_bwd_sum, bn_bwd_stats, bn_bwd_apply), and ReLU, pooling and Add as
// kernels;
// Syncer, DeviceNamer ("cuda:N"; the twin "cuda-twin"), DeviceMemory
// (free memory less 1 GiB) and PrecisionReporter. The ops' host-slice
// methods (ConvOp.Forward(x, w, b []float32) …) copy the slices in and
// out. BackendOptions.Precision bf16 and fp16 are native, torch.autocast's
// arithmetic (PrecisionReporter: native true): a convolution casts its
// input and output gradient to 16 bits (the cast kernels, round to nearest
// even) and reads the State's 16-bit copy of its weights (cast once per
// step, one kernel over the flat, after SGD, Push, EMASwap or a Write
// changed the values); cuDNN runs on 16-bit tensors with float compute and
// tensor-op math (its PSEUDO_HALF and PSEUDO_BFLOAT16 configurations), so
// y, dx and dw are 16-bit and cast back to float32 for BatchNorm, the loss
// and the optimiser, which stay float32 — except between a convolution
// and a BatchNorm right after each other (train.Sequential's pair, no
// bias or ReLU left to add): a BatchNorm after a
// convolution reads the 16-bit y as cuDNN wrote it and writes its input
// gradient rounded to 16 bits for the convolution's backward; a
// convolution after a BatchNorm takes the BatchNorm's output rounded to
// 16 bits as its operand and hands its 16-bit input gradient back as it
// is (tensor.low; the same bits as the casts, two passes fewer), and a
// ReLU layer right after a BatchNorm is the BatchNorm's (BN_RELU_OUT: it
// writes ReLU(y) and masks dy from y computed again). Under ChannelsLast
// the pairs keep the values channels-last: a BatchNorm between two
// convolutions reads and writes their NHWC operands (BN_NHWC: bn_nhwc_*),
// one before a float32 op reads them so and writes float32 NCHW, the
// layout changed in its passes through shared tiles (bn_tiles_*). A
// residual block after another sums its gradients through the block
// before's ReLU in one pass (add_relu_bwd; with its first convolutions'
// 16-bit input gradients as cuDNN wrote them, add_relu_bwd_low, _tiles),
// and the block before writes its output rounded to 16 bits beside it for
// those convolutions (add_relu_low, _tiles; tensor.lowCopy), or rather
// the block's last BatchNorm writes both in its own pass, ReLU(y +
// shortcut) where it wrote y (BN_ADD, BN_COPY16: bn_apply, bn_tiles_apply
// and their eval kernels; reluOp.ForwardBatchNormSum). A
// convolution's backward reuses the 16-bit filter of its forward while
// the State's weights are unchanged. A product's operands are cast to
// 16 bits and cublasGemmEx (CUDA_R_16F or CUDA_R_16BF inputs, CUDA_R_32F
// output, CUBLAS_COMPUTE_32F) writes float32; bias gradients sum the
// rounded output gradient in float. The twin does the same arithmetic on
// the CPU (16-bit operands widened exactly, double accumulation, results
// rounded to 16 bits where cuDNN writes 16 bits): TestTwinNativePrecision
// checks it bit for bit against the float32 twin on rounded operands.
// traintest.RunPrecision runs on the twin (TestTwinPrecision): cuDNN's
// legacy API cannot give float32 convolution outputs from 16-bit inputs
// (x, w and y share one data type), so a native backend whose
// convolutions write the precision is checked against the reference's
// results rounded to it (one unit of the last place plus the float32
// accumulation bound); products and bias gradients stay at float32's. The 16-bit tensors stay
// NCHW; the H200 run should compare them against NHWC (channels_last).
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
// # The step as a CUDA graph
//
// Backend implements train.StepCapturer (capture.go): RunStep runs a
// key's first step eagerly, captures the second and replays later ones.
// The machine records between beginCapture and endCapture (the GPU:
// cuStreamBeginCapture_v2 on the backend's stream with
// CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, the capture's goroutine locked to
// its OS thread from begin to end (cuStreamEndCapture must come from the
// thread that began it, and the mode guards that thread): an unsafe call
// of the step fails instead of silently synchronising, while other
// threads' calls, the loader's nvJPEG stage allocating or another
// replica's eager step, go on, where GLOBAL would make them fail and end
// the capture; cuStreamEndCapture and
// cuGraphInstantiateWithFlags; replay is cuGraphLaunch on the stream,
// cuGraphExecDestroy and cuGraphDestroy release it; the twin: its calls,
// kernel name, launch and slots, convolutions and products with their
// buffers, memsets, run again in order). While a step runs under RunStep
// a recorder stands in for the machine: it logs every call, stages copies
// in (they land before the record runs), refuses reads back to the host
// (errHostRead), allocations and syncs during a capture, and in replay
// mode compares each call with the record instead of queueing it; a
// difference (a pointer, a shape, an argument) runs the step eagerly from
// that point, held-back calls first, and the next step captures again.
// The learning rate reaches SGD through device memory (sgd_lr), so the
// record does not change with it. The state implements
// train.ScalerState: the GradScaler lives in six doubles on the device,
// UnscaleScaled runs amp_unscale by the device's 1/scale and leaves its
// flag there, SGDStepScaled runs sgd_found (skipped on the device when
// the flag is set; the momentum's first step decided by a device flag)
// and amp_update_scale, and the loss op's ForwardScaled has ce_loss read
// the scale there; the trainer reads it back at its loss reads. So
// neither an eager nor a captured fp16 step waits for its flag, and a
// change of scale changes no launch. On the GPU a captured step needs its
// workspaces and cuDNN's algorithms from the warm-up step: a larger
// workspace asked inside the capture fails the capture. The step to
// capture runs its Go side once with its calls logged (copies in with
// their bytes), not queued; captureLog then captures the log's device
// work. When the device refuses (a call it cannot hold, a graph it cannot
// instantiate), nothing of the step ran: the log runs eagerly in order,
// the key warms up again and the capture is tried once more; after
// maxRefusals the backend captures no more steps (stepGraph.gaveUp,
// reported by CaptureStats) rather than failing the run.
//
// # NCCL
//
// Backend.NCCL joins a communicator on the GPU machine's stream
// (ncclCommInitRank with the 128-byte ncclUniqueId passed by value:
// decls.h's struct faster_nccl_id, its size checked by probe.cpp; GPU.md's
// ctypes probe got error 3 there, the by-value id the suspect);
// NCCLComm.AllReduceSum is ncclAllReduce in place (ncclFloat32, ncclSum)
// on the stream, Close ncclCommDestroy. The backend OpenBackend returns
// (ncclBackend, allreduce.go) is a train.AllReduceBackend: at world size
// 1 its op is that NCCL communicator (DDP's buckets summed on the
// stream); over several ranks all in this process on one device (DP
// replicas sharing a GPU) it sums on the device (peerAllReduce, peer.go:
// rank 0's stream waits for each replica's event, adds in rank order,
// copies the sums back and records an event the replicas' streams wait
// for; no host wait), and otherwise (DDP's processes) through host
// memory with the caller's Comm (NCCL refuses two ranks on one GPU;
// exchanging the id across GPUs waits for a machine with several). The twin (OpenTwin) is
// a plain *Backend without it: the trainer's host fallback sums its
// tensors. TestDNNStandIns runs NCCL and a DDP fit at world size 1
// (ddp-nccl) against a stand-in libnccl.so.2 that checks the id's bytes;
// TestGPUBackendNCCL and TestGPUBackendDDPNCCL (world size 1) are
// prepared. The state is also a train.GradAccumulator (Trainer.ZeroGrad
// on the device: a memset, scratch gradients, one add kernel).
//
// # Machines
//
// machine is the small interface the backend needs of a device: memory,
// copies, a kernel launched by name with 8-byte argument slots,
// convolution forward and backward (cuDNN's semantics), column-major
// sgemm (cuBLAS's), sync, free memory and launch facts. gpuMachine queues
// kernels, cuDNN and cuBLAS on one non-blocking stream of its own
// (cuStreamCreate with CU_STREAM_NON_BLOCKING, cudnnSetStream,
// cublasSetStream_v2; its allocations zeroed on it) and waits only in copies out and
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
//	nvrtc      libnvrtc.so.13, .12, .11.2            yes             yes
//	cublas     libcublas.so.13, libcublas.so.12      no              yes
//	cublasLt   libcublasLt.so.13, libcublasLt.so.12  no              no
//	cudnn      libcudnn.so.9                         no              yes
//	nccl       libnccl.so.2                          no              no (Backend.NCCL does)
//
// A library counts as opened only when every symbol declared for it
// resolves (dlsym; a symbol a toolkit renamed is looked up under each of
// its names, exportNames: cuEventElapsedTime_v2, then the first);
// otherwise the next soname is tried. The driver opens first, and the
// toolkit's libraries (cudart, nvrtc, cublas, cublasLt; nvjpeg's too) try
// the sonames of a CUDA major the driver runs before newer ones
// (ForDriver): under a 12.x driver libcudart.so.12 comes before .so.13,
// which would open and then fail every call. Decls lists
// decls.h in Go, consts.go the enum values passed (consts.h, consts_dnn.h, consts_nccl.h,
// each value with the header it comes from); tests check them against the
// files and the loader's table (dl.c, resolved by internal/dl), and probe/ checks them against the
// real headers on the GPU machine (prepared, not yet run there; compiled
// and run against public copies of CUDA 12.6's, cuDNN 9.6's and NCCL's
// headers, where all agreed).
// The names are also checked against real libraries without a GPU:
// scripts/setup.sh unpacks Debian's libcuda1 (driver 535, CUDA 12.2's
// API), libnvjpeg 11.9 and libcudart 11.8 into testenv.CUDALibDir, and
// TestRealDriverWithoutGPU opens that driver through the loader in a child
// process (every driver function resolves, cuInit fails with
// CUDA_ERROR_NO_DEVICE and Open says so, not a load error) and checks that
// no declared name has a newer _vN beside it in the driver's exports (a
// dlsym caller gets no header #define steering cuMemAlloc to
// cuMemAlloc_v2); cuBLAS 11.11's exports were checked by hand once (all
// seven names).
//
// # Kernels and their cache
//
// Device.Kernels compiles kernels.cu (package kernels) with NVRTC for the
// device's architecture (sm_XY from its compute capability), with
// --fmad=false, and loads it. NVRTC needs no GPU: where one opens (CI
// installs Debian's libnvrtc 11.8), TestNVRTCCompilesKernels compiles
// kernels.cu and gpudecode's resize.cu through the same compile for sm_80
// and sm_90 and checks each cubin's architecture, that it exports
// every kernel by its unmangled name, and that no kernel spills
// registers (ptxas's report); NVRTC 11.8 is also a last resort
// for a machine without a 12 or 13 (its cubins run on newer drivers; it
// cannot target an SM newer than sm_90). The kernels: casts, input normalisation,
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
