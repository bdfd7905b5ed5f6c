/* standin_dnn.c: stand-ins of libcudnn.so.9 and libcublas.so.13 for
 * TestDNNStandIns, built with gcc on the CPU. They implement the calls
 * gpu.c makes with the real libraries' documented semantics (cuDNN's
 * legacy API: descriptors, cross-correlation NCHW float32, the three
 * directions with alpha and beta, Get…_v7 and Find…Ex ranking; cuBLAS's
 * column-major sgemm with host alpha and beta; 16-bit tensors, CUDNN_DATA_HALF
 * and _BFLOAT16 with float compute and tensor-op math, and cublasGemmEx
 * with 16-bit A and B, float C and CUBLAS_COMPUTE_32F) over host pointers, and
 * refuse (status 2000, as CUDNN_STATUS_BAD_PARAM; 7 for cuBLAS) any
 * argument that disagrees with the descriptors: a descriptor of the wrong
 * kind, an output shape unlike the convolution's, an unknown algorithm, a
 * workspace smaller than asked. The arithmetic is twin.c's, so results
 * must equal the twin's bit for bit. Compiled once with -DSTANDIN_CUDNN and
 * once with -DSTANDIN_CUBLAS; every other declared symbol is a stub the
 * test generates. */
#include <stdlib.h>
#include <string.h>
#include TWIN_C

enum { BAD = 2000, UNSUPPORTED = 3000 };

#ifdef STANDIN_CUDNN
struct desc {
	int kind; /* 1 tensor, 2 filter, 3 convolution */
	int dtype; /* cudnnDataType_t: 0 FLOAT, 2 HALF, 9 BFLOAT16 */
	int n, c, h, w;
	int pad, stride, mode, math;
	int nhwc; /* CUDNN_TENSOR_NHWC: 16-bit tensors computed through twin_conv_16_nhwc; ranked only by Find…Ex */
};

static int mk(void **d, int kind) {
	struct desc *x = calloc(1, sizeof *x);
	x->kind = kind;
	*d = x;
	return 0;
}
static int rm(void *d, int kind) {
	struct desc *x = d;
	if (!x || x->kind != kind)
		return BAD;
	free(x);
	return 0;
}
int cudnnCreateTensorDescriptor(void **d) { return mk(d, 1); }
int cudnnCreateFilterDescriptor(void **d) { return mk(d, 2); }
int cudnnCreateConvolutionDescriptor(void **d) { return mk(d, 3); }
int cudnnDestroyTensorDescriptor(void *d) { return rm(d, 1); }
int cudnnDestroyFilterDescriptor(void *d) { return rm(d, 2); }
int cudnnDestroyConvolutionDescriptor(void *d) { return rm(d, 3); }

/* known: the data types gpu.c may pass (cudnn_graph.h's values). */
static int known(int t) { return t == 0 || t == 2 || t == 9; }

int cudnnSetTensor4dDescriptor(void *d, int format, int dataType, int n, int c, int h, int w) {
	struct desc *x = d;
	if (x->kind != 1 || (format != 0 /* NCHW */ && format != 1 /* NHWC */) || !known(dataType) || n < 1 || c < 1 ||
	    h < 1 || w < 1)
		return BAD;
	x->n = n, x->c = c, x->h = h, x->w = w, x->dtype = dataType, x->nhwc = format == 1;
	return 0;
}
int cudnnSetFilter4dDescriptor(void *d, int dataType, int format, int k, int c, int h, int w) {
	struct desc *x = d;
	if (x->kind != 2 || !known(dataType) || (format != 0 && format != 1) || k < 1 || c < 1 || h < 1 || h != w)
		return BAD;
	x->n = k, x->c = c, x->h = h, x->w = w, x->dtype = dataType, x->nhwc = format == 1;
	return 0;
}
int cudnnSetConvolution2dDescriptor(void *d, int padH, int padW, int u, int v, int dh, int dw, int mode, int computeType) {
	struct desc *x = d;
	if (x->kind != 3 || padH != padW || u != v || u < 1 || dh != 1 || dw != 1 || mode != 1 /* CROSS_CORRELATION */ ||
	    computeType != 0)
		return BAD;
	x->pad = padH, x->stride = u, x->mode = mode;
	return 0;
}
int cudnnSetConvolutionMathType(void *d, int math) {
	struct desc *x = d;
	if (x->kind != 3 || (math != 0 && math != 1 && math != 3))
		return BAD;
	x->math = math;
	return 0;
}

