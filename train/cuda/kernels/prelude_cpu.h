/* prelude_cpu.h: the macros that make kernels.cu plain C for gcc, so its
 * arithmetic is tested on the CPU. A launch runs the grid's blocks in
 * order; within a block, THREADS(t) loops over the threads, so a phase of
 * every thread ends before the next phase starts, as at a __syncthreads().
 * Compile with -ffp-contract=off (NVRTC gets --fmad=false): a*b+c is two
 * roundings on both, fmaf one. */
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef int32_t i32;
typedef int64_t i64;
typedef uint64_t u64;

extern __thread i64 cpu_block, cpu_grid;
extern __thread int cpu_bdim;

#define KERNEL void
#define DEVICE static inline
#define SHARED
#define BLOCK_IDX cpu_block
#define BLOCK_DIM cpu_bdim
#define GRID_DIM cpu_grid
#define THREADS(t) for (int t = 0; t < BLOCK_DIM; t++) {
#define END_THREADS }
#define SYNC
#define FOR_EACH(i, n)                                                  \
	for (int t_ = 0; t_ < BLOCK_DIM; t_++)                          \
		for (i64 i = BLOCK_IDX * BLOCK_DIM + t_; i < (n); i += (i64)BLOCK_DIM * GRID_DIM)
DEVICE u32 f2u(float f) { u32 u; memcpy(&u, &f, 4); return u; }
DEVICE float u2f(u32 u) { float f; memcpy(&f, &u, 4); return f; }
