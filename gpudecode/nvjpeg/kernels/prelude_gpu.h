/* prelude_gpu.h: the macros that make resize.cu CUDA C for NVRTC
 * (prepended at run time; NVRTC needs no header). prelude_cpu.h gives the
 * same names their C meaning for gcc. The grid is 1-D, gx blocks per
 * image of the batch (every kernel takes gx): block b works on image
 * b / gx, striding over its elements from block b % gx. */
typedef unsigned char u8;
typedef int i32;
typedef long long i64;

#define KERNEL extern "C" __global__ void
#define DEVICE static __device__ __forceinline__
#define IMAGE ((i64)blockIdx.x / gx)
/* FOR_EACH(i, n): the image's blocks striding over [0, n). */
#define FOR_EACH(i, n) for (i64 i = ((i64)blockIdx.x % gx) * blockDim.x + threadIdx.x; i < (n); i += (i64)blockDim.x * gx)