/* check: x (tensor), w (filter), conv, y (tensor) agree. */
static int check(struct desc *x, struct desc *w, struct desc *cv, struct desc *y) {
	if (!x || !w || !cv || !y || x->kind != 1 || w->kind != 2 || cv->kind != 3 || y->kind != 1)
		return BAD;
	int oh = (x->h + 2 * cv->pad - w->h) / cv->stride + 1, ow = (x->w + 2 * cv->pad - w->w) / cv->stride + 1;
	if (x->c != w->c || y->n != x->n || y->c != w->n || y->h != oh || y->w != ow)
		return BAD;
	/* One data type for all three (PSEUDO_HALF/BFLOAT16: the compute type
	 * stays FLOAT, checked by the descriptor), tensor-op math for 16 bits. */
	if (x->dtype != w->dtype || y->dtype != x->dtype || (x->dtype != 0 && cv->math != 1))
		return BAD;
	return 0;
}

/* Two algorithms: 0 unsupported (ranked first, to be skipped), 1 with a
 * workspace of 64 bytes. */
struct perf {
	int algo, status;
	float time;
	size_t memory;
	int determinism, math, reserved[3];
};
/* Ranked with the descriptor's math type, algorithm 1 reports tensor-op
 * math (1) unless FMA (3) was asked: the type its run must find set
 * (ready). Algorithm 2, ranked before it, succeeds with a workspace of 1
 * TiB: the caller must pass over it (it cannot run). */
static int rank(int requested, int *returned, struct perf *p, int timed, struct desc *cv) {
	if (requested < 3)
		return BAD;
	memset(p, 0, 3 * sizeof *p);
	p[0].algo = 0, p[0].status = UNSUPPORTED, p[0].time = -1;
	p[1].algo = 2, p[1].status = 0, p[1].memory = (size_t)1 << 40, p[1].time = timed ? 0.25f : -1, p[1].math = 1;
	p[2].algo = 1, p[2].status = 0, p[2].memory = 64, p[2].time = timed ? 0.5f : -1, p[2].math = cv->math == 3 ? 3 : 1;
	*returned = 3;
	return 0;
}
static int wsize(int algo, size_t *bytes) {
	if (algo != 1 && algo != 2)
		return UNSUPPORTED;
	*bytes = algo == 2 ? (size_t)1 << 40 : 64;
	return 0;
}
/* ready checks a call's algorithm, workspace and scalars, then writes over
 * the whole workspace as an algorithm may: a workspace said to be larger
 * than its allocation breaks the allocation's fences, and one that shares
 * memory with a live tensor changes its values. */
static int ready(int algo, void *ws, size_t bytes, const float *alpha, const float *beta, struct desc *cv) {
	if (!(algo == 1 && ws && bytes >= 64 && *alpha == 1.0f && *beta == 0.0f && cv->math != 0))
		return BAD;
	memset(ws, 0xa5, bytes);
	return 0;
}

