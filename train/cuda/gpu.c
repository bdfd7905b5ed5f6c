//go:build cgo

/* gpu.c: see gpu.h. */
#include <string.h>

#include "dl.h"
#include "gpu.h"

#define FASTER_CUDA_CONST(name, value) enum { name = value };
#include "consts_dnn.h"
#include "consts_nccl.h"
#undef FASTER_CUDA_CONST

#define TRY(expr, name)                                                                                                \
	do {                                                                                                           \
		int r_ = (expr);                                                                                       \
		if (r_ != 0) {                                                                                         \
			*call = name;                                                                                  \
			return r_;                                                                                     \
		}                                                                                                      \
	} while (0)

int faster_conv_create(struct faster_conv *c, int n, int ci, int h, int w, int co, int k, int pad, int stride,
		       int oh, int ow, int dtype, int math, int format, const char **call) {
	memset(c, 0, sizeof *c);
	c->algo[0] = c->algo[1] = c->algo[2] = -1;
	c->asked = c->math[0] = c->math[1] = c->math[2] = math;
	TRY(faster_p_cudnnCreateTensorDescriptor(&c->x), "cudnnCreateTensorDescriptor");
	TRY(faster_p_cudnnCreateTensorDescriptor(&c->y), "cudnnCreateTensorDescriptor");
	TRY(faster_p_cudnnCreateFilterDescriptor(&c->w), "cudnnCreateFilterDescriptor");
	TRY(faster_p_cudnnCreateConvolutionDescriptor(&c->conv), "cudnnCreateConvolutionDescriptor");
	TRY(faster_p_cudnnSetTensor4dDescriptor(c->x, format, dtype, n, ci, h, w),
	    "cudnnSetTensor4dDescriptor (x)");
	TRY(faster_p_cudnnSetTensor4dDescriptor(c->y, format, dtype, n, co, oh, ow),
	    "cudnnSetTensor4dDescriptor (y)");
	/* cudnnSetFilter4dDescriptor takes the data type first, then the format.
	 * 16-bit tensors stay NCHW: cuDNN 9 runs tensor-core kernels on NCHW
	 * half tensors by transposing internally. The backend passes
	 * CUDNN_TENSOR_NCHW; dnn.findTimes also CUDNN_TENSOR_NHWC
	 * (channels_last, PyTorch's recommendation for AMP), to measure what
	 * that layout would save (TestGPUConvLayouts). */
	TRY(faster_p_cudnnSetFilter4dDescriptor(c->w, dtype, format, co, ci, k, k),
	    "cudnnSetFilter4dDescriptor");
	TRY(faster_p_cudnnSetConvolution2dDescriptor(c->conv, pad, pad, stride, stride, 1, 1, CUDNN_CROSS_CORRELATION,
						     CUDNN_DATA_FLOAT),
	    "cudnnSetConvolution2dDescriptor");
	TRY(faster_p_cudnnSetConvolutionMathType(c->conv, math), "cudnnSetConvolutionMathType");
	return 0;
}

void faster_conv_destroy(struct faster_conv *c) {
	if (c->x)
		faster_p_cudnnDestroyTensorDescriptor(c->x);
	if (c->y)
		faster_p_cudnnDestroyTensorDescriptor(c->y);
	if (c->w)
		faster_p_cudnnDestroyFilterDescriptor(c->w);
	if (c->conv)
		faster_p_cudnnDestroyConvolutionDescriptor(c->conv);
	memset(c, 0, sizeof *c);
}

#define NPERF FASTER_NPERF

static void *P(unsigned long long p) { return (void *)(size_t)p; }

