/* gpu.h: the GPU machine's C side (gpu.c): convolutions through cuDNN's
 * legacy API and matrix products through cuBLAS, on the backend's stream,
 * over the function pointers dl.c resolved. Every function returns the
 * library's status (0: success) and, on failure, names the call in *call.
 * Not safe for concurrent use on one handle (Go serialises the machine). */
#include <stddef.h>

/* faster_conv_perf is cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t of
 * cudnn_cnn.h (cuDNN 9), which all three share: algo, status, time,
 * memory, determinism, mathType, reserved[3]. probe/probe.cpp checks its
 * size and offsets against the header. */
struct faster_conv_perf {
	int algo;
	int status;
	float time;
	size_t memory;
	int determinism;
	int math_type;
	int reserved[3];
};

/* faster_conv is one convolution's descriptors (NCHW float32, no groups or
 * dilation) and the algorithms chosen for it: -1 until chosen. */
struct faster_conv {
	void *x, *y, *w, *conv;
	int algo[3];	  /* forward, backward data, backward filter */
	size_t ws[3];	  /* their workspaces in bytes */
	int math[3];	  /* their math types, set on conv before each runs */
	int asked;	  /* the math type asked for at creation */
};

enum { FASTER_FWD, FASTER_BWD_DATA, FASTER_BWD_FILTER };
enum { FASTER_NPERF = 8 };

/* faster_conv_create makes c's descriptors in layout format
 * (CUDNN_TENSOR_NCHW, or CUDNN_TENSOR_NHWC for x, y and the filter's
 * KRSC), every tensor of cuDNN data
 * type dtype (CUDNN_DATA_FLOAT, _HALF or _BFLOAT16) with float compute
 * (cuDNN's FLOAT, PSEUDO_HALF and PSEUDO_BFLOAT16 configurations) and
 * math type math; faster_conv_destroy frees them. */
int faster_conv_create(struct faster_conv *c, int n, int ci, int h, int w, int co, int k, int pad, int stride,
		       int oh, int ow, int dtype, int math, int format, const char **call);
void faster_conv_destroy(struct faster_conv *c);

/* faster_conv_choose picks dir's algorithm: the fastest cuDNN's heuristics
 * rank that succeeds (cudnnGet…Algorithm_v7), or, with find, the fastest
 * measured on the buffers a, b, out (cudnnFind…AlgorithmEx, in the
 * direction's argument order: forward x, w, y; backward data w, dy, dx;
 * backward filter x, dy, dw) within ws of wsBytes (ranked: ws unused,
 * the first within wsBytes preferred). It sets c->algo[dir],
 * c->ws[dir] and c->math[dir], the math type cuDNN ranked the algorithm
 * with (its perf's mathType: cuDNN runs the kernel it measured or ranked
 * only with that type set on the descriptor, as PyTorch sets it; the
 * asked type where that is CUDNN_FMA_MATH, strict float32), and copies
 * what cuDNN returned into perf (room for FASTER_NPERF) and its count
 * into *nperf. */
int faster_conv_choose(void *handle, struct faster_conv *c, int dir, int find, unsigned long long a,
		       unsigned long long b, unsigned long long out, unsigned long long ws, size_t wsBytes,
		       struct faster_conv_perf *perf, int *nperf, const char **call);

/* faster_conv_run runs dir with its chosen algorithm and math type, out =
 * op(a, b) (alpha 1, beta 0), a and b in the order of faster_conv_choose. */
int faster_conv_run(void *handle, struct faster_conv *c, int dir, unsigned long long a, unsigned long long b,
		    unsigned long long out, unsigned long long ws, size_t wsBytes, const char **call);

/* faster_sgemm is cublasSgemm_v2 (column-major) with host alpha and beta. */
int faster_sgemm(void *handle, int ta, int tb, int m, int n, int k, float alpha, unsigned long long a, int lda,
		 unsigned long long b, int ldb, float beta, unsigned long long c, int ldc);

/* faster_gemm_ex is cublasGemmEx (column-major) with A and B of CUDA data
 * type ab (CUDA_R_16F or CUDA_R_16BF), C float (CUDA_R_32F), float
 * accumulation (CUBLAS_COMPUTE_32F), host alpha and beta, CUBLAS_GEMM_DEFAULT. */
int faster_gemm_ex(void *handle, int ta, int tb, int m, int n, int k, float alpha, unsigned long long a, int ab, int lda,
		   unsigned long long b, int ldb, float beta, unsigned long long c, int ldc);

/* faster_gpu_setup makes the stream and the handles: cuStreamCreate,
 * cudnnCreate + cudnnSetStream, cublasCreate_v2 + cublasSetStream_v2 +
 * cublasSetMathMode. Returns the status; which library in *call. */
int faster_gpu_setup(void **stream, void **cudnn, void **cublas, int cublasMath, const char **call);
void faster_gpu_teardown(void *stream, void *cudnn, void *cublas);

