//go:build cgo

/* cpu.c: kernels.cu built by gcc for the CPU (see prelude_cpu.h), with one
 * launcher per kernel that runs the grid's blocks in the schedule's order. */
/* a*b+c stays two roundings, as NVRTC --fmad=false (cgo refuses the flag). */
#pragma GCC optimize("fp-contract=off")
#include "prelude_cpu.h"

__thread i64 cpu_block, cpu_grid;
__thread int cpu_bdim;
int cpu_sched;
__thread int cpu_seg, cpu_want_seg, cpu_want_t;
__thread i64 cpu_gen;
__thread int cpu_solo;
__thread jmp_buf cpu_out;

#include "kernels.cu"
#include "cpu.h"

#define LAUNCH CPU_LAUNCH

/* cpu_set_schedule: the order of the launches after it (prelude_cpu.h);
 * the one before. Not while a launch runs. */
int cpu_set_schedule(int s) {
	const int old = cpu_sched;
	if (s >= 0 && s < CPU_SCHEDULES)
		cpu_sched = s;
	return old;
}

void cpu_cast_f32_f16(int g, int b, const float *in, uint16_t *out, int64_t n) { LAUNCH(g, b, cast_f32_f16(in, out, n)); }
void cpu_cast_f16_f32(int g, int b, const uint16_t *in, float *out, int64_t n) { LAUNCH(g, b, cast_f16_f32(in, out, n)); }
void cpu_cast_f32_bf16(int g, int b, const float *in, uint16_t *out, int64_t n) { LAUNCH(g, b, cast_f32_bf16(in, out, n)); }
void cpu_cast_bf16_f32(int g, int b, const uint16_t *in, float *out, int64_t n) { LAUNCH(g, b, cast_bf16_f32(in, out, n)); }

void cpu_normalize_u8(int g, int b, const uint8_t *in, float *out, const float *a, const float *bb,
		      int32_t n, int32_t c, int32_t h, int32_t w, int32_t mode) {
	LAUNCH(g, b, normalize_u8(in, out, a, bb, n, c, h, w, mode));
}

void cpu_sgd(int g, int b, float *w, const float *gr, float *v, int64_t n, float lr, float momentum, float wd,
	     int32_t nesterov, int32_t first) {
	LAUNCH(g, b, sgd(w, gr, v, n, lr, momentum, wd, nesterov, first));
}

void cpu_amp_unscale(int g, int b, float *gr, int64_t n, float *found_inf, const float *inv_scale) {
	LAUNCH(g, b, amp_unscale(gr, n, found_inf, inv_scale));
}

void cpu_ce_loss(int g, int b, const float *logits, const int32_t *labels, float *dlogits, float *rowstat,
		 int32_t n, int32_t k, float eps, float gscale) {
	LAUNCH(g, b, ce_loss(logits, labels, dlogits, rowstat, n, k, eps, gscale, 0, 1, 1, 1));
}

void cpu_ce_sums(int g, int b, const float *rowstat, int32_t n, double *sums) {
	LAUNCH(g, b, ce_sums(rowstat, n, sums));
}

void cpu_bn_plane_sum(int g, int b, const void *x, double *part, int32_t n, int32_t c, int32_t hw, int32_t fl) {
	LAUNCH(g, b, bn_plane_sum(x, part, n, c, hw, fl));
}

void cpu_bn_stats(int g, int b, const void *x, const double *part, double *stat, float *bmean, float *bvar,
		  float *rmean, float *rvar, int32_t n, int32_t c, int32_t hw, float eps, float momentum, int32_t fl) {
	LAUNCH(g, b, bn_stats(x, part, stat, bmean, bvar, rmean, rvar, n, c, hw, eps, momentum, fl));
}

void cpu_bn_apply(int g, int b, const void *x, void *y, const float *gamma, const float *beta, const double *stat,
		  const float *s, uint16_t *y16, int32_t n, int32_t c, int32_t hw, int32_t fl) {
	LAUNCH(g, b, bn_apply(x, y, gamma, beta, stat, s, y16, n, c, hw, fl));
}

void cpu_bn_eval(int g, int b, const void *x, void *y, const float *gamma, const float *beta, const float *rmean,
		 const float *rvar, const float *s, uint16_t *y16, int32_t n, int32_t c, int32_t hw, float eps, int32_t fl) {
	LAUNCH(g, b, bn_eval(x, y, gamma, beta, rmean, rvar, s, y16, n, c, hw, eps, fl));
}

