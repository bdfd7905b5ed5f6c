/* prelude_cpu.h: the macros that make kernels.cu plain C for gcc, so its
 * arithmetic is tested on the CPU. A launch runs the grid's blocks one
 * after another; within a block, THREADS(t) loops over the threads, so a
 * phase of every thread ends before the next phase starts, as at a
 * __syncthreads(). Compile with -ffp-contract=off (NVRTC gets
 * --fmad=false): a*b+c is two roundings on both, fmaf one.
 *
 * The order is the schedule's (cpu_sched, kernels.Schedule), so that a race
 * a GPU could show changes the CPU build's bits too:
 *   0 forward: blocks and each phase's threads in index order;
 *   1 reverse and 2 interleaved (evens, then odds): the same phases, the
 *     blocks and threads in another order; a thread reading in a phase what
 *     another writes in it, or two writing one place, reads or keeps
 *     another value;
 *   3 ahead and 4 behind: at each stretch of the block's code between
 *     SYNCs, one thread runs the stretch by itself before the others run it
 *     (ahead) or after they have (behind): legal on a GPU, where warps
 *     need not keep pace, and a SYNC missing between two phases shows (a
 *     thread reading what another has not yet written, or writing the
 *     next tile over what another still reads). The block's code is run
 *     again for each stretch and each side (cpu_seg counts the SYNCs
 *     passed), so what is not a phase runs every time, as on the GPU every
 *     thread runs it; SHARED is static so it lives from one run to the
 *     next; the run ends (longjmp) at the SYNC that ends the stretch.
 *     Which thread goes alone changes with the block.
 * In every schedule SHARED memory starts each block as 0xff bytes, so a
 * read of what the block did not write shows as a NaN or -1.
 */
#include <math.h>
#include <setjmp.h>
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
extern int cpu_sched; /* changed only between launches */
extern __thread int cpu_seg, cpu_want_seg, cpu_want_t;
extern __thread i64 cpu_gen; /* counts the blocks run: SHARED poisons once a block */

enum { CPU_FORWARD, CPU_REVERSE, CPU_INTERLEAVED, CPU_AHEAD, CPU_BEHIND, CPU_SCHEDULES };
extern __thread int cpu_solo;      /* ahead and behind: the lone thread's run, or the others' */
extern __thread jmp_buf cpu_out;   /* ahead and behind: the end of the stretch run */

/* cpu_order: the i-th of n in the schedule's order. */
static inline i64 cpu_order(i64 i, i64 n) {
	switch (cpu_sched) {
	case CPU_REVERSE:
	case CPU_BEHIND:
		return n - 1 - i;
	case CPU_INTERLEAVED: {
		const i64 h = (n + 1) / 2;
		return i < h ? 2 * i : 2 * (i - h) + 1;
	}
	}
	return i;
}
/* A phase runs positions [cpu_first, cpu_end), thread cpu_thread(i) at
 * position i, less the thread cpu_skip names: every thread in the phase
 * schedules; ahead and behind, in the stretch whose turn it is, only the
 * lone thread (cpu_want_t) or all but it. */
static inline int cpu_split(void) { return cpu_sched == CPU_AHEAD || cpu_sched == CPU_BEHIND; }
static inline int cpu_in(void) { return !cpu_split() || cpu_seg == cpu_want_seg; }
static inline int cpu_first(void) { return !cpu_in() ? 0 : cpu_split() && cpu_solo ? cpu_want_t : 0; }
static inline int cpu_end(void) { return !cpu_in() ? 0 : cpu_split() && cpu_solo ? cpu_want_t + 1 : cpu_bdim; }
static inline int cpu_thread(int i) { return cpu_split() && cpu_solo ? i : (int)cpu_order(i, cpu_bdim); }
static inline int cpu_skip(int t) { return cpu_split() && !cpu_solo && t == cpu_want_t; }
#define KERNEL void
#define DEVICE static inline
/* SHARED(type, name, dims): static, so it lives from one run of a block's
 * code to the next (ahead and behind), and filled with 0xff bytes (NaN, -1) when a
 * block starts, so a read of what no thread of the block wrote shows. */
#define SHARED(type, name, dims)                                                \
	static __thread type name dims;                                         \
	static __thread i64 name##_gen_;                                        \
	cpu_poison(&name, sizeof name, &name##_gen_)
static inline void cpu_poison(void *p, size_t n, i64 *gen) {
	if (*gen != cpu_gen) {
		memset(p, 0xff, n);
		*gen = cpu_gen;
	}
}
#define BLOCK_IDX cpu_block
#define BLOCK_DIM cpu_bdim
#define GRID_DIM cpu_grid
#define THREADS(t)                                                                 \
	for (int t##_i = cpu_first(), t##_e = cpu_end(); t##_i < t##_e; t##_i++)   \
		if (cpu_skip(cpu_thread(t##_i))) {                                 \
		} else {                                                           \
			int t = cpu_thread(t##_i);
#define END_THREADS }
#define SYNC                                                                       \
	{                                                                          \
		if (++cpu_seg > cpu_want_seg && cpu_split())                       \
			longjmp(cpu_out, 1);                                       \
	}
#define FOR_EACH(i, n)                                                             \
	for (int t_i_ = cpu_first(), t_e_ = cpu_end(); t_i_ < t_e_; t_i_++)        \
		if (cpu_skip(cpu_thread(t_i_))) {                                  \
		} else                                                             \
			for (i64 i = BLOCK_IDX * BLOCK_DIM + cpu_thread(t_i_); i < (n); i += (i64)BLOCK_DIM * GRID_DIM)

/* CPU_LAUNCH: call (one block's run of a kernel) for each block of the
 * grid, in the schedule's order; ahead and behind, twice for each stretch
 * between SYNCs (the lone thread, the others), until a stretch is not
 * reached. */
#define CPU_LAUNCH(grid, block, call)                                                    \
	do {                                                                            \
		cpu_grid = (grid);                                                      \
		cpu_bdim = (block);                                                     \
		for (i64 b_ = 0; b_ < cpu_grid; b_++) {                                 \
			cpu_block = cpu_order(b_, cpu_grid);                            \
			cpu_gen++;                                                      \
			cpu_seg = 0;                                                    \
			if (!cpu_split()) {                                             \
				call;                                                   \
				continue;                                               \
			}                                                               \
			/* the lone thread: another in each block (37 is odd, the \
			 * block a power of two) */                             \
			cpu_want_t = (int)((cpu_block * 37 + (cpu_sched == CPU_AHEAD ? 0 : cpu_bdim - 1)) % cpu_bdim); \
			for (int s_ = 0;; s_++) {                                       \
				cpu_want_seg = s_;                                      \
				cpu_solo = cpu_sched == CPU_AHEAD;                      \
				cpu_seg = 0;                                            \
				if (!setjmp(cpu_out))                                   \
					call;                                           \
				if (cpu_seg < s_)                                       \
					break;                                          \
				cpu_solo = !cpu_solo;                                   \
				cpu_seg = 0;                                            \
				if (!setjmp(cpu_out))                                   \
					call;                                           \
			}                                                               \
		}                                                                       \
	} while (0)
DEVICE u32 f2u(float f) { u32 u; memcpy(&u, &f, 4); return u; }
DEVICE float u2f(u32 u) { float f; memcpy(&f, &u, 4); return f; }
