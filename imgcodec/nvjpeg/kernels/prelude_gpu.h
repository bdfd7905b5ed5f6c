/* prelude_gpu.h: the macros that make resize.cu CUDA C for NVRTC
 * (prepended at run time; NVRTC needs no header). prelude_cpu.h gives the
 * same names their C meaning for gcc. The grid is 2-D: x strides over an
 * image's elements, y is the image of the batch. */
typedef unsigned char u8;
typedef int i32;
typedef long long i64;

#define KERNEL extern "C" __global__ void
#define DEVICE static __device__ __forceinline__
#define IMAGE ((i64)blockIdx.y)
/* FOR_EACH(i, n): a grid-stride loop over [0, n) along x. */
#define FOR_EACH(i, n) for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (i64)blockDim.x * gridDim.x)