static int fwd(struct desc *x, const void *xp, struct desc *w, const void *wp, struct desc *cv, struct desc *y, void *yp) {
	int r = check(x, w, cv, y);
	if (!r && (x->nhwc != w->nhwc || y->nhwc != x->nhwc || (x->nhwc && !x->dtype))) /* channels-last: 16-bit only */
		r = BAD;
	if (r)
		return r;
	if (x->nhwc)
		twin_conv_16_nhwc(0, x->dtype == 9, xp, wp, yp, x->n, x->c, x->h, x->w, w->n, w->h, cv->pad, cv->stride, y->h, y->w);
	else if (x->dtype)
		twin_conv_16(0, x->dtype == 9, xp, wp, yp, x->n, x->c, x->h, x->w, w->n, w->h, cv->pad, cv->stride, y->h, y->w);
	else
		twin_conv_fwd(xp, wp, yp, x->n, x->c, x->h, x->w, w->n, w->h, cv->pad, cv->stride, y->h, y->w);
	return 0;
}
static int bwd_data(struct desc *w, const void *wp, struct desc *dy, const void *dyp, struct desc *cv, struct desc *dx, void *dxp) {
	int r = check(dx, w, cv, dy);
	if (!r && (dx->nhwc != w->nhwc || dy->nhwc != w->nhwc || (w->nhwc && !w->dtype)))
		r = BAD;
	if (r)
		return r;
	if (w->nhwc)
		twin_conv_16_nhwc(1, w->dtype == 9, wp, dyp, dxp, dx->n, dx->c, dx->h, dx->w, w->n, w->h, cv->pad, cv->stride, dy->h, dy->w);
	else if (w->dtype)
		twin_conv_16(1, w->dtype == 9, wp, dyp, dxp, dx->n, dx->c, dx->h, dx->w, w->n, w->h, cv->pad, cv->stride, dy->h, dy->w);
	else
		twin_conv_bwd_data(wp, dyp, dxp, dx->n, dx->c, dx->h, dx->w, w->n, w->h, cv->pad, cv->stride, dy->h, dy->w);
	return 0;
}
static int bwd_filter(struct desc *x, const void *xp, struct desc *dy, const void *dyp, struct desc *cv, struct desc *dw, void *dwp) {
	int r = check(x, dw, cv, dy);
	if (!r && (x->nhwc != dw->nhwc || dy->nhwc != x->nhwc || (x->nhwc && !x->dtype)))
		r = BAD;
	if (r)
		return r;
	if (x->nhwc)
		twin_conv_16_nhwc(2, x->dtype == 9, xp, dyp, dwp, x->n, x->c, x->h, x->w, dw->n, dw->h, cv->pad, cv->stride, dy->h, dy->w);
	else if (x->dtype)
		twin_conv_16(2, x->dtype == 9, xp, dyp, dwp, x->n, x->c, x->h, x->w, dw->n, dw->h, cv->pad, cv->stride, dy->h, dy->w);
	else
		twin_conv_bwd_filter(xp, dyp, dwp, x->n, x->c, x->h, x->w, dw->n, dw->h, cv->pad, cv->stride, dy->h, dy->w);
	return 0;
}

int cudnnGetConvolutionForwardAlgorithm_v7(void *h, void *x, void *w, void *cv, void *y, int req, int *ret, void *perf) {
	int r = check(x, w, cv, y);
	return r ? r : rank(req, ret, perf, 0, cv);
}
int cudnnGetConvolutionBackwardDataAlgorithm_v7(void *h, void *w, void *dy, void *cv, void *dx, int req, int *ret, void *perf) {
	int r = check(dx, w, cv, dy);
	return r ? r : rank(req, ret, perf, 0, cv);
}
int cudnnGetConvolutionBackwardFilterAlgorithm_v7(void *h, void *x, void *dy, void *cv, void *dw, int req, int *ret, void *perf) {
	int r = check(x, dw, cv, dy);
	return r ? r : rank(req, ret, perf, 0, cv);
}
int cudnnGetConvolutionForwardWorkspaceSize(void *h, void *x, void *w, void *cv, void *y, int algo, size_t *bytes) {
	int r = check(x, w, cv, y);
	return r ? r : wsize(algo, bytes);
}
int cudnnGetConvolutionBackwardDataWorkspaceSize(void *h, void *w, void *dy, void *cv, void *dx, int algo, size_t *bytes) {
	int r = check(dx, w, cv, dy);
	return r ? r : wsize(algo, bytes);
}
int cudnnGetConvolutionBackwardFilterWorkspaceSize(void *h, void *x, void *dy, void *cv, void *dw, int algo, size_t *bytes) {
	int r = check(x, dw, cv, dy);
	return r ? r : wsize(algo, bytes);
}
/* nhwc: every descriptor channels_last (Find…Ex ranks it without computing:
 * twin.c's loops are NCHW); -1 when they disagree. */