/* faster_blas_workspace gives the cuBLAS handle n bytes of device memory at
 * ws as its workspace (cublasSetWorkspace_v2), after its stream was set:
 * cublasSetStream_v2 puts the handle back on cuBLAS's own pool. */
int faster_blas_workspace(void *cublas, unsigned long long ws, size_t n);

/* The stream's driver calls: a kernel launched on the stream without
 * waiting (args as call_cuLaunchKernelOn's 8-byte slots); a copy in queued
 * on the stream (it returns once the caller's pageable memory is staged);
 * a copy out that waits for the stream's work and its own; a memset queued
 * on the stream; the stream's synchronisation; the device's free memory.
 * Each returns the driver's status. */
int faster_launch_on(void *stream, void *f, unsigned gx, unsigned bx, unsigned long long *args, int n);
int faster_copy_in(void *stream, unsigned long long dst, const void *src, size_t n);
int faster_copy_out(void *stream, void *dst, unsigned long long src, size_t n);
int faster_zero(void *stream, unsigned long long p, size_t n);
int faster_stream_sync(void *stream);
int faster_mem_info(size_t *free, size_t *total);

/* Reading another producer's device memory (a decode stage's batch):
 * faster_copy_dev queues a device-to-device copy on the stream;
 * faster_fence_wait records a fresh event on the stream after the work
 * queued so far and waits for it alone (not for work queued later by
 * other threads, as a stream synchronisation may), then destroys it. On
 * failure *call names the call. */
int faster_copy_dev(void *stream, unsigned long long dst, unsigned long long src, size_t n);
int faster_fence_wait(void *stream, const char **call);

/* The staging ring's calls (staging.go): pinned host memory
 * (cuMemHostAlloc, flags 0; cuMemFreeHost), an ordering-only event
 * (cuEventCreate with CU_EVENT_DISABLE_TIMING; cuEventDestroy_v2), a copy
 * from pinned memory queued on the stream with ev recorded after it
 * (cuMemcpyHtoDAsync_v2 + cuEventRecord: from pinned memory both return
 * at once), and the wait for ev (cuEventSynchronize). The driver's status;
 * faster_copy_pinned names the failed call in *call. */
int faster_host_alloc(void **host, size_t n);
int faster_host_free(void *host);
int faster_event_new(void **ev);
int faster_event_free(void *ev);
int faster_copy_pinned(void *stream, unsigned long long dst, const void *src, size_t n, void *ev, const char **call);
int faster_event_wait(void *ev);

/* Ordering across streams: faster_event_record marks the work queued on
 * stream so far (cuEventRecord); faster_stream_wait makes the work queued
 * on stream after it wait for ev's last mark (cuStreamWaitEvent, flags 0).
 * The driver's status. */
int faster_event_record(void *ev, void *stream);
int faster_stream_wait(void *stream, void *ev);

/* The profiler's timed events (profile.go): cuEventCreate with flags 0
 * (timing on), recorded with faster_event_record, freed with
 * faster_event_free; faster_event_elapsed is cuEventElapsedTime, in ms.
 * The driver's status. */
int faster_timed_event_new(void **ev);
int faster_event_elapsed(float *ms, void *start, void *end);

/* The step as a CUDA graph: faster_capture_begin starts stream capture on
 * the stream (CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: a potentially unsafe
 * call from the capturing thread fails instead of silently synchronising,
 * while the other threads' calls, the loader's nvJPEG stage's allocations,
 * another replica's steps, go on; the caller keeps begin, the step and
 * end on one OS thread, as the mode and cuStreamEndCapture require);
 * faster_capture_end ends it (cuStreamEndCapture) and instantiates the
 * graph (cuGraphInstantiateWithFlags, flags 0), returning both (on failure
 * the graph, if any, is destroyed and *graph, *exec are NULL);
 * faster_graph_launch queues the instantiated graph on the stream;
 * faster_graph_destroy frees both. Each returns the driver's status and
 * names the call in *call. */
int faster_capture_begin(void *stream);
int faster_capture_end(void *stream, void **graph, void **exec, const char **call);
int faster_graph_launch(void *exec, void *stream);
void faster_graph_destroy(void *graph, void *exec);

/* NCCL on the stream: faster_nccl_init is ncclCommInitRank with the id
 * passed BY VALUE (struct faster_nccl_id, decls.h); faster_nccl_sum_f32
 * all-reduces n floats in place (ncclAllReduce, ncclFloat32, ncclSum) on
 * the stream; faster_nccl_destroy is ncclCommDestroy. NCCL's status. */
struct faster_nccl_id;
int faster_nccl_init(void **comm, int nranks, const struct faster_nccl_id *id, int rank);
int faster_nccl_sum_f32(void *comm, unsigned long long buf, size_t n, void *stream);
int faster_nccl_destroy(void *comm);
