/* prelude_gpu.h: the macros that make kernels.cu CUDA C for NVRTC (prepended
 * to it at run time; no header is included: NVRTC needs none). The CPU
 * prelude, prelude_cpu.h, defines the same names for gcc. */
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef int i32;
typedef long long i64;
typedef unsigned long long u64;

#define KERNEL extern "C" __global__ void
#define DEVICE static __device__ __forceinline__
/* SHARED(float, tile, [16][17]) declares __shared__ float tile[16][17]. */
#define SHARED(type, name, dims) __shared__ type name dims
#define BLOCK_IDX ((i64)blockIdx.x)
#define BLOCK_DIM ((int)blockDim.x)
#define GRID_DIM ((i64)gridDim.x)
/* THREADS(t) ... END_THREADS: the block's threads each run the body once
 * with t their index; SYNC between phases. A value kept from one phase to
 * the next lives in SHARED memory, never in a local. */
#define THREADS(t) { const int t = (int)threadIdx.x;
#define END_THREADS }
#define SYNC __syncthreads();
/* FOR_EACH(i, n): a grid-stride loop over [0, n). */
#define FOR_EACH(i, n) for (i64 i = BLOCK_IDX * BLOCK_DIM + threadIdx.x; i < (n); i += (i64)BLOCK_DIM * GRID_DIM)
DEVICE u32 f2u(float f) { return __float_as_uint(f); }
DEVICE float u2f(u32 u) { return __uint_as_float(u); }