void cpu_bn_bwd_sum(int g, int b, const void *dy, const void *x, const float *gamma, const float *beta,
		    const double *fstat, const float *bmean, const float *bvar, double *part, int32_t n, int32_t c,
		    int32_t hw, float eps, int32_t fl) {
	LAUNCH(g, b, bn_bwd_sum(dy, x, gamma, beta, fstat, bmean, bvar, part, n, c, hw, eps, fl));
}

void cpu_bn_bwd_stats(int g, int b, const double *part, double *stat, float *dgamma, float *dbeta, int32_t n,
		      int32_t c, int32_t hw) {
	LAUNCH(g, b, bn_bwd_stats(part, stat, dgamma, dbeta, n, c, hw));
}

void cpu_bn_bwd_apply(int g, int b, const void *dy, const void *x, const float *gamma, const float *beta,
		      const double *fstat, const float *bmean, const float *bvar, const double *stat, void *dx,
		      int32_t n, int32_t c, int32_t hw, float eps, int32_t fl) {
	LAUNCH(g, b, bn_bwd_apply(dy, x, gamma, beta, fstat, bmean, bvar, stat, dx, n, c, hw, eps, fl));
}

void cpu_bn_nhwc_sum(int g, int b, const void *x, double *part, int32_t n, int32_t c, int32_t hw, int32_t fl) {
	LAUNCH(g, b, bn_nhwc_sum(x, part, n, c, hw, fl));
}

void cpu_bn_nhwc_apply(int g, int b, const void *x, void *y, const float *gamma, const float *beta,
		       const double *stat, const float *s, uint16_t *y16, int32_t n, int32_t c, int32_t hw, int32_t fl) {
	LAUNCH(g, b, bn_nhwc_apply(x, y, gamma, beta, stat, s, y16, n, c, hw, fl));
}

void cpu_bn_nhwc_eval(int g, int b, const void *x, void *y, const float *gamma, const float *beta,
		      const float *rmean, const float *rvar, const float *s, uint16_t *y16, int32_t n, int32_t c, int32_t hw, float eps, int32_t fl) {
	LAUNCH(g, b, bn_nhwc_eval(x, y, gamma, beta, rmean, rvar, s, y16, n, c, hw, eps, fl));
}

void cpu_bn_nhwc_bwd_sum(int g, int b, const void *dy, const void *x, const float *gamma, const float *beta,
			 const double *fstat, const float *bmean, double *part, int32_t n, int32_t c, int32_t hw,
			 int32_t fl) {
	LAUNCH(g, b, bn_nhwc_bwd_sum(dy, x, gamma, beta, fstat, bmean, part, n, c, hw, fl));
}

void cpu_bn_nhwc_bwd_apply(int g, int b, const void *dy, const void *x, const float *gamma, const float *beta,
			   const double *fstat, const float *bmean, const double *stat, void *dx, int32_t n,
			   int32_t c, int32_t hw, int32_t fl) {
	LAUNCH(g, b, bn_nhwc_bwd_apply(dy, x, gamma, beta, fstat, bmean, stat, dx, n, c, hw, fl));
}

void cpu_bn_tiles_apply(int g, int b, const void *x, float *y, const float *gamma, const float *beta,
			const double *stat, const float *s, uint16_t *y16, int32_t n, int32_t c, int32_t hw, int32_t fl) {
	LAUNCH(g, b, bn_tiles_apply(x, y, gamma, beta, stat, s, y16, n, c, hw, fl));
}

void cpu_bn_tiles_eval(int g, int b, const void *x, float *y, const float *gamma, const float *beta,
		       const float *rmean, const float *rvar, const float *s, uint16_t *y16, int32_t n, int32_t c, int32_t hw, float eps, int32_t fl) {
	LAUNCH(g, b, bn_tiles_eval(x, y, gamma, beta, rmean, rvar, s, y16, n, c, hw, eps, fl));
}

void cpu_bn_tiles_bwd_sum(int g, int b, const float *dy, const void *x, const float *gamma, const float *beta,
			  const double *fstat, const float *bmean, double *part, int32_t n, int32_t c, int32_t hw,
			  int32_t fl) {
	LAUNCH(g, b, bn_tiles_bwd_sum(dy, x, gamma, beta, fstat, bmean, part, n, c, hw, fl));
}

