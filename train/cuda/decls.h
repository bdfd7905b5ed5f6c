/* decls.h: every CUDA library function the cuda backend calls, declared
 * here because no CUDA header exists where it is built: one line each,
 *   FASTER_CUDA_DECL(LIBRARY, return type, symbol, (parameters))
 * with handles as void *, enums as int, CUdevice as int, CUdeviceptr as
 * unsigned long long. The symbol is the one the library exports, which
 * for the driver's versioned calls is the _v2 name cuda.h's macros map to.
 * decls.go lists the same (a test checks), dl.c tables them and internal/dl resolves them with dlsym,
 * and probe/probe.cpp checks them against the real headers on the GPU
 * machine. Included several times with different definitions of the macro:
 * no include guard (but for the one struct passed by value, below). */
#ifndef FASTER_NCCL_ID
#define FASTER_NCCL_ID
/* ncclUniqueId (nccl.h: typedef struct { char internal[NCCL_UNIQUE_ID_BYTES]; },
 * NCCL_UNIQUE_ID_BYTES 128), which ncclCommInitRank takes BY VALUE: 128
 * bytes passed in memory on the stack (x86-64 SysV: a struct over 16
 * bytes), not a pointer. GPU.md's ctypes probe got 3 from
 * ncclCommInitRank at world size 1; a by-value id declared as a pointer
 * is the suspect. probe.cpp checks the size against the header. */
