//go:build cgo

/* cpu.c: kernels.cu built by gcc for the CPU (see prelude_cpu.h), with one
 * launcher per kernel that runs the grid's blocks in order. */
/* a*b+c stays two roundings, as NVRTC --fmad=false (cgo refuses the flag). */
#pragma GCC optimize("fp-contract=off")
#include "prelude_cpu.h"

__thread i64 cpu_block, cpu_grid;
__thread int cpu_bdim;

#include "kernels.cu"
#include "cpu.h"

#define LAUNCH(grid, block, call)                                              \
	do {                                                                   \
		cpu_grid = (grid);                                             \
		cpu_bdim = (block);                                            \
		for (cpu_block = 0; cpu_block < cpu_grid; cpu_block++)         \
			call;                                                  \
	} while (0)

void cpu_cast_f32_f16(int g, int b, const float *in, uint16_t *out, int64_t n) { LAUNCH(g, b, cast_f32_f16(in, out, n)); }
void cpu_cast_f16_f32(int g, int b, const uint16_t *in, float *out, int64_t n) { LAUNCH(g, b, cast_f16_f32(in, out, n)); }
void cpu_cast_f32_bf16(int g, int b, const float *in, uint16_t *out, int64_t n) { LAUNCH(g, b, cast_f32_bf16(in, out, n)); }
void cpu_cast_bf16_f32(int g, int b, const uint16_t *in, float *out, int64_t n) { LAUNCH(g, b, cast_bf16_f32(in, out, n)); }

void cpu_normalize_u8(int g, int b, const uint8_t *in, float *out, const float *scale, const float *shift,
		      int32_t n, int32_t c, int32_t h, int32_t w) {
	LAUNCH(g, b, normalize_u8(in, out, scale, shift, n, c, h, w));
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
	LAUNCH(g, b, ce_loss(logits, labels, dlogits, rowstat, n, k, eps, gscale));
}

void cpu_ce_sums(int g, int b, const float *rowstat, int32_t n, double *sums) {
	LAUNCH(g, b, ce_sums(rowstat, n, sums));
}

void cpu_relu_bn_train(int g, int b, const float *x, float *y, const float *gamma, const float *beta,
		       float *bmean, float *bvar, float *rmean, float *rvar, int32_t n, int32_t c, int32_t hw,
		       float eps, float momentum) {
	LAUNCH(g, b, relu_bn_train(x, y, gamma, beta, bmean, bvar, rmean, rvar, n, c, hw, eps, momentum));
}