void cpu_bn_tiles_bwd_apply(int g, int b, const float *dy, const void *x, const float *gamma, const float *beta,
			    const double *fstat, const float *bmean, const double *stat, void *dx, int32_t n,
			    int32_t c, int32_t hw, int32_t fl) {
	LAUNCH(g, b, bn_tiles_bwd_apply(dy, x, gamma, beta, fstat, bmean, stat, dx, n, c, hw, fl));
}

/* cpu_bn_nhwc_runs: kernels.cu's bn_nhwc_runs, for the Go side's check. */
int64_t cpu_bn_nhwc_runs(int32_t n, int32_t c, int32_t hw) { return bn_nhwc_runs(n, c, hw); }

void cpu_relu_fwd(int g, int b, const float *x, float *y, int64_t n) { LAUNCH(g, b, relu_fwd(x, y, n)); }
void cpu_relu_bwd(int g, int b, const float *dy, const float *y, float *dx, int64_t n) {
	LAUNCH(g, b, relu_bwd(dy, y, dx, n));
}
void cpu_add(int g, int b, const float *x, const float *y, float *out, int64_t n) { LAUNCH(g, b, add(x, y, out, n)); }
void cpu_add_relu(int g, int b, const float *x, const float *y, float *out, int64_t n) {
	LAUNCH(g, b, add_relu(x, y, out, n));
}
void cpu_add_relu_bwd(int g, int b, const float *x, const float *y, const float *r, float *out, int64_t n) {
	LAUNCH(g, b, add_relu_bwd(x, y, r, out, n));
}
void cpu_add_relu_low(int g, int b, const float *x, const float *y, float *out, uint16_t *out16, int64_t n, int32_t fl) {
	LAUNCH(g, b, add_relu_low(x, y, out, out16, n, fl));
}
void cpu_add_relu_tiles(int g, int b, const float *x, const float *y, float *out, uint16_t *out16, int32_t n, int32_t c,
			int32_t hw, int32_t fl) {
	LAUNCH(g, b, add_relu_tiles(x, y, out, out16, n, c, hw, fl));
}
void cpu_add_relu_bwd_low(int g, int b, const void *x, const void *y, const float *r, float *out, int64_t n, int32_t fl) {
	LAUNCH(g, b, add_relu_bwd_low(x, y, r, out, n, fl));
}
void cpu_add_relu_bwd_tiles(int g, int b, const void *x, const void *y, const float *r, float *out, int32_t n,
			    int32_t c, int32_t hw, int32_t fl) {
	LAUNCH(g, b, add_relu_bwd_tiles(x, y, r, out, n, c, hw, fl));
}
void cpu_bias_act(int g, int b, float *y, const float *bias, int64_t n, int32_t c, int32_t hw, int32_t relu) {
	LAUNCH(g, b, bias_act(y, bias, n, c, hw, relu));
}
void cpu_bias_grad(int g, int b, const float *dy, float *db, int32_t n, int32_t c, int32_t hw) {
	LAUNCH(g, b, bias_grad(dy, db, n, c, hw));
}

void cpu_maxpool_fwd(int g, int b, const float *x, float *y, int32_t *arg, const int32_t *d) {
	LAUNCH(g, b, maxpool_fwd(x, y, arg, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11]));
}
void cpu_maxpool_bwd(int g, int b, const float *dy, const int32_t *arg, float *dx, const int32_t *d) {
	LAUNCH(g, b, maxpool_bwd(dy, arg, dx, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11]));
}
void cpu_avgpool_fwd(int g, int b, const float *x, float *y, const int32_t *d) {
	LAUNCH(g, b, avgpool_fwd(x, y, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11], d[12]));
}
void cpu_avgpool_bwd(int g, int b, const float *dy, float *dx, const int32_t *d) {
	LAUNCH(g, b, avgpool_bwd(dy, dx, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11], d[12]));
}

void cpu_ema_update(int g, int b, float *avg, const float *v, int64_t n, float decay, int32_t first) {
	LAUNCH(g, b, ema_update(avg, v, n, decay, first));
}
void cpu_swap_f32(int g, int b, float *x, float *y, int64_t n) { LAUNCH(g, b, swap_f32(x, y, n)); }
void cpu_copy_f32(int g, int b, const float *src, float *dst, int64_t n) { LAUNCH(g, b, copy_f32(src, dst, n)); }
void cpu_fill_f32(int g, int b, float *v, int64_t n, float value) { LAUNCH(g, b, fill_f32(v, n, value)); }

