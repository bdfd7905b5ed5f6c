//go:build cgo

/* cpu.c: resize.cu built by gcc for the CPU (see prelude_cpu.h), one
 * launcher per kernel running the grid's gx*gy blocks in order, or in
 * reverse (nvj_cpu_reverse). */
#include "prelude_cpu.h"

__thread i64 nvj_cpu_block;
__thread int nvj_cpu_bdim;
int nvj_cpu_reverse;

int nvj_cpu_set_reverse(int r) {
	const int old = nvj_cpu_reverse;
	nvj_cpu_reverse = r != 0;
	return old;
}

#include "resize.cu"
#include "cpu.h"

#define LAUNCH(gx, gy, block, call)                                            \
	do {                                                                   \
		nvj_cpu_bdim = (block);                                            \
		for (i64 b_ = 0, nb_ = (i64)(gx) * (gy); b_ < nb_; b_++) {        \
			nvj_cpu_block = nvj_cpu_reverse ? nb_ - 1 - b_ : b_;           \
			call;                                                  \
		}                                                              \
	} while (0)

void nvj_cpu_resize_h(int gx, int gy, int b, const uint8_t *src, uint8_t *tmp, const int32_t *tab, const int64_t *desc, int32_t outw, int32_t ch) {
	LAUNCH(gx, gy, b, resize_h(gx, src, tmp, tab, desc, outw, ch));
}

void nvj_cpu_resize_v_u8(int gx, int gy, int b, const uint8_t *tmp, uint8_t *dst, const int32_t *tab, const int64_t *desc, int32_t outw, int32_t outh, int32_t ch) {
	LAUNCH(gx, gy, b, resize_v_u8(gx, tmp, dst, tab, desc, outw, outh, ch));
}

void nvj_cpu_resize_v_f32(int gx, int gy, int b, const uint8_t *tmp, float *dst, const int32_t *tab, const int64_t *desc, const float *lut, int32_t outw, int32_t outh, int32_t ch) {
	LAUNCH(gx, gy, b, resize_v_f32(gx, tmp, dst, tab, desc, lut, outw, outh, ch));
}