static int nhwc(struct desc *a, struct desc *b, struct desc *c) {
	if (a->nhwc != b->nhwc || b->nhwc != c->nhwc)
		return -1;
	return a->nhwc;
}
int cudnnFindConvolutionForwardAlgorithmEx(void *h, void *x, const void *xp, void *w, const void *wp, void *cv, void *y,
					   void *yp, int req, int *ret, void *perf, void *ws, size_t wsBytes) {
	int l = nhwc(x, w, y);
	int r = l < 0 ? BAD : l ? check(x, w, cv, y) : fwd(x, xp, w, wp, cv, y, yp);
	return r ? r : !ws || wsBytes < 64 ? BAD : rank(req, ret, perf, 1, cv);
}
int cudnnFindConvolutionBackwardDataAlgorithmEx(void *h, void *w, const void *wp, void *dy, const void *dyp, void *cv,
						void *dx, void *dxp, int req, int *ret, void *perf, void *ws, size_t wsBytes) {
	int l = nhwc(w, dy, dx);
	int r = l < 0 ? BAD : l ? check(dx, w, cv, dy) : bwd_data(w, wp, dy, dyp, cv, dx, dxp);
	return r ? r : !ws || wsBytes < 64 ? BAD : rank(req, ret, perf, 1, cv);
}
int cudnnFindConvolutionBackwardFilterAlgorithmEx(void *h, void *x, const void *xp, void *dy, const void *dyp, void *cv,
						  void *dw, void *dwp, int req, int *ret, void *perf, void *ws, size_t wsBytes) {
	int l = nhwc(x, dy, dw);
	int r = l < 0 ? BAD : l ? check(x, dw, cv, dy) : bwd_filter(x, xp, dy, dyp, cv, dw, dwp);
	return r ? r : !ws || wsBytes < 64 ? BAD : rank(req, ret, perf, 1, cv);
}
int cudnnConvolutionForward(void *h, const void *alpha, void *x, const void *xp, void *w, const void *wp, void *cv, int algo,
			    void *ws, size_t wsBytes, const void *beta, void *y, void *yp) {
	int r = ready(algo, ws, wsBytes, alpha, beta, cv);
	return r ? r : fwd(x, xp, w, wp, cv, y, yp);
}
int cudnnConvolutionBackwardData(void *h, const void *alpha, void *w, const void *wp, void *dy, const void *dyp, void *cv,
				 int algo, void *ws, size_t wsBytes, const void *beta, void *dx, void *dxp) {
	int r = ready(algo, ws, wsBytes, alpha, beta, cv);
	return r ? r : bwd_data(w, wp, dy, dyp, cv, dx, dxp);
}
int cudnnConvolutionBackwardFilter(void *h, const void *alpha, void *x, const void *xp, void *dy, const void *dyp, void *cv,
				   int algo, void *ws, size_t wsBytes, const void *beta, void *dw, void *dwp) {
	int r = ready(algo, ws, wsBytes, alpha, beta, cv);
	return r ? r : bwd_filter(x, xp, dy, dyp, cv, dw, dwp);
}
#endif

#ifdef STANDIN_CUBLAS
/* A handle's stream and workspace, as cuBLAS keeps them: cublasSetStream_v2
 * puts the handle back on the library's own workspace pool (the cuBLAS
 * documentation), so a workspace set before it is dropped. The stand-in has
 * no pool: a product on a handle without a workspace of its caller's is
 * refused (CUBLAS_STATUS_NOT_SUPPORTED, 15), where real cuBLAS would
 * allocate, inside a captured step too. A workspace must be 256-byte
 * aligned (else CUBLAS_STATUS_INVALID_VALUE), and each product writes over
 * all of it, so a size larger than the allocation breaks its fences. */
struct blas {
	void *stream, *ws;
	size_t bytes;
};
int cublasCreate_v2(void **h) {
	*h = calloc(1, sizeof(struct blas));
	return *h ? 0 : 3; /* CUBLAS_STATUS_ALLOC_FAILED */
}
int cublasDestroy_v2(void *h) {
	free(h);
	return 0;
}
int cublasSetStream_v2(void *h, void *stream) {
	struct blas *b = h;
	b->stream = stream;
	b->ws = NULL;
	b->bytes = 0;
	return 0;
}
int cublasSetWorkspace_v2(void *h, void *ws, size_t bytes) {
	struct blas *b = h;
	if (((size_t)ws & 255) != 0 || (bytes && !ws))
		return 7;
	b->ws = ws;
	b->bytes = bytes;
	return 0;
}
static int blas_ready(void *h) {
	struct blas *b = h;
	if (!b || !b->ws || !b->bytes)
		return 15;
	memset(b->ws, 0xa5, b->bytes);
	return 0;
}