/* ---- by name: cpu_launch runs a kernel as cuLaunchKernel does on the GPU,
 * from its name and one 8-byte slot per argument (train/cuda's Arg: a
 * pointer as its address, an i32 or a float's bits in the low 32 bits, an
 * i64 as is). CPU_KERNELS lists each kernel once with the unpacking of its
 * slots; the same text is kept as a string (cpu_kernel_args) that the
 * tests check against kernels.cu's signatures, so the call compiled and
 * the call checked cannot differ. */

#define P(k) ((void *)(uintptr_t)a[k])
#define I(k) ((i32)(u32)a[k])
#define L(k) ((i64)a[k])
#define F(k) (u2f((u32)a[k]))

#define CPU_KERNELS(X)                                                                         \
	X(cast_f32_f16, P(0), P(1), L(2))                                                      \
	X(cast_f16_f32, P(0), P(1), L(2))                                                      \
	X(cast_f32_bf16, P(0), P(1), L(2))                                                     \
	X(cast_bf16_f32, P(0), P(1), L(2))                                                     \
	X(cast_nchw_nhwc_f16, P(0), P(1), I(2), I(3), I(4))                                    \
	X(cast_nhwc_nchw_f16, P(0), P(1), I(2), I(3), I(4))                                    \
	X(cast_nchw_nhwc_bf16, P(0), P(1), I(2), I(3), I(4))                                   \
	X(cast_nhwc_nchw_bf16, P(0), P(1), I(2), I(3), I(4))                                   \
	X(normalize_u8, P(0), P(1), P(2), P(3), I(4), I(5), I(6), I(7), I(8))                  \
	X(sgd, P(0), P(1), P(2), L(3), F(4), F(5), F(6), I(7), I(8))                           \
	X(amp_unscale, P(0), L(1), P(2), P(3))                                                 \
	X(ce_loss, P(0), P(1), P(2), P(3), I(4), I(5), F(6), F(7), P(8), I(9), I(10), I(11))  \
	X(ce_sums, P(0), I(1), P(2))                                                           \
	X(bn_plane_sum, P(0), P(1), I(2), I(3), I(4), I(5))                                              \
	X(bn_stats, P(0), P(1), P(2), P(3), P(4), P(5), P(6), I(7), I(8), I(9), F(10), F(11), I(12))     \
	X(bn_apply, P(0), P(1), P(2), P(3), P(4), P(5), P(6), I(7), I(8), I(9), I(10))                    \
	X(bn_eval, P(0), P(1), P(2), P(3), P(4), P(5), P(6), P(7), I(8), I(9), I(10), F(11), I(12))      \
	X(bn_bwd_sum, P(0), P(1), P(2), P(3), P(4), P(5), P(6), P(7), I(8), I(9), I(10), F(11), I(12))     \
	X(bn_bwd_stats, P(0), P(1), P(2), P(3), I(4), I(5), I(6))                                        \
	X(bn_bwd_apply, P(0), P(1), P(2), P(3), P(4), P(5), P(6), P(7), P(8), I(9), I(10), I(11), F(12), I(13)) \
	X(bn_nhwc_sum, P(0), P(1), I(2), I(3), I(4), I(5))                                               \
	X(bn_nhwc_apply, P(0), P(1), P(2), P(3), P(4), P(5), P(6), I(7), I(8), I(9), I(10))               \
	X(bn_nhwc_eval, P(0), P(1), P(2), P(3), P(4), P(5), P(6), P(7), I(8), I(9), I(10), F(11), I(12)) \
	X(bn_nhwc_bwd_sum, P(0), P(1), P(2), P(3), P(4), P(5), P(6), I(7), I(8), I(9), I(10))            \
	X(bn_nhwc_bwd_apply, P(0), P(1), P(2), P(3), P(4), P(5), P(6), P(7), I(8), I(9), I(10), I(11))   \
	X(bn_tiles_apply, P(0), P(1), P(2), P(3), P(4), P(5), P(6), I(7), I(8), I(9), I(10))              \
	X(bn_tiles_eval, P(0), P(1), P(2), P(3), P(4), P(5), P(6), P(7), I(8), I(9), I(10), F(11), I(12))\
	X(bn_tiles_bwd_sum, P(0), P(1), P(2), P(3), P(4), P(5), P(6), I(7), I(8), I(9), I(10))           \
	X(bn_tiles_bwd_apply, P(0), P(1), P(2), P(3), P(4), P(5), P(6), P(7), I(8), I(9), I(10), I(11))  \
	X(relu_fwd, P(0), P(1), L(2))                                                                    \
	X(relu_bwd, P(0), P(1), P(2), L(3))                                                              \
	X(add, P(0), P(1), P(2), L(3))                                                                   \
	X(add_relu, P(0), P(1), P(2), L(3))                                                              \
	X(add_relu_bwd, P(0), P(1), P(2), P(3), L(4))                                                    \
	X(add_relu_low, P(0), P(1), P(2), P(3), L(4), I(5))                                              \
	X(add_relu_tiles, P(0), P(1), P(2), P(3), I(4), I(5), I(6), I(7))                                \
	X(add_relu_bwd_low, P(0), P(1), P(2), P(3), L(4), I(5))                                          \
	X(add_relu_bwd_tiles, P(0), P(1), P(2), P(3), I(4), I(5), I(6), I(7))                            \
	X(bias_act, P(0), P(1), L(2), I(3), I(4), I(5))                                                  \
	X(bias_grad, P(0), P(1), I(2), I(3), I(4))                                                       \
	X(maxpool_fwd, P(0), P(1), P(2), I(3), I(4), I(5), I(6), I(7), I(8), I(9), I(10), I(11), I(12), I(13), I(14)) \
	X(maxpool_bwd, P(0), P(1), P(2), I(3), I(4), I(5), I(6), I(7), I(8), I(9), I(10), I(11), I(12), I(13), I(14)) \
	X(avgpool_fwd, P(0), P(1), I(2), I(3), I(4), I(5), I(6), I(7), I(8), I(9), I(10), I(11), I(12), I(13), I(14)) \
	X(avgpool_bwd, P(0), P(1), I(2), I(3), I(4), I(5), I(6), I(7), I(8), I(9), I(10), I(11), I(12), I(13), I(14)) \
	X(ema_update, P(0), P(1), L(2), F(3), I(4))                                                      \
	X(swap_f32, P(0), P(1), L(2))                                                                    \
	X(copy_f32, P(0), P(1), L(2))                                                                    \
	X(fill_f32, P(0), L(1), F(2))                                                                    \
	X(sgd_lr, P(0), P(1), P(2), L(3), P(4), F(5), F(6), I(7), I(8))                              \
	X(sgd_found, P(0), P(1), P(2), L(3), P(4), F(5), F(6), I(7), P(8), P(9))                    \
	X(amp_update_scale, P(0), P(1), P(2), P(3))

