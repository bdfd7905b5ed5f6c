/* prelude_cpu.h: the macros that make resize.cu plain C for gcc, so its
 * arithmetic is tested on the CPU against package augment. A launch runs
 * the grid's blocks (cpu.c's LAUNCH), each block's threads one after the
 * other, in index order or, with nvj_cpu_reverse, in reverse: the kernels
 * here have no phases, so no order may change their output (two threads
 * writing one place, or a block reading what another writes, would). */
#include <stdint.h>

typedef uint8_t u8;
typedef int32_t i32;
typedef int64_t i64;

extern __thread i64 nvj_cpu_block;
extern __thread int nvj_cpu_bdim;
extern int nvj_cpu_reverse; /* changed only between launches */
static inline int nvj_cpu_thread(int p) { return nvj_cpu_reverse ? nvj_cpu_bdim - 1 - p : p; }

#define KERNEL void
#define DEVICE static inline
#define IMAGE (nvj_cpu_block / gx)
#define FOR_EACH(i, n)                                                  \
	for (int p_ = 0; p_ < nvj_cpu_bdim; p_++)                           \
		for (i64 i = (nvj_cpu_block % gx) * nvj_cpu_bdim + nvj_cpu_thread(p_); i < (n); i += (i64)nvj_cpu_bdim * gx)