int cublasSgemm_v2(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *a, int lda,
		   const float *b, int ldb, const float *beta, float *c, int ldc) {
	/* cuBLAS's argument checks: op(A) is m×k, so A is lda ≥ rows. */
	if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1) || m < 0 || n < 0 || k < 0 || lda < (ta ? k : m) ||
	    ldb < (tb ? n : k) || ldc < m)
		return 7; /* CUBLAS_STATUS_INVALID_VALUE */
	if (blas_ready(h))
		return 15;
	twin_sgemm(ta, tb, m, n, k, *alpha, a, lda, b, ldb, *beta, c, ldc);
	return 0;
}

/* cublasGemmEx as gpu.c calls it: A and B of one 16-bit type (library_types.h:
 * CUDA_R_16F 2, CUDA_R_16BF 14), C float (CUDA_R_32F 0), CUBLAS_COMPUTE_32F
 * (68) with float alpha and beta, CUBLAS_GEMM_DEFAULT (-1). */
int cublasGemmEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *a, int aType, int lda,
		 const void *b, int bType, int ldb, const void *beta, void *c, int cType, int ldc, int computeType, int algo) {
	if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1) || m < 0 || n < 0 || k < 0 || lda < (ta ? k : m) ||
	    ldb < (tb ? n : k) || ldc < m)
		return 7;
	if (aType != bType || (aType != 2 && aType != 14) || cType != 0 || computeType != 68 || algo != -1)
		return 7;
	if (blas_ready(h))
		return 15;
	twin_gemm_16(aType == 14, ta, tb, m, n, k, *(const float *)alpha, a, lda, b, ldb, *(const float *)beta, c, ldc);
	return 0;
}
#endif

#ifdef STANDIN_NCCL
/* libnccl.so.2 at world size 1, as gpu.c calls it: the unique id is 128
 * bytes (ncclUniqueId) that ncclGetUniqueId fills and ncclCommInitRank
 * takes BY VALUE: the stand-in checks every byte it receives, so an id
 * passed as a pointer (GPU.md's suspect) or truncated is refused
 * (ncclInvalidArgument, 4). ncclAllReduce at one
 * rank copies send to recv (a sum over one rank), ncclFloat32 (7) and
 * ncclSum (0) only. */
struct faster_nccl_id {
	char internal[128];
};
static int comm_marker;
static char last_error[128];
/* ncclGetLastError: the last refusal's words (process-wide, as NCCL's). */
const char *ncclGetLastError(void *comm) { return last_error; }
const char *ncclGetErrorString(int r) { return r == 0 ? "no error" : r == 4 ? "invalid argument" : "internal error"; }
int ncclGetUniqueId(void *id) {
	for (int i = 0; i < 128; i++)
		((unsigned char *)id)[i] = (unsigned char)(i * 7 + 3);
	return 0;
}
int ncclCommInitRank(void **comm, int nranks, struct faster_nccl_id id, int rank) {
	for (int i = 0; i < 128; i++)
		if ((unsigned char)id.internal[i] != (unsigned char)(i * 7 + 3)) {
			snprintf(last_error, sizeof last_error, "the unique id differs at byte %d", i);
			return 4;
		}
	if (nranks != 1 || rank != 0)
		return 4;
	*comm = &comm_marker;
	return 0;
}
int ncclAllReduce(const void *send, void *recv, size_t count, int datatype, int op, void *comm, void *stream) {
	if (comm != &comm_marker || datatype != 7 || op != 0 || !send || !recv)
		return 4;
	memmove(recv, send, count * 4);
	return 0;
}
int ncclCommDestroy(void *comm) { return comm == &comm_marker ? 0 : 4; }
#endif