int faster_conv_choose(void *h, struct faster_conv *c, int dir, int find, unsigned long long a, unsigned long long b,
		       unsigned long long out, unsigned long long ws, size_t wsBytes, struct faster_conv_perf *perf,
		       int *nperf, const char **call) {
	int got = 0;
	*nperf = 0;
	memset(perf, 0, sizeof perf[0] * NPERF);
	/* Ranked with the type asked for (another direction may have set its own). */
	TRY(faster_p_cudnnSetConvolutionMathType(c->conv, c->asked), "cudnnSetConvolutionMathType");
	switch (dir) {
	case FASTER_FWD:
		if (find)
			TRY(faster_p_cudnnFindConvolutionForwardAlgorithmEx(h, c->x, P(a), c->w, P(b), c->conv, c->y, P(out),
									    NPERF, &got, perf, P(ws), wsBytes),
			    "cudnnFindConvolutionForwardAlgorithmEx");
		else
			TRY(faster_p_cudnnGetConvolutionForwardAlgorithm_v7(h, c->x, c->w, c->conv, c->y, NPERF, &got, perf),
			    "cudnnGetConvolutionForwardAlgorithm_v7");
		break;
	case FASTER_BWD_DATA:
		if (find)
			TRY(faster_p_cudnnFindConvolutionBackwardDataAlgorithmEx(h, c->w, P(a), c->y, P(b), c->conv, c->x,
										 P(out), NPERF, &got, perf, P(ws), wsBytes),
			    "cudnnFindConvolutionBackwardDataAlgorithmEx");
		else
			TRY(faster_p_cudnnGetConvolutionBackwardDataAlgorithm_v7(h, c->w, c->y, c->conv, c->x, NPERF, &got,
										 perf),
			    "cudnnGetConvolutionBackwardDataAlgorithm_v7");
		break;
	default:
		if (find)
			TRY(faster_p_cudnnFindConvolutionBackwardFilterAlgorithmEx(h, c->x, P(a), c->y, P(b), c->conv, c->w,
										   P(out), NPERF, &got, perf, P(ws),
										   wsBytes),
			    "cudnnFindConvolutionBackwardFilterAlgorithmEx");
		else
			TRY(faster_p_cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, c->x, c->y, c->conv, c->w, NPERF, &got,
										   perf),
			    "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
	}
	*nperf = got < NPERF ? got : NPERF;
	/* The results come fastest first; take the first that succeeded and
	 * needs at most wsBytes of workspace (found: the workspace it was
	 * measured in; ranked: a cap, as PyTorch passes over an algorithm whose
	 * workspace does not fit, an FFT's can be gigabytes), else the first
	 * that succeeded. */
	int over = -1, overMath = 0;
	size_t overNeed = 0;
	for (int i = 0; i < got && i < NPERF; i++) {
		if (perf[i].status != CUDNN_STATUS_SUCCESS || (find && perf[i].memory > wsBytes))
			continue;
		const int math = c->asked == CUDNN_FMA_MATH ? CUDNN_FMA_MATH : perf[i].math_type;
		TRY(faster_p_cudnnSetConvolutionMathType(c->conv, math), "cudnnSetConvolutionMathType");
		size_t need = 0;
		switch (dir) {
		case FASTER_FWD:
			TRY(faster_p_cudnnGetConvolutionForwardWorkspaceSize(h, c->x, c->w, c->conv, c->y, perf[i].algo, &need),
			    "cudnnGetConvolutionForwardWorkspaceSize");
			break;
		case FASTER_BWD_DATA:
			TRY(faster_p_cudnnGetConvolutionBackwardDataWorkspaceSize(h, c->w, c->y, c->conv, c->x, perf[i].algo,
										  &need),
			    "cudnnGetConvolutionBackwardDataWorkspaceSize");
			break;
		default:
			TRY(faster_p_cudnnGetConvolutionBackwardFilterWorkspaceSize(h, c->x, c->y, c->conv, c->w, perf[i].algo,
										    &need),
			    "cudnnGetConvolutionBackwardFilterWorkspaceSize");
		}
		if (need > wsBytes) {
			if (over < 0)
				over = i, overNeed = need, overMath = math;
			continue;
		}
		c->algo[dir] = perf[i].algo;
		c->ws[dir] = need;
		c->math[dir] = math;
		return 0;
	}
	if (over >= 0) {
		c->algo[dir] = perf[over].algo;
		c->ws[dir] = overNeed;
		c->math[dir] = overMath;
		return 0;
	}
	*call = find ? "cudnnFind…AlgorithmEx: no algorithm succeeded" : "cudnnGet…Algorithm_v7: no algorithm succeeded";
	return -1; /* no library status: the text says what happened */
}