typedef void (*cpu_run_fn)(const u64 *a);

#define CPU_RUN(name, ...) \
	static void run_##name(const u64 *a) { name(__VA_ARGS__); }
CPU_KERNELS(CPU_RUN)

struct cpu_entry {
	const char *name, *args;
	cpu_run_fn run;
	int nargs;
};

/* CPU_NARGS: the number of its arguments (1 to 20). */
#define CPU_NARGS(...) CPU_NARGS_(__VA_ARGS__, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define CPU_NARGS_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, n, ...) n

#define CPU_ENTRY(name, ...) {#name, #__VA_ARGS__, run_##name, CPU_NARGS(__VA_ARGS__)},
static const struct cpu_entry cpu_table[] = {CPU_KERNELS(CPU_ENTRY)};
#define CPU_TABLE_LEN ((int)(sizeof cpu_table / sizeof cpu_table[0]))

static const struct cpu_entry *cpu_find(const char *name) {
	for (int i = 0; i < CPU_TABLE_LEN; i++)
		if (strcmp(cpu_table[i].name, name) == 0)
			return &cpu_table[i];
	return 0;
}

int cpu_kernel_count(void) { return CPU_TABLE_LEN; }
const char *cpu_kernel_name(int i) { return i >= 0 && i < CPU_TABLE_LEN ? cpu_table[i].name : 0; }
const char *cpu_kernel_args(int i) { return i >= 0 && i < CPU_TABLE_LEN ? cpu_table[i].args : 0; }

int cpu_kernel_nargs(const char *name) {
	const struct cpu_entry *e = cpu_find(name);
	return e ? e->nargs : -1;
}

int cpu_launch(const char *name, int grid, int block, const unsigned long long *args, int nargs) {
	const struct cpu_entry *e = cpu_find(name);
	if (!e)
		return -1;
	if (e->nargs != nargs)
		return -2;
	const u64 *a = (const u64 *)args;
	LAUNCH(grid, block, e->run(a));
	return 0;
}
