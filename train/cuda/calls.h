/* calls.h: C wrappers that call the resolved function pointers (cgo
 * cannot call a C function pointer). The caller checks that the library
 * loaded. Only what Go calls is here. */
#include <stddef.h>

static inline int call_cuInit(unsigned f) { return faster_p_cuInit(f); }
static inline int call_cuDriverGetVersion(int *v) { return faster_p_cuDriverGetVersion(v); }
static inline int call_cuGetErrorName(int e, const char **s) { return faster_p_cuGetErrorName(e, s); }
static inline int call_cuDeviceGetCount(int *n) { return faster_p_cuDeviceGetCount(n); }
static inline int call_cuDeviceGet(int *d, int i) { return faster_p_cuDeviceGet(d, i); }
static inline int call_cuDeviceGetName(char *s, int n, int d) { return faster_p_cuDeviceGetName(s, n, d); }
static inline int call_cuDeviceGetAttribute(int *v, int a, int d) { return faster_p_cuDeviceGetAttribute(v, a, d); }
static inline int call_cuDeviceTotalMem(size_t *b, int d) { return faster_p_cuDeviceTotalMem_v2(b, d); }
static inline int call_cuDevicePrimaryCtxRetain(void **c, int d) { return faster_p_cuDevicePrimaryCtxRetain(c, d); }
static inline int call_cuDevicePrimaryCtxRelease(int d) { return faster_p_cuDevicePrimaryCtxRelease_v2(d); }
static inline int call_cuCtxSetCurrent(void *c) { return faster_p_cuCtxSetCurrent(c); }
static inline int call_cuCtxSynchronize(void) { return faster_p_cuCtxSynchronize(); }
static inline int call_cuMemAlloc(unsigned long long *p, size_t n) { return faster_p_cuMemAlloc_v2(p, n); }
static inline int call_cuMemFree(unsigned long long p) { return faster_p_cuMemFree_v2(p); }
static inline int call_cuMemcpyHtoD(unsigned long long d, const void *s, size_t n) { return faster_p_cuMemcpyHtoD_v2(d, s, n); }
static inline int call_cuMemcpyDtoH(void *d, unsigned long long s, size_t n) { return faster_p_cuMemcpyDtoH_v2(d, s, n); }
static inline int call_cuMemsetD8(unsigned long long d, unsigned char v, size_t n) { return faster_p_cuMemsetD8_v2(d, v, n); }
static inline int call_cuModuleLoadData(void **m, const void *img) { return faster_p_cuModuleLoadData(m, img); }
static inline int call_cuModuleUnload(void *m) { return faster_p_cuModuleUnload(m); }
static inline int call_cuModuleGetFunction(void **f, void *m, const char *n) { return faster_p_cuModuleGetFunction(f, m, n); }

/* call_cuLaunchKernelOn queues f on stream (NULL: the legacy default
 * stream) with n arguments whose values sit in 8-byte slots of args (a
 * 4-byte argument in the slot's first bytes: the machines are
 * little-endian); cuLaunchKernel copies them before it returns. */
static inline int call_cuLaunchKernelOn(void *stream, void *f, unsigned gx, unsigned bx, unsigned long long *args, int n) {
	void *params[32];
	if (n > 32)
		return 1; /* CUDA_ERROR_INVALID_VALUE */
	for (int i = 0; i < n; i++)
		params[i] = &args[i];
	return faster_p_cuLaunchKernel(f, gx, 1, 1, bx, 1, 1, 0, stream, params, NULL);
}

static inline int call_cudaRuntimeGetVersion(int *v) { return faster_p_cudaRuntimeGetVersion(v); }
static inline int call_nvrtcVersion(int *a, int *b) { return faster_p_nvrtcVersion(a, b); }
static inline const char *call_nvrtcGetErrorString(int r) { return faster_p_nvrtcGetErrorString(r); }
static inline int call_nvrtcCreateProgram(void **p, const char *src, const char *name) {
	return faster_p_nvrtcCreateProgram(p, src, name, 0, NULL, NULL);
}
static inline int call_nvrtcCompileProgram(void *p, int n, const char *const *o) { return faster_p_nvrtcCompileProgram(p, n, o); }
static inline int call_nvrtcGetProgramLogSize(void *p, size_t *n) { return faster_p_nvrtcGetProgramLogSize(p, n); }
static inline int call_nvrtcGetProgramLog(void *p, char *s) { return faster_p_nvrtcGetProgramLog(p, s); }
static inline int call_nvrtcGetCUBINSize(void *p, size_t *n) { return faster_p_nvrtcGetCUBINSize(p, n); }
static inline int call_nvrtcGetCUBIN(void *p, char *s) { return faster_p_nvrtcGetCUBIN(p, s); }
static inline int call_nvrtcDestroyProgram(void **p) { return faster_p_nvrtcDestroyProgram(p); }
static inline size_t call_cublasLtGetVersion(void) { return faster_p_cublasLtGetVersion(); }
static inline size_t call_cudnnGetVersion(void) { return faster_p_cudnnGetVersion(); }
static inline int call_ncclGetVersion(int *v) { return faster_p_ncclGetVersion(v); }
static inline int call_cublasCreate(void **h) { return faster_p_cublasCreate_v2(h); }
static inline int call_cublasGetVersion(void *h, int *v) { return faster_p_cublasGetVersion_v2(h, v); }
static inline int call_cublasDestroy(void *h) { return faster_p_cublasDestroy_v2(h); }
static inline int call_cublasLtCreate(void **h) { return faster_p_cublasLtCreate(h); }
static inline int call_cublasLtDestroy(void *h) { return faster_p_cublasLtDestroy(h); }
static inline int call_cudnnCreate(void **h) { return faster_p_cudnnCreate(h); }
static inline int call_cudnnDestroy(void *h) { return faster_p_cudnnDestroy(h); }
static inline const char *call_cudnnGetErrorString(int s) { return faster_p_cudnnGetErrorString(s); }
static inline int call_ncclGetUniqueId(void *id) { return faster_p_ncclGetUniqueId(id); }
static inline const char *call_ncclGetErrorString(int r) { return faster_p_ncclGetErrorString(r); }
static inline const char *call_ncclGetLastError(void) { return faster_p_ncclGetLastError(NULL); }
static inline int call_cuGetErrorString(int e, const char **s) { return faster_p_cuGetErrorString(e, s); }