int faster_conv_run(void *h, struct faster_conv *c, int dir, unsigned long long a, unsigned long long b,
		    unsigned long long out, unsigned long long ws, size_t wsBytes, const char **call) {
	const float one = 1.0f, zero = 0.0f;
	/* A host-side setting: no work queued, so a captured step may hold it. */
	TRY(faster_p_cudnnSetConvolutionMathType(c->conv, c->math[dir]), "cudnnSetConvolutionMathType");
	switch (dir) {
	case FASTER_FWD:
		TRY(faster_p_cudnnConvolutionForward(h, &one, c->x, P(a), c->w, P(b), c->conv, c->algo[dir], P(ws), wsBytes,
						     &zero, c->y, P(out)),
		    "cudnnConvolutionForward");
		break;
	case FASTER_BWD_DATA:
		TRY(faster_p_cudnnConvolutionBackwardData(h, &one, c->w, P(a), c->y, P(b), c->conv, c->algo[dir], P(ws),
							  wsBytes, &zero, c->x, P(out)),
		    "cudnnConvolutionBackwardData");
		break;
	default:
		TRY(faster_p_cudnnConvolutionBackwardFilter(h, &one, c->x, P(a), c->y, P(b), c->conv, c->algo[dir], P(ws),
							    wsBytes, &zero, c->w, P(out)),
		    "cudnnConvolutionBackwardFilter");
	}
	return 0;
}

int faster_sgemm(void *h, int ta, int tb, int m, int n, int k, float alpha, unsigned long long a, int lda,
		 unsigned long long b, int ldb, float beta, unsigned long long c, int ldc) {
	return faster_p_cublasSgemm_v2(h, ta, tb, m, n, k, &alpha, P(a), lda, P(b), ldb, &beta, P(c), ldc);
}