struct faster_nccl_id {
	char internal[128];
};
#endif
FASTER_CUDA_DECL(DRIVER, int, cuInit, (unsigned int flags))
FASTER_CUDA_DECL(DRIVER, int, cuDriverGetVersion, (int *version))
FASTER_CUDA_DECL(DRIVER, int, cuGetErrorName, (int error, const char **name))
FASTER_CUDA_DECL(DRIVER, int, cuGetErrorString, (int error, const char **text))
FASTER_CUDA_DECL(DRIVER, int, cuDeviceGetCount, (int *count))
FASTER_CUDA_DECL(DRIVER, int, cuDeviceGet, (int *device, int ordinal))
FASTER_CUDA_DECL(DRIVER, int, cuDeviceGetName, (char *name, int len, int device))
FASTER_CUDA_DECL(DRIVER, int, cuDeviceGetAttribute, (int *value, int attribute, int device))
FASTER_CUDA_DECL(DRIVER, int, cuDeviceTotalMem_v2, (size_t *bytes, int device))
FASTER_CUDA_DECL(DRIVER, int, cuDevicePrimaryCtxRetain, (void **context, int device))
FASTER_CUDA_DECL(DRIVER, int, cuDevicePrimaryCtxRelease_v2, (int device))
FASTER_CUDA_DECL(DRIVER, int, cuCtxSetCurrent, (void *context))
FASTER_CUDA_DECL(DRIVER, int, cuCtxSynchronize, (void))
FASTER_CUDA_DECL(DRIVER, int, cuMemAlloc_v2, (unsigned long long *dptr, size_t bytes))
FASTER_CUDA_DECL(DRIVER, int, cuMemFree_v2, (unsigned long long dptr))
FASTER_CUDA_DECL(DRIVER, int, cuMemcpyHtoD_v2, (unsigned long long dst, const void *src, size_t bytes))
FASTER_CUDA_DECL(DRIVER, int, cuMemcpyDtoH_v2, (void *dst, unsigned long long src, size_t bytes))
FASTER_CUDA_DECL(DRIVER, int, cuMemsetD8_v2, (unsigned long long dst, unsigned char value, size_t count))
FASTER_CUDA_DECL(DRIVER, int, cuModuleLoadData, (void **module, const void *image))
FASTER_CUDA_DECL(DRIVER, int, cuModuleUnload, (void *module))
FASTER_CUDA_DECL(DRIVER, int, cuModuleGetFunction, (void **function, void *module, const char *name))
FASTER_CUDA_DECL(DRIVER, int, cuLaunchKernel, (void *function, unsigned int gridX, unsigned int gridY, unsigned int gridZ, unsigned int blockX, unsigned int blockY, unsigned int blockZ, unsigned int sharedBytes, void *stream, void **params, void **extra))
FASTER_CUDA_DECL(DRIVER, int, cuStreamCreate, (void **stream, unsigned int flags))
FASTER_CUDA_DECL(DRIVER, int, cuStreamDestroy_v2, (void *stream))
FASTER_CUDA_DECL(DRIVER, int, cuStreamSynchronize, (void *stream))
FASTER_CUDA_DECL(DRIVER, int, cuMemGetInfo_v2, (size_t *free, size_t *total))
FASTER_CUDA_DECL(DRIVER, int, cuMemcpyHtoDAsync_v2, (unsigned long long dst, const void *src, size_t bytes, void *stream))
FASTER_CUDA_DECL(DRIVER, int, cuMemcpyDtoHAsync_v2, (void *dst, unsigned long long src, size_t bytes, void *stream))
FASTER_CUDA_DECL(DRIVER, int, cuMemsetD8Async, (unsigned long long dst, unsigned char value, size_t count, void *stream))
FASTER_CUDA_DECL(DRIVER, int, cuStreamBeginCapture_v2, (void *stream, int mode))
FASTER_CUDA_DECL(DRIVER, int, cuStreamEndCapture, (void *stream, void **graph))
FASTER_CUDA_DECL(DRIVER, int, cuGraphInstantiateWithFlags, (void **exec, void *graph, unsigned long long flags))
FASTER_CUDA_DECL(DRIVER, int, cuGraphLaunch, (void *exec, void *stream))
FASTER_CUDA_DECL(DRIVER, int, cuGraphExecDestroy, (void *exec))
FASTER_CUDA_DECL(DRIVER, int, cuGraphDestroy, (void *graph))
FASTER_CUDA_DECL(DRIVER, int, cuMemcpyDtoDAsync_v2, (unsigned long long dst, unsigned long long src, size_t bytes, void *stream))
FASTER_CUDA_DECL(DRIVER, int, cuEventCreate, (void **event, unsigned int flags))
FASTER_CUDA_DECL(DRIVER, int, cuEventRecord, (void *event, void *stream))
FASTER_CUDA_DECL(DRIVER, int, cuEventSynchronize, (void *event))
FASTER_CUDA_DECL(DRIVER, int, cuEventDestroy_v2, (void *event))
FASTER_CUDA_DECL(DRIVER, int, cuEventElapsedTime, (float *ms, void *start, void *end))
FASTER_CUDA_DECL(DRIVER, int, cuMemHostAlloc, (void **host, size_t bytes, unsigned int flags))
FASTER_CUDA_DECL(DRIVER, int, cuMemFreeHost, (void *host))
FASTER_CUDA_DECL(DRIVER, int, cuStreamWaitEvent, (void *stream, void *event, unsigned int flags))
FASTER_CUDA_DECL(CUDART, int, cudaRuntimeGetVersion, (int *version))
FASTER_CUDA_DECL(NVRTC, int, nvrtcVersion, (int *major, int *minor))
FASTER_CUDA_DECL(NVRTC, const char *, nvrtcGetErrorString, (int result))
FASTER_CUDA_DECL(NVRTC, int, nvrtcCreateProgram, (void **program, const char *source, const char *name, int numHeaders, const char *const *headers, const char *const *includeNames))
FASTER_CUDA_DECL(NVRTC, int, nvrtcCompileProgram, (void *program, int numOptions, const char *const *options))
FASTER_CUDA_DECL(NVRTC, int, nvrtcGetProgramLogSize, (void *program, size_t *size))
FASTER_CUDA_DECL(NVRTC, int, nvrtcGetProgramLog, (void *program, char *log))
FASTER_CUDA_DECL(NVRTC, int, nvrtcGetCUBINSize, (void *program, size_t *size))
FASTER_CUDA_DECL(NVRTC, int, nvrtcGetCUBIN, (void *program, char *cubin))
FASTER_CUDA_DECL(NVRTC, int, nvrtcDestroyProgram, (void **program))
FASTER_CUDA_DECL(CUBLAS, int, cublasCreate_v2, (void **handle))
FASTER_CUDA_DECL(CUBLAS, int, cublasDestroy_v2, (void *handle))
FASTER_CUDA_DECL(CUBLAS, int, cublasGetVersion_v2, (void *handle, int *version))
FASTER_CUDA_DECL(CUBLAS, int, cublasSetStream_v2, (void *handle, void *stream))
FASTER_CUDA_DECL(CUBLAS, int, cublasSetMathMode, (void *handle, int mode))
FASTER_CUDA_DECL(CUBLAS, int, cublasSetWorkspace_v2, (void *handle, void *workspace, size_t workspaceSizeInBytes))
FASTER_CUDA_DECL(CUBLAS, int, cublasSgemm_v2, (void *handle, int transa, int transb, int m, int n, int k, const float *alpha, const float *a, int lda, const float *b, int ldb, const float *beta, float *c, int ldc))
FASTER_CUDA_DECL(CUBLAS, int, cublasGemmEx, (void *handle, int transa, int transb, int m, int n, int k, const void *alpha, const void *a, int aType, int lda, const void *b, int bType, int ldb, const void *beta, void *c, int cType, int ldc, int computeType, int algo))
FASTER_CUDA_DECL(CUBLASLT, size_t, cublasLtGetVersion, (void))
FASTER_CUDA_DECL(CUBLASLT, int, cublasLtCreate, (void **handle))
FASTER_CUDA_DECL(CUBLASLT, int, cublasLtDestroy, (void *handle))
FASTER_CUDA_DECL(CUDNN, size_t, cudnnGetVersion, (void))
FASTER_CUDA_DECL(CUDNN, const char *, cudnnGetErrorString, (int status))
FASTER_CUDA_DECL(CUDNN, int, cudnnCreate, (void **handle))
FASTER_CUDA_DECL(CUDNN, int, cudnnDestroy, (void *handle))
FASTER_CUDA_DECL(CUDNN, int, cudnnSetStream, (void *handle, void *stream))
FASTER_CUDA_DECL(CUDNN, int, cudnnCreateTensorDescriptor, (void **desc))
FASTER_CUDA_DECL(CUDNN, int, cudnnSetTensor4dDescriptor, (void *desc, int format, int dataType, int n, int c, int h, int w))
FASTER_CUDA_DECL(CUDNN, int, cudnnDestroyTensorDescriptor, (void *desc))
FASTER_CUDA_DECL(CUDNN, int, cudnnCreateFilterDescriptor, (void **desc))
FASTER_CUDA_DECL(CUDNN, int, cudnnSetFilter4dDescriptor, (void *desc, int dataType, int format, int k, int c, int h, int w))
FASTER_CUDA_DECL(CUDNN, int, cudnnDestroyFilterDescriptor, (void *desc))
FASTER_CUDA_DECL(CUDNN, int, cudnnCreateConvolutionDescriptor, (void **desc))
FASTER_CUDA_DECL(CUDNN, int, cudnnSetConvolution2dDescriptor, (void *desc, int padH, int padW, int strideH, int strideW, int dilationH, int dilationW, int mode, int computeType))
FASTER_CUDA_DECL(CUDNN, int, cudnnSetConvolutionMathType, (void *desc, int mathType))
FASTER_CUDA_DECL(CUDNN, int, cudnnDestroyConvolutionDescriptor, (void *desc))
FASTER_CUDA_DECL(CUDNN, int, cudnnGetConvolutionForwardAlgorithm_v7, (void *handle, void *xDesc, void *wDesc, void *convDesc, void *yDesc, int requested, int *returned, void *perf))
FASTER_CUDA_DECL(CUDNN, int, cudnnGetConvolutionBackwardDataAlgorithm_v7, (void *handle, void *wDesc, void *dyDesc, void *convDesc, void *dxDesc, int requested, int *returned, void *perf))
FASTER_CUDA_DECL(CUDNN, int, cudnnGetConvolutionBackwardFilterAlgorithm_v7, (void *handle, void *xDesc, void *dyDesc, void *convDesc, void *dwDesc, int requested, int *returned, void *perf))
FASTER_CUDA_DECL(CUDNN, int, cudnnGetConvolutionForwardWorkspaceSize, (void *handle, void *xDesc, void *wDesc, void *convDesc, void *yDesc, int algo, size_t *bytes))
FASTER_CUDA_DECL(CUDNN, int, cudnnGetConvolutionBackwardDataWorkspaceSize, (void *handle, void *wDesc, void *dyDesc, void *convDesc, void *dxDesc, int algo, size_t *bytes))
FASTER_CUDA_DECL(CUDNN, int, cudnnGetConvolutionBackwardFilterWorkspaceSize, (void *handle, void *xDesc, void *dyDesc, void *convDesc, void *dwDesc, int algo, size_t *bytes))
FASTER_CUDA_DECL(CUDNN, int, cudnnFindConvolutionForwardAlgorithmEx, (void *handle, void *xDesc, const void *x, void *wDesc, const void *w, void *convDesc, void *yDesc, void *y, int requested, int *returned, void *perf, void *workspace, size_t workspaceBytes))
FASTER_CUDA_DECL(CUDNN, int, cudnnFindConvolutionBackwardDataAlgorithmEx, (void *handle, void *wDesc, const void *w, void *dyDesc, const void *dy, void *convDesc, void *dxDesc, void *dx, int requested, int *returned, void *perf, void *workspace, size_t workspaceBytes))
FASTER_CUDA_DECL(CUDNN, int, cudnnFindConvolutionBackwardFilterAlgorithmEx, (void *handle, void *xDesc, const void *x, void *dyDesc, const void *dy, void *convDesc, void *dwDesc, void *dw, int requested, int *returned, void *perf, void *workspace, size_t workspaceBytes))
FASTER_CUDA_DECL(CUDNN, int, cudnnConvolutionForward, (void *handle, const void *alpha, void *xDesc, const void *x, void *wDesc, const void *w, void *convDesc, int algo, void *workspace, size_t workspaceBytes, const void *beta, void *yDesc, void *y))
FASTER_CUDA_DECL(CUDNN, int, cudnnConvolutionBackwardData, (void *handle, const void *alpha, void *wDesc, const void *w, void *dyDesc, const void *dy, void *convDesc, int algo, void *workspace, size_t workspaceBytes, const void *beta, void *dxDesc, void *dx))
FASTER_CUDA_DECL(CUDNN, int, cudnnConvolutionBackwardFilter, (void *handle, const void *alpha, void *xDesc, const void *x, void *dyDesc, const void *dy, void *convDesc, int algo, void *workspace, size_t workspaceBytes, const void *beta, void *dwDesc, void *dw))
FASTER_CUDA_DECL(NCCL, int, ncclGetVersion, (int *version))
FASTER_CUDA_DECL(NCCL, const char *, ncclGetErrorString, (int result))
/* nccl.h (since 2.13): the text of the last failure, process-wide for a
 * NULL comm: which step of an init failed, where ncclGetErrorString says
 * only "internal error". */
FASTER_CUDA_DECL(NCCL, const char *, ncclGetLastError, (void *comm))
FASTER_CUDA_DECL(NCCL, int, ncclGetUniqueId, (void *uniqueId))
FASTER_CUDA_DECL(NCCL, int, ncclCommInitRank, (void **comm, int nranks, struct faster_nccl_id id, int rank))
FASTER_CUDA_DECL(NCCL, int, ncclAllReduce, (const void *send, void *recv, size_t count, int datatype, int op, void *comm, void *stream))
FASTER_CUDA_DECL(NCCL, int, ncclCommDestroy, (void *comm))
