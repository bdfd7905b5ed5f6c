/* prelude_cpu.h: the macros that make resize.cu plain C for gcc, so its
 * arithmetic is tested on the CPU against package augment. A launch runs
 * the grid's blocks in order (cpu.c's LAUNCH), each block's threads one
 * after the other: the kernels here have no phases, so the order does not
 * matter. */
#include <stdint.h>

typedef uint8_t u8;
typedef int32_t i32;
typedef int64_t i64;

extern __thread i64 nvj_cpu_block;
extern __thread int nvj_cpu_bdim;

#define KERNEL void
#define DEVICE static inline
#define IMAGE (nvj_cpu_block / gx)
#define FOR_EACH(i, n)                                                  \
	for (int t_ = 0; t_ < nvj_cpu_bdim; t_++)                           \
		for (i64 i = (nvj_cpu_block % gx) * nvj_cpu_bdim + t_; i < (n); i += (i64)nvj_cpu_bdim * gx)