int faster_gemm_ex(void *h, int ta, int tb, int m, int n, int k, float alpha, unsigned long long a, int ab, int lda,
		   unsigned long long b, int ldb, float beta, unsigned long long c, int ldc) {
	return faster_p_cublasGemmEx(h, ta, tb, m, n, k, &alpha, P(a), ab, lda, P(b), ab, ldb, &beta, P(c), CUDA_R_32F, ldc,
				     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

int faster_gpu_setup(void **stream, void **cudnn, void **cublas, int cublasMath, const char **call) {
	*stream = *cudnn = *cublas = NULL;
	/* Non-blocking: a legacy-stream call elsewhere in the process (a
	 * library's synchronous copy or memset) neither waits for the
	 * backend's work nor, while a step is being captured, ends the
	 * capture by an implicit synchronisation with it. The backend orders
	 * its own work on this stream alone. */
	TRY(faster_p_cuStreamCreate(stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
	TRY(faster_p_cudnnCreate(cudnn), "cudnnCreate");
	TRY(faster_p_cudnnSetStream(*cudnn, *stream), "cudnnSetStream");
	TRY(faster_p_cublasCreate_v2(cublas), "cublasCreate_v2");
	TRY(faster_p_cublasSetStream_v2(*cublas, *stream), "cublasSetStream_v2");
	TRY(faster_p_cublasSetMathMode(*cublas, cublasMath), "cublasSetMathMode");
	return 0;
}

int faster_blas_workspace(void *cublas, unsigned long long ws, size_t n) {
	return faster_p_cublasSetWorkspace_v2(cublas, P(ws), n);
}

void faster_gpu_teardown(void *stream, void *cudnn, void *cublas) {
	if (cublas)
		faster_p_cublasDestroy_v2(cublas);
	if (cudnn)
		faster_p_cudnnDestroy(cudnn);
	if (stream)
		faster_p_cuStreamDestroy_v2(stream);
}

int faster_launch_on(void *stream, void *f, unsigned gx, unsigned bx, unsigned long long *args, int n) {
	void *params[32];
	if (n > 32)
		return 1; /* CUDA_ERROR_INVALID_VALUE */
	for (int i = 0; i < n; i++)
		params[i] = &args[i];
	return faster_p_cuLaunchKernel(f, gx, 1, 1, bx, 1, 1, 0, stream, params, NULL);
}

/* From pageable memory, cuMemcpyHtoDAsync returns once the source is
 * staged into pinned memory (the driver API's "API synchronization
 * behavior": it may synchronise with the stream to do so): the caller may
 * reuse it, and the copy lands in stream order. */
int faster_copy_in(void *stream, unsigned long long dst, const void *src, size_t n) {
	return faster_p_cuMemcpyHtoDAsync_v2(dst, src, n, stream);
}

int faster_copy_out(void *stream, void *dst, unsigned long long src, size_t n) {
	int r = faster_p_cuMemcpyDtoHAsync_v2(dst, src, n, stream);
	return r ? r : faster_p_cuStreamSynchronize(stream);
}

int faster_zero(void *stream, unsigned long long p, size_t n) { return faster_p_cuMemsetD8Async(p, 0, n, stream); }

int faster_stream_sync(void *stream) { return faster_p_cuStreamSynchronize(stream); }

int faster_copy_dev(void *stream, unsigned long long dst, unsigned long long src, size_t n) {
	return faster_p_cuMemcpyDtoDAsync_v2(dst, src, n, stream);
}

int faster_fence_wait(void *stream, const char **call) {
	void *ev = NULL;
	*call = "cuEventCreate";
	int r = faster_p_cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
	if (r)
		return r;
	*call = "cuEventRecord";
	r = faster_p_cuEventRecord(ev, stream);
	if (!r) {
		*call = "cuEventSynchronize";
		r = faster_p_cuEventSynchronize(ev);
	}
	int d = faster_p_cuEventDestroy_v2(ev);
	if (!r && d) {
		*call = "cuEventDestroy";
		r = d;
	}
	return r;
}

int faster_host_alloc(void **host, size_t n) { return faster_p_cuMemHostAlloc(host, n, 0); }

int faster_host_free(void *host) { return faster_p_cuMemFreeHost(host); }

int faster_event_new(void **ev) { return faster_p_cuEventCreate(ev, CU_EVENT_DISABLE_TIMING); }

int faster_event_free(void *ev) { return faster_p_cuEventDestroy_v2(ev); }

int faster_timed_event_new(void **ev) { return faster_p_cuEventCreate(ev, 0); }

int faster_event_elapsed(float *ms, void *start, void *end) { return faster_p_cuEventElapsedTime(ms, start, end); }

int faster_copy_pinned(void *stream, unsigned long long dst, const void *src, size_t n, void *ev, const char **call) {
	*call = "cuMemcpyHtoDAsync";
	int r = faster_p_cuMemcpyHtoDAsync_v2(dst, src, n, stream);
	if (r)
		return r;
	*call = "cuEventRecord";
	r = faster_p_cuEventRecord(ev, stream);
	/* Without its event the copy queued above has nothing to wait on: it
	 * must land before the caller reuses src, so wait for the stream. */
	if (r)
		faster_p_cuStreamSynchronize(stream);
	return r;
}

int faster_event_wait(void *ev) { return faster_p_cuEventSynchronize(ev); }

int faster_event_record(void *ev, void *stream) { return faster_p_cuEventRecord(ev, stream); }

int faster_stream_wait(void *stream, void *ev) { return faster_p_cuStreamWaitEvent(stream, ev, 0); }

int faster_mem_info(size_t *free, size_t *total) { return faster_p_cuMemGetInfo_v2(free, total); }

int faster_capture_begin(void *stream) { return faster_p_cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL); }

int faster_capture_end(void *stream, void **graph, void **exec, const char **call) {
	*graph = *exec = NULL;
	int r = faster_p_cuStreamEndCapture(stream, graph);
	if (r != 0) {
		*call = "cuStreamEndCapture";
		if (*graph)
			faster_p_cuGraphDestroy(*graph);
		*graph = NULL;
		return r;
	}
	r = faster_p_cuGraphInstantiateWithFlags(exec, *graph, 0);
	if (r != 0) {
		*call = "cuGraphInstantiateWithFlags";
		faster_p_cuGraphDestroy(*graph);
		*graph = *exec = NULL;
	}
	return r;
}

int faster_graph_launch(void *exec, void *stream) { return faster_p_cuGraphLaunch(exec, stream); }

void faster_graph_destroy(void *graph, void *exec) {
	if (exec)
		faster_p_cuGraphExecDestroy(exec);
	if (graph)
		faster_p_cuGraphDestroy(graph);
}

int faster_nccl_init(void **comm, int nranks, const struct faster_nccl_id *id, int rank) {
	return faster_p_ncclCommInitRank(comm, nranks, *id, rank);
}

int faster_nccl_sum_f32(void *comm, unsigned long long buf, size_t n, void *stream) {
	return faster_p_ncclAllReduce(P(buf), P(buf), n, ncclFloat32, ncclSum, comm, stream);
}

int faster_nccl_destroy(void *comm) { return faster_p_ncclCommDestroy(comm); }
