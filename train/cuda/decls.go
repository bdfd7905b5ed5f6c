package cuda

import (
	"strconv"
	"strings"
)

// Library is one of the CUDA libraries the backend opens.
type Library int

// The libraries, in dl.h's order (FASTER_LIB_*).
const (
	Driver   Library = iota // libcuda: devices, memory, modules, launches
	Runtime                 // libcudart: its version (cuDNN and cuBLAS need it loaded)
	NVRTC                   // the run-time compiler of kernels.cu
	CUBLAS                  // cuBLAS: matrix products
	CUBLASLt                // cuBLASLt: matrix products with epilogues
	CUDNN                   // cuDNN 9: convolutions
	NCCL                    // NCCL: collectives
)

// library is how a Library is found: by soname, the first that dlopen
// takes (no path: the system's search, LD_LIBRARY_PATH included).
type library struct {
	name     string
	sonames  []string
	required bool // Open fails without it; the others are reported
	toolkit  bool // its sonames' major is the CUDA toolkit's (ForDriver orders them)
}

var libraries = []library{
	Driver:   {"driver", []string{"libcuda.so.1"}, true, false},
	Runtime:  {"cudart", []string{"libcudart.so.13", "libcudart.so.12"}, false, true},
	NVRTC:    {"nvrtc", []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"}, true, true},
	CUBLAS:   {"cublas", []string{"libcublas.so.13", "libcublas.so.12"}, false, true},
	CUBLASLt: {"cublasLt", []string{"libcublasLt.so.13", "libcublasLt.so.12"}, false, true},
	CUDNN:    {"cudnn", []string{"libcudnn.so.9"}, false, false},
	NCCL:     {"nccl", []string{"libnccl.so.2"}, false, false},
}

// sonamesFor is the order library l's sonames are tried in under a
// driver of version driver (cuDriverGetVersion's: 12020 is 12.2; 0 when
// none opened): a toolkit library's sonames of a CUDA major the driver
// runs first, newest first, then the newer ones (a CUDA 13 library opens
// under a 12.x driver, then fails every call with
// cudaErrorInsufficientDriver, so it comes after the 12 beside it).
func sonamesFor(l Library, driver int) []string {
	if !libraries[l].toolkit {
		return libraries[l].sonames
	}
	return ForDriver(libraries[l].sonames, driver)
}

// ForDriver orders a toolkit library's sonames (newest first) for a
// driver of version driver: those whose major is above the driver's CUDA
// major go last, the others keeping their order; with no driver (0), as
// given. The nvjpeg package orders its own by it.
func ForDriver(sonames []string, driver int) []string {
	if driver <= 0 {
		return sonames
	}
	var runs, newer []string
	for _, so := range sonames {
		if m, ok := sonameMajor(so); ok && m > driver/1000 {
			newer = append(newer, so)
		} else {
			runs = append(runs, so)
		}
	}
	return append(runs, newer...)
}

// sonameMajor is the first number after ".so." in so.
func sonameMajor(so string) (int, bool) {
	_, v, ok := strings.Cut(so, ".so.")
	if !ok {
		return 0, false
	}
	v, _, _ = strings.Cut(v, ".")
	m, err := strconv.Atoi(v)
	return m, err == nil
}

func (l Library) String() string { return libraries[l].name }

// Decl is one library function the backend calls, as decls.h declares it
// (handles void *, enums int, CUdevice int, CUdeviceptr unsigned long long).
type Decl struct {
	Symbol string  // as the library exports it
	Lib    Library // where it is
	C      string  // its C declaration, as in decls.h
}

// exportNames are the names a declared symbol is looked up under, in
// order, where a toolkit renamed it: CUDA 12.8 added
// cuEventElapsedTime_v2 (the same call) and 13.0's cuda.h declares it
// alone, while drivers before 12.8 export only the first. The declared
// name comes last. probe/probe.cpp checks the first where the header
// declares it.
var exportNames = map[string][]string{
	"cuEventElapsedTime": {"cuEventElapsedTime_v2", "cuEventElapsedTime"},
}

// Decls lists decls.h's declarations in its order (a test checks them
// against the file and against the loader's table; probe/ checks them
// against the real headers).
var Decls = []Decl{
	{"cuInit", Driver, "int cuInit(unsigned int flags)"},
	{"cuDriverGetVersion", Driver, "int cuDriverGetVersion(int *version)"},
	{"cuGetErrorName", Driver, "int cuGetErrorName(int error, const char **name)"},
	{"cuGetErrorString", Driver, "int cuGetErrorString(int error, const char **text)"},
	{"cuDeviceGetCount", Driver, "int cuDeviceGetCount(int *count)"},
	{"cuDeviceGet", Driver, "int cuDeviceGet(int *device, int ordinal)"},
	{"cuDeviceGetName", Driver, "int cuDeviceGetName(char *name, int len, int device)"},
	{"cuDeviceGetAttribute", Driver, "int cuDeviceGetAttribute(int *value, int attribute, int device)"},
	{"cuDeviceTotalMem_v2", Driver, "int cuDeviceTotalMem_v2(size_t *bytes, int device)"},
	{"cuDevicePrimaryCtxRetain", Driver, "int cuDevicePrimaryCtxRetain(void **context, int device)"},
	{"cuDevicePrimaryCtxRelease_v2", Driver, "int cuDevicePrimaryCtxRelease_v2(int device)"},
	{"cuCtxSetCurrent", Driver, "int cuCtxSetCurrent(void *context)"},
	{"cuCtxSynchronize", Driver, "int cuCtxSynchronize(void)"},
	{"cuMemAlloc_v2", Driver, "int cuMemAlloc_v2(unsigned long long *dptr, size_t bytes)"},
	{"cuMemFree_v2", Driver, "int cuMemFree_v2(unsigned long long dptr)"},
	{"cuMemcpyHtoD_v2", Driver, "int cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t bytes)"},
	{"cuMemcpyDtoH_v2", Driver, "int cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t bytes)"},
	{"cuMemsetD8_v2", Driver, "int cuMemsetD8_v2(unsigned long long dst, unsigned char value, size_t count)"},
	{"cuModuleLoadData", Driver, "int cuModuleLoadData(void **module, const void *image)"},
	{"cuModuleUnload", Driver, "int cuModuleUnload(void *module)"},
	{"cuModuleGetFunction", Driver, "int cuModuleGetFunction(void **function, void *module, const char *name)"},
	{"cuLaunchKernel", Driver, "int cuLaunchKernel(void *function, unsigned int gridX, unsigned int gridY, unsigned int gridZ, unsigned int blockX, unsigned int blockY, unsigned int blockZ, unsigned int sharedBytes, void *stream, void **params, void **extra)"},
	{"cuStreamCreate", Driver, "int cuStreamCreate(void **stream, unsigned int flags)"},
	{"cuStreamDestroy_v2", Driver, "int cuStreamDestroy_v2(void *stream)"},
	{"cuStreamSynchronize", Driver, "int cuStreamSynchronize(void *stream)"},
	{"cuMemGetInfo_v2", Driver, "int cuMemGetInfo_v2(size_t *free, size_t *total)"},
	{"cuMemcpyHtoDAsync_v2", Driver, "int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void *src, size_t bytes, void *stream)"},
	{"cuMemcpyDtoHAsync_v2", Driver, "int cuMemcpyDtoHAsync_v2(void *dst, unsigned long long src, size_t bytes, void *stream)"},
	{"cuMemsetD8Async", Driver, "int cuMemsetD8Async(unsigned long long dst, unsigned char value, size_t count, void *stream)"},
	{"cuStreamBeginCapture_v2", Driver, "int cuStreamBeginCapture_v2(void *stream, int mode)"},
	{"cuStreamEndCapture", Driver, "int cuStreamEndCapture(void *stream, void **graph)"},
	{"cuGraphInstantiateWithFlags", Driver, "int cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags)"},
	{"cuGraphLaunch", Driver, "int cuGraphLaunch(void *exec, void *stream)"},
	{"cuGraphExecDestroy", Driver, "int cuGraphExecDestroy(void *exec)"},
	{"cuGraphDestroy", Driver, "int cuGraphDestroy(void *graph)"},
	{"cuMemcpyDtoDAsync_v2", Driver, "int cuMemcpyDtoDAsync_v2(unsigned long long dst, unsigned long long src, size_t bytes, void *stream)"},
	{"cuEventCreate", Driver, "int cuEventCreate(void **event, unsigned int flags)"},
	{"cuEventRecord", Driver, "int cuEventRecord(void *event, void *stream)"},
	{"cuEventSynchronize", Driver, "int cuEventSynchronize(void *event)"},
	{"cuEventDestroy_v2", Driver, "int cuEventDestroy_v2(void *event)"},
	{"cuEventElapsedTime", Driver, "int cuEventElapsedTime(float *ms, void *start, void *end)"},
	{"cuMemHostAlloc", Driver, "int cuMemHostAlloc(void **host, size_t bytes, unsigned int flags)"},
	{"cuMemFreeHost", Driver, "int cuMemFreeHost(void *host)"},
	{"cuStreamWaitEvent", Driver, "int cuStreamWaitEvent(void *stream, void *event, unsigned int flags)"},
	{"cudaRuntimeGetVersion", Runtime, "int cudaRuntimeGetVersion(int *version)"},
	{"nvrtcVersion", NVRTC, "int nvrtcVersion(int *major, int *minor)"},
	{"nvrtcGetErrorString", NVRTC, "const char * nvrtcGetErrorString(int result)"},
	{"nvrtcCreateProgram", NVRTC, "int nvrtcCreateProgram(void **program, const char *source, const char *name, int numHeaders, const char *const *headers, const char *const *includeNames)"},
	{"nvrtcCompileProgram", NVRTC, "int nvrtcCompileProgram(void *program, int numOptions, const char *const *options)"},
	{"nvrtcGetProgramLogSize", NVRTC, "int nvrtcGetProgramLogSize(void *program, size_t *size)"},
	{"nvrtcGetProgramLog", NVRTC, "int nvrtcGetProgramLog(void *program, char *log)"},
	{"nvrtcGetCUBINSize", NVRTC, "int nvrtcGetCUBINSize(void *program, size_t *size)"},
	{"nvrtcGetCUBIN", NVRTC, "int nvrtcGetCUBIN(void *program, char *cubin)"},
	{"nvrtcDestroyProgram", NVRTC, "int nvrtcDestroyProgram(void **program)"},
	{"cublasCreate_v2", CUBLAS, "int cublasCreate_v2(void **handle)"},
	{"cublasDestroy_v2", CUBLAS, "int cublasDestroy_v2(void *handle)"},
	{"cublasGetVersion_v2", CUBLAS, "int cublasGetVersion_v2(void *handle, int *version)"},
	{"cublasSetStream_v2", CUBLAS, "int cublasSetStream_v2(void *handle, void *stream)"},
	{"cublasSetMathMode", CUBLAS, "int cublasSetMathMode(void *handle, int mode)"},
	{"cublasSetWorkspace_v2", CUBLAS, "int cublasSetWorkspace_v2(void *handle, void *workspace, size_t workspaceSizeInBytes)"},
	{"cublasSgemm_v2", CUBLAS, "int cublasSgemm_v2(void *handle, int transa, int transb, int m, int n, int k, const float *alpha, const float *a, int lda, const float *b, int ldb, const float *beta, float *c, int ldc)"},
	{"cublasGemmEx", CUBLAS, "int cublasGemmEx(void *handle, int transa, int transb, int m, int n, int k, const void *alpha, const void *a, int aType, int lda, const void *b, int bType, int ldb, const void *beta, void *c, int cType, int ldc, int computeType, int algo)"},
	{"cublasLtGetVersion", CUBLASLt, "size_t cublasLtGetVersion(void)"},
	{"cublasLtCreate", CUBLASLt, "int cublasLtCreate(void **handle)"},
	{"cublasLtDestroy", CUBLASLt, "int cublasLtDestroy(void *handle)"},
	{"cudnnGetVersion", CUDNN, "size_t cudnnGetVersion(void)"},
	{"cudnnGetErrorString", CUDNN, "const char * cudnnGetErrorString(int status)"},
	{"cudnnCreate", CUDNN, "int cudnnCreate(void **handle)"},
	{"cudnnDestroy", CUDNN, "int cudnnDestroy(void *handle)"},
	{"cudnnSetStream", CUDNN, "int cudnnSetStream(void *handle, void *stream)"},
	{"cudnnCreateTensorDescriptor", CUDNN, "int cudnnCreateTensorDescriptor(void **desc)"},
	{"cudnnSetTensor4dDescriptor", CUDNN, "int cudnnSetTensor4dDescriptor(void *desc, int format, int dataType, int n, int c, int h, int w)"},
	{"cudnnDestroyTensorDescriptor", CUDNN, "int cudnnDestroyTensorDescriptor(void *desc)"},
	{"cudnnCreateFilterDescriptor", CUDNN, "int cudnnCreateFilterDescriptor(void **desc)"},
	{"cudnnSetFilter4dDescriptor", CUDNN, "int cudnnSetFilter4dDescriptor(void *desc, int dataType, int format, int k, int c, int h, int w)"},
	{"cudnnDestroyFilterDescriptor", CUDNN, "int cudnnDestroyFilterDescriptor(void *desc)"},
	{"cudnnCreateConvolutionDescriptor", CUDNN, "int cudnnCreateConvolutionDescriptor(void **desc)"},
	{"cudnnSetConvolution2dDescriptor", CUDNN, "int cudnnSetConvolution2dDescriptor(void *desc, int padH, int padW, int strideH, int strideW, int dilationH, int dilationW, int mode, int computeType)"},
	{"cudnnSetConvolutionMathType", CUDNN, "int cudnnSetConvolutionMathType(void *desc, int mathType)"},
	{"cudnnDestroyConvolutionDescriptor", CUDNN, "int cudnnDestroyConvolutionDescriptor(void *desc)"},
	{"cudnnGetConvolutionForwardAlgorithm_v7", CUDNN, "int cudnnGetConvolutionForwardAlgorithm_v7(void *handle, void *xDesc, void *wDesc, void *convDesc, void *yDesc, int requested, int *returned, void *perf)"},
	{"cudnnGetConvolutionBackwardDataAlgorithm_v7", CUDNN, "int cudnnGetConvolutionBackwardDataAlgorithm_v7(void *handle, void *wDesc, void *dyDesc, void *convDesc, void *dxDesc, int requested, int *returned, void *perf)"},
	{"cudnnGetConvolutionBackwardFilterAlgorithm_v7", CUDNN, "int cudnnGetConvolutionBackwardFilterAlgorithm_v7(void *handle, void *xDesc, void *dyDesc, void *convDesc, void *dwDesc, int requested, int *returned, void *perf)"},
	{"cudnnGetConvolutionForwardWorkspaceSize", CUDNN, "int cudnnGetConvolutionForwardWorkspaceSize(void *handle, void *xDesc, void *wDesc, void *convDesc, void *yDesc, int algo, size_t *bytes)"},
	{"cudnnGetConvolutionBackwardDataWorkspaceSize", CUDNN, "int cudnnGetConvolutionBackwardDataWorkspaceSize(void *handle, void *wDesc, void *dyDesc, void *convDesc, void *dxDesc, int algo, size_t *bytes)"},
	{"cudnnGetConvolutionBackwardFilterWorkspaceSize", CUDNN, "int cudnnGetConvolutionBackwardFilterWorkspaceSize(void *handle, void *xDesc, void *dyDesc, void *convDesc, void *dwDesc, int algo, size_t *bytes)"},
	{"cudnnFindConvolutionForwardAlgorithmEx", CUDNN, "int cudnnFindConvolutionForwardAlgorithmEx(void *handle, void *xDesc, const void *x, void *wDesc, const void *w, void *convDesc, void *yDesc, void *y, int requested, int *returned, void *perf, void *workspace, size_t workspaceBytes)"},
	{"cudnnFindConvolutionBackwardDataAlgorithmEx", CUDNN, "int cudnnFindConvolutionBackwardDataAlgorithmEx(void *handle, void *wDesc, const void *w, void *dyDesc, const void *dy, void *convDesc, void *dxDesc, void *dx, int requested, int *returned, void *perf, void *workspace, size_t workspaceBytes)"},
	{"cudnnFindConvolutionBackwardFilterAlgorithmEx", CUDNN, "int cudnnFindConvolutionBackwardFilterAlgorithmEx(void *handle, void *xDesc, const void *x, void *dyDesc, const void *dy, void *convDesc, void *dwDesc, void *dw, int requested, int *returned, void *perf, void *workspace, size_t workspaceBytes)"},
	{"cudnnConvolutionForward", CUDNN, "int cudnnConvolutionForward(void *handle, const void *alpha, void *xDesc, const void *x, void *wDesc, const void *w, void *convDesc, int algo, void *workspace, size_t workspaceBytes, const void *beta, void *yDesc, void *y)"},
	{"cudnnConvolutionBackwardData", CUDNN, "int cudnnConvolutionBackwardData(void *handle, const void *alpha, void *wDesc, const void *w, void *dyDesc, const void *dy, void *convDesc, int algo, void *workspace, size_t workspaceBytes, const void *beta, void *dxDesc, void *dx)"},
	{"cudnnConvolutionBackwardFilter", CUDNN, "int cudnnConvolutionBackwardFilter(void *handle, const void *alpha, void *xDesc, const void *x, void *dyDesc, const void *dy, void *convDesc, int algo, void *workspace, size_t workspaceBytes, const void *beta, void *dwDesc, void *dw)"},
	{"ncclGetVersion", NCCL, "int ncclGetVersion(int *version)"},
	{"ncclGetErrorString", NCCL, "const char * ncclGetErrorString(int result)"},
	{"ncclGetLastError", NCCL, "const char * ncclGetLastError(void *comm)"},
	{"ncclGetUniqueId", NCCL, "int ncclGetUniqueId(void *uniqueId)"},
	{"ncclCommInitRank", NCCL, "int ncclCommInitRank(void **comm, int nranks, struct faster_nccl_id id, int rank)"},
	{"ncclAllReduce", NCCL, "int ncclAllReduce(const void *send, void *recv, size_t count, int datatype, int op, void *comm, void *stream)"},
	{"ncclCommDestroy", NCCL, "int ncclCommDestroy(void *comm)"},
}
