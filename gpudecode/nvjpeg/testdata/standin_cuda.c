/* standin_cuda.c: stand-ins of libcuda.so.1 (-DSTANDIN_DRIVER) and
 * libnvrtc.so.13 (-DSTANDIN_NVRTC) that the decoder test builds with gcc
 * (nvj_test.go), beside stubs of train/cuda's other declarations that
 * return 0. The driver's is linked with standin_cudart.c's library and
 * with kernels/cpu.c (resize.cu built for the CPU): a module's function
 * is its name, and cuLaunchKernel queues the CPU build of that kernel on
 * the stream it is given (standin_enqueue: a live non-blocking stream of
 * cudaStreamCreateWithFlags, or a violation), to run when the stream is
 * synchronised. cuCtxSynchronize, which waits for every stream of the
 * context, is a violation. "Device memory" is host memory. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef STANDIN_DRIVER
#include "cpu.h"

void standin_enqueue(void *stream, const char *call, void (*run)(void *), void *arg, const void *src, size_t n);
void standin_violation(const char *format, ...);

int cuInit(unsigned int flags) { return 0; }
int cuDriverGetVersion(int *v) {
	*v = 13000;
	return 0;
}
int cuGetErrorName(int e, const char **name) {
	*name = "CUDA_ERROR_STANDIN";
	return 0;
}
int cuDeviceGetCount(int *n) {
	*n = 1;
	return 0;
}
int cuDeviceGet(int *d, int ordinal) {
	*d = ordinal;
	return ordinal == 0 ? 0 : 101; /* CUDA_ERROR_INVALID_DEVICE */
}
int cuDeviceGetName(char *name, int len, int d) {
	strncpy(name, "stand-in", len);
	return 0;
}
int cuDeviceGetAttribute(int *v, int attr, int d) {
	switch (attr) {
	case 1: /* MAX_THREADS_PER_BLOCK */
		*v = 1024;
		break;
	case 16: /* MULTIPROCESSOR_COUNT */
		*v = 2;
		break;
	case 39: /* MAX_THREADS_PER_MULTIPROCESSOR */
		*v = 2048;
		break;
	case 75: /* COMPUTE_CAPABILITY_MAJOR */
		*v = 9;
		break;
	default:
		*v = 0;
	}
	return 0;
}
int cuDeviceTotalMem_v2(size_t *b, int d) {
	*b = (size_t)1 << 34;
	return 0;
}
static int context;
int cuDevicePrimaryCtxRetain(void **c, int d) {
	*c = &context;
	return 0;
}
int cuCtxSynchronize(void) {
	standin_violation("cuCtxSynchronize: waits for every stream of the context, a trainer's too");
	return 0;
}
int cuModuleGetFunction(void **f, void *m, const char *name) {
	*f = strdup(name);
	return 0;
}

struct launch {
	int kernel; /* 0 resize_h, 1 resize_v_u8, 2 resize_v_f32 */
	unsigned grid, block;
	unsigned long long a[9];
};

#define P(i) ((void *)(uintptr_t)l->a[i])
#define I(i) ((int32_t)(uint32_t)l->a[i])

static void run_launch(void *arg) {
	struct launch *l = arg;
	int gx = I(0), gy = (int)l->grid / gx;
	switch (l->kernel) {
	case 0:
		nvj_cpu_resize_h(gx, gy, l->block, P(1), P(2), P(3), P(4), I(5), I(6));
		break;
	case 1:
		nvj_cpu_resize_v_u8(gx, gy, l->block, P(1), P(2), P(3), P(4), I(5), I(6), I(7));
		break;
	default:
		nvj_cpu_resize_v_f32(gx, gy, l->block, P(1), P(2), P(3), P(4), P(5), I(6), I(7), I(8));
	}
}

int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shared,
		   void *stream, void **params, void **extra) {
	static const struct {
		const char *name, *call;
		int nargs;
	} kernels[] = {{"resize_h", "cuLaunchKernel(resize_h)", 7},
		       {"resize_v_u8", "cuLaunchKernel(resize_v_u8)", 8},
		       {"resize_v_f32", "cuLaunchKernel(resize_v_f32)", 9}};
	for (int k = 0; k < 3; k++) {
		if (strcmp(f, kernels[k].name) != 0)
			continue;
		if (gy != 1 || gz != 1 || by != 1 || bz != 1 || shared != 0 || extra != NULL)
			return 1; /* CUDA_ERROR_INVALID_VALUE: not the stage's 1-D launch */
		struct launch *l = calloc(1, sizeof *l);
		l->kernel = k;
		l->grid = gx;
		l->block = bx;
		for (int i = 0; i < kernels[k].nargs; i++)
			l->a[i] = *(unsigned long long *)params[i]; /* 8-byte slots (calls.h) */
		standin_enqueue(stream, kernels[k].call, run_launch, l, NULL, 0);
		return 0;
	}
	return 500; /* CUDA_ERROR_NOT_FOUND */
}
#endif

#ifdef STANDIN_NVRTC
int nvrtcVersion(int *major, int *minor) {
	*major = 13;
	*minor = 0;
	return 0;
}
int nvrtcGetCUBINSize(void *program, size_t *size) {
	*size = 16;
	return 0;
}
int nvrtcGetCUBIN(void *program, char *cubin) {
	memset(cubin, 0, 16);
	return 0;
}
#endif
