//go:build cgo

/* cpu.c: resize.cu built by gcc for the CPU (see prelude_cpu.h), one
 * launcher per kernel running the grid's gx*gy blocks in order. */
#include "prelude_cpu.h"

__thread i64 nvj_cpu_block;
__thread int nvj_cpu_bdim;

#include "resize.cu"
#include "cpu.h"

#define LAUNCH(gx, gy, block, call)                                            \
	do {                                                                   \
		nvj_cpu_bdim = (block);                                            \
		for (nvj_cpu_block = 0; nvj_cpu_block < (i64)(gx) * (gy); nvj_cpu_block++) \
			call;                                                  \
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
