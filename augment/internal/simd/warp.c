//go:build cgo

// The bilinear warps of an RGB row, eight output pixels at a time with
// AVX2, each lane doing its Go kernel's operations in their order (no
// FMA, no reassociation: the target is AVX2 without FMA, and contraction
// is off below), so the same bytes:
//   - augment's Warp (torchvision's tensor path) in float32 lanes; pixels
//     whose four taps are not all inside the image are left to the caller;
//   - PIL's affine transform with BILINEAR (augment's WarpPILBilinear,
//     Geometry.c) in float64 lanes; a position outside the picture takes
//     the fill, and one inside whose 2x2 taps are not all inside (PIL
//     clamps them) is left to the caller.
// The row's last n mod 8 pixels are left to the caller too, listed in slow.

#include <stdint.h>
#include <string.h>

#include "resize.h"

int faster_cpu_level(void);

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/* GCC's target region; clang (zig cc, which builds the wheel for older
 * glibc) ignores GCC's target pragma and takes its own. Clang's target
 * avx2 does not include fma either. */
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#pragma STDC FP_CONTRACT OFF
#else
#pragma GCC push_options
#pragma GCC target("avx2,no-fma")
#pragma GCC optimize("fp-contract=off")
#endif

// put3 writes packed pixel v (R, G, B in its low three bytes) as pixel k
// of o; fill3 writes the three bytes f.
static inline void put3(uint8_t *o, int k, int32_t v) {
	o[3 * k] = (uint8_t)v;
	o[3 * k + 1] = (uint8_t)(v >> 8);
	o[3 * k + 2] = (uint8_t)(v >> 16);
}
static inline void fill3(uint8_t *o, int k, const uint8_t *f) {
	o[3 * k] = f[0];
	o[3 * k + 1] = f[1];
	o[3 * k + 2] = f[2];
}
static int warp3_avx2(uint8_t *out, const uint8_t *src, const float *colX, const float *colY, float rowX,
		float rowY, float cx, float cy, float sw, float sh, int w, int h, int n, const float *fill, int32_t *slow) {
	const int rowLen = w * 3;
	const __m256 vrowX = _mm256_set1_ps(rowX), vrowY = _mm256_set1_ps(rowY);
	const __m256 vcx = _mm256_set1_ps(cx), vcy = _mm256_set1_ps(cy);
	const __m256 vsw = _mm256_set1_ps(sw), vsh = _mm256_set1_ps(sh);
	const __m256 one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(0.5f), big = _mm256_set1_ps(8388608.0f);
	const __m256i zero = _mm256_setzero_si256(), ff = _mm256_set1_epi32(0xff);
	const __m256i wm2 = _mm256_set1_epi32(w - 2), hm2 = _mm256_set1_epi32(h - 2);
	const __m256i vrow = _mm256_set1_epi32(rowLen), three = _mm256_set1_epi32(3);
	const __m256i off3 = _mm256_set1_epi32(3), offq = _mm256_set1_epi32(rowLen), offq3 = _mm256_set1_epi32(rowLen + 3);
	const __m256i wm1 = _mm256_set1_epi32(w - 1), hm1 = _mm256_set1_epi32(h - 1);
	// What a pixel with no tap inside becomes: 0, or the fill through
	// round8 (clamped to [0, 255], NaN to 0, half to even).
	uint8_t fillb[3] = {0, 0, 0};
	if (fill) {
		for (int c = 0; c < 3; c++) {
			float f = fill[c];
			if (!(f > 0))
				f = 0;
			if (f >= 255)
				f = 255;
			volatile float t = f + 8388608.0f; // one rounding, as round8's
			fillb[c] = (uint8_t)(int)(t - 8388608.0f);
		}
	}
	int ns = 0, ox = 0;
	int32_t packed[8];
	for (; ox + 8 <= n; ox += 8) {
		__m256 gx = _mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(colX + ox), vrowX), vcx);
		__m256 gy = _mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(colY + ox), vrowY), vcy);
		__m256 ix = _mm256_sub_ps(_mm256_mul_ps(_mm256_add_ps(gx, one), vsw), half);
		__m256 iy = _mm256_sub_ps(_mm256_mul_ps(_mm256_add_ps(gy, one), vsh), half);
		__m256 fx = _mm256_floor_ps(ix), fy = _mm256_floor_ps(iy);
		__m256i x0 = _mm256_cvttps_epi32(fx), y0 = _mm256_cvttps_epi32(fy);
		// Outside unless 0 <= x0 <= w-2 and 0 <= y0 <= h-2 (NaN and
		// overflow convert to INT32_MIN: outside).
		__m256i bad = _mm256_or_si256(_mm256_or_si256(_mm256_cmpgt_epi32(zero, x0), _mm256_cmpgt_epi32(x0, wm2)),
				_mm256_or_si256(_mm256_cmpgt_epi32(zero, y0), _mm256_cmpgt_epi32(y0, hm2)));
		int badBits = _mm256_movemask_ps(_mm256_castsi256_ps(bad));
		// Of those, the pixels whose four taps are all outside (x0 < -1 or
		// x0 > w-1, or the same for y0) are the fill, or zero: no sample to
		// blend (the Go kernel's sums stay 0 and its mask 0). The others
		// straddle the border and go back to the caller.
		__m256i away = _mm256_or_si256(
				_mm256_or_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(-1), x0), _mm256_cmpgt_epi32(x0, wm1)),
				_mm256_or_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(-1), y0), _mm256_cmpgt_epi32(y0, hm1)));
		int awayBits = _mm256_movemask_ps(_mm256_castsi256_ps(away));
		if (badBits == 0xff && awayBits != 0xff) {
			uint8_t *o = out + (long)ox * 3;
			for (int k = 0; k < 8; k++) {
				if (awayBits >> k & 1) {
					fill3(o, k, fillb);
				} else {
					slow[ns++] = ox + k;
				}
			}
			continue;
		}
		if (badBits == 0xff) {
			uint8_t *o = out + (long)ox * 3;
			for (int k = 0; k < 8; k++) {
				fill3(o, k, fillb);
			}
			continue;
		}
		__m256i good = _mm256_xor_si256(bad, _mm256_set1_epi32(-1));
		__m256i idx = _mm256_add_epi32(_mm256_mullo_epi32(y0, vrow), _mm256_mullo_epi32(x0, three));
		const int *base = (const int *)src;
		__m256i p = _mm256_mask_i32gather_epi32(zero, base, idx, good, 1);
		__m256i p3 = _mm256_mask_i32gather_epi32(zero, base, _mm256_add_epi32(idx, off3), good, 1);
		__m256i q = _mm256_mask_i32gather_epi32(zero, base, _mm256_add_epi32(idx, offq), good, 1);
		__m256i q3 = _mm256_mask_i32gather_epi32(zero, base, _mm256_add_epi32(idx, offq3), good, 1);
		__m256 wx = _mm256_sub_ps(ix, fx), wy = _mm256_sub_ps(iy, fy);
		__m256 ex = _mm256_sub_ps(one, wx), sy = _mm256_sub_ps(one, wy);
		__m256 wnw = _mm256_mul_ps(sy, ex), wne = _mm256_mul_ps(sy, wx);
		__m256 wsw = _mm256_mul_ps(wy, ex), wse = _mm256_mul_ps(wy, wx);
		__m256 mask, unmask;
		if (fill) {
			mask = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(wnw, wne), wsw), wse);
			unmask = _mm256_sub_ps(one, mask);
		}
		__m256i res = zero;
		for (int c = 0; c < 3; c++) {
			__m256i sh8 = _mm256_set1_epi64x(8 * c);
			__m256 a = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srl_epi32(p, _mm256_castsi256_si128(sh8)), ff));
			__m256 b = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srl_epi32(p3, _mm256_castsi256_si128(sh8)), ff));
			__m256 d = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srl_epi32(q, _mm256_castsi256_si128(sh8)), ff));
			__m256 e = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srl_epi32(q3, _mm256_castsi256_si128(sh8)), ff));
			__m256 v = _mm256_add_ps(_mm256_mul_ps(wnw, a), _mm256_mul_ps(wne, b));
			v = _mm256_add_ps(v, _mm256_mul_ps(wsw, d));
			v = _mm256_add_ps(v, _mm256_mul_ps(wse, e));
			if (fill) {
				// img*mask + (1-mask)*fill, then round8's clamps (NaN to
				// 0: max_ps returns its second operand for a NaN).
				v = _mm256_add_ps(_mm256_mul_ps(v, mask), _mm256_mul_ps(unmask, _mm256_set1_ps(fill[c])));
				v = _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), _mm256_set1_ps(255.0f));
			}
			// Half to even: add and remove 2^23 (v is in [0, 255]).
			__m256i r = _mm256_cvttps_epi32(_mm256_sub_ps(_mm256_add_ps(v, big), big));
			res = _mm256_or_si256(res, _mm256_sll_epi32(r, _mm256_castsi256_si128(sh8)));
		}
		_mm256_storeu_si256((__m256i *)packed, res);
		uint8_t *o = out + (long)ox * 3;
		if (badBits == 0) {
			for (int k = 0; k < 8; k++) {
				put3(o, k, packed[k]);
			}
			continue;
		}
		for (int k = 0; k < 8; k++) {
			if (awayBits >> k & 1) {
				fill3(o, k, fillb);
				continue;
			}
			if (badBits >> k & 1) {
				slow[ns++] = ox + k;
				continue;
			}
			put3(o, k, packed[k]);
		}
	}
	for (; ox < n; ox++)
		slow[ns++] = ox;
	return ns;
}
// lanes8 is the 8-bit mask bits as eight 32-bit lanes of all ones or zero.
static inline __m256i lanes8(int bits) {
	const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
	return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(bits), bit), bit);
}

// blend is one channel of four pixels: v1 = a + (b - a) dx on the upper
// row, v2 the same on the lower, then (int)(v1 + (v2 - v1) dy).
static inline __m128i blend(__m128i a, __m128i b, __m128i c, __m128i d, __m256d dx, __m256d dy) {
	__m256d fa = _mm256_cvtepi32_pd(a), fc = _mm256_cvtepi32_pd(c);
	__m256d v1 = _mm256_add_pd(fa, _mm256_mul_pd(_mm256_cvtepi32_pd(_mm_sub_epi32(b, a)), dx));
	__m256d v2 = _mm256_add_pd(fc, _mm256_mul_pd(_mm256_cvtepi32_pd(_mm_sub_epi32(d, c)), dx));
	return _mm256_cvttpd_epi32(_mm256_add_pd(v1, _mm256_mul_pd(_mm256_sub_pd(v2, v1), dy)));
}

static int warp_pil3_avx2(uint8_t *out, const uint8_t *src, double a0, double a2, double a3, double a5, double rowX,
		double rowY, int w, int h, int n, const uint8_t *fill, int32_t *slow) {
	const int rowLen = w * 3;
	const double fw = w, fh = h;
	const __m256d va0 = _mm256_set1_pd(a0), va2 = _mm256_set1_pd(a2), va3 = _mm256_set1_pd(a3), va5 = _mm256_set1_pd(a5);
	const __m256d vrowX = _mm256_set1_pd(rowX), vrowY = _mm256_set1_pd(rowY);
	const __m256d zero = _mm256_setzero_pd(), half = _mm256_set1_pd(0.5), vfw = _mm256_set1_pd(fw), vfh = _mm256_set1_pd(fh);
	const __m256d steps = _mm256_setr_pd(0.5, 1.5, 2.5, 3.5), four = _mm256_set1_pd(4.0);
	const __m256i izero = _mm256_setzero_si256(), ff = _mm256_set1_epi32(0xff);
	const __m256i wm2 = _mm256_set1_epi32(w - 2), hm2 = _mm256_set1_epi32(h - 2);
	const __m256i vrow = _mm256_set1_epi32(rowLen), three = _mm256_set1_epi32(3);
	const __m256i off3 = _mm256_set1_epi32(3), offq = _mm256_set1_epi32(rowLen), offq3 = _mm256_set1_epi32(rowLen + 3);
	int ns = 0, ox = 0;
	int32_t packed[8];
	for (; ox + 8 <= n; ox += 8) {
		// xin = x + 0.5, exact; xx = a0 xin + rowX + a2, left to right.
		__m256d xinL = _mm256_add_pd(_mm256_set1_pd((double)ox), steps), xinH = _mm256_add_pd(xinL, four);
		__m256d xxL = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(va0, xinL), vrowX), va2);
		__m256d xxH = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(va0, xinH), vrowX), va2);
		__m256d yyL = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(va3, xinL), vrowY), va5);
		__m256d yyH = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(va3, xinH), vrowY), va5);
		// Inside: 0 <= xx < w and 0 <= yy < h (NaN: outside, the fill).
#define INSIDE(xx, yy)                                                                                   \
	_mm256_movemask_pd(_mm256_and_pd(                                                                    \
			_mm256_and_pd(_mm256_cmp_pd(xx, zero, _CMP_GE_OQ), _mm256_cmp_pd(xx, vfw, _CMP_LT_OQ)), \
			_mm256_and_pd(_mm256_cmp_pd(yy, zero, _CMP_GE_OQ), _mm256_cmp_pd(yy, vfh, _CMP_LT_OQ))))
		int inside = INSIDE(xxL, yyL) | INSIDE(xxH, yyH) << 4;
#undef INSIDE
		// The interior: xs = xx - 0.5 >= 0, ys too, and their truncations
		// at most w-2 and h-2 (then xx < w and yy < h: inside too).
		__m256d xsL = _mm256_sub_pd(xxL, half), xsH = _mm256_sub_pd(xxH, half);
		__m256d ysL = _mm256_sub_pd(yyL, half), ysH = _mm256_sub_pd(yyH, half);
		int nonneg = _mm256_movemask_pd(_mm256_and_pd(_mm256_cmp_pd(xsL, zero, _CMP_GE_OQ), _mm256_cmp_pd(ysL, zero, _CMP_GE_OQ))) |
				_mm256_movemask_pd(_mm256_and_pd(_mm256_cmp_pd(xsH, zero, _CMP_GE_OQ), _mm256_cmp_pd(ysH, zero, _CMP_GE_OQ))) << 4;
		__m128i xiL = _mm256_cvttpd_epi32(xsL), xiH = _mm256_cvttpd_epi32(xsH);
		__m128i yiL = _mm256_cvttpd_epi32(ysL), yiH = _mm256_cvttpd_epi32(ysH);
		__m256i xi = _mm256_set_m128i(xiH, xiL), yi = _mm256_set_m128i(yiH, yiL);
		// Out of range (a huge position converts to INT32_MIN: negative).
		__m256i far = _mm256_or_si256(_mm256_or_si256(_mm256_cmpgt_epi32(izero, xi), _mm256_cmpgt_epi32(xi, wm2)),
				_mm256_or_si256(_mm256_cmpgt_epi32(izero, yi), _mm256_cmpgt_epi32(yi, hm2)));
		__m256i good = _mm256_andnot_si256(far, lanes8(nonneg & inside));
		int goodBits = _mm256_movemask_ps(_mm256_castsi256_ps(good));
		uint8_t *o = out + (long)ox * 3;
		if (goodBits == 0) {
			for (int k = 0; k < 8; k++) {
				if (inside >> k & 1) {
					slow[ns++] = ox + k;
					continue;
				}
				fill3(o, k, fill);
			}
			continue;
		}
		// dx = xs - xi, dy = ys - yi (xi, yi: floors here, xs, ys >= 0).
		__m256d dxL = _mm256_sub_pd(xsL, _mm256_cvtepi32_pd(xiL)), dxH = _mm256_sub_pd(xsH, _mm256_cvtepi32_pd(xiH));
		__m256d dyL = _mm256_sub_pd(ysL, _mm256_cvtepi32_pd(yiL)), dyH = _mm256_sub_pd(ysH, _mm256_cvtepi32_pd(yiH));
		__m256i idx = _mm256_add_epi32(_mm256_mullo_epi32(yi, vrow), _mm256_mullo_epi32(xi, three));
		const int *base = (const int *)src;
		__m256i p = _mm256_mask_i32gather_epi32(izero, base, idx, good, 1);
		__m256i p3 = _mm256_mask_i32gather_epi32(izero, base, _mm256_add_epi32(idx, off3), good, 1);
		__m256i q = _mm256_mask_i32gather_epi32(izero, base, _mm256_add_epi32(idx, offq), good, 1);
		__m256i q3 = _mm256_mask_i32gather_epi32(izero, base, _mm256_add_epi32(idx, offq3), good, 1);
		__m256i res = izero;
		for (int c = 0; c < 3; c++) {
			__m128i sh = _mm_cvtsi32_si128(8 * c);
			__m256i a = _mm256_and_si256(_mm256_srl_epi32(p, sh), ff), b = _mm256_and_si256(_mm256_srl_epi32(p3, sh), ff);
			__m256i cc = _mm256_and_si256(_mm256_srl_epi32(q, sh), ff), d = _mm256_and_si256(_mm256_srl_epi32(q3, sh), ff);
			__m128i lo = blend(_mm256_castsi256_si128(a), _mm256_castsi256_si128(b), _mm256_castsi256_si128(cc),
					_mm256_castsi256_si128(d), dxL, dyL);
			__m128i hi = blend(_mm256_extracti128_si256(a, 1), _mm256_extracti128_si256(b, 1), _mm256_extracti128_si256(cc, 1),
					_mm256_extracti128_si256(d, 1), dxH, dyH);
			res = _mm256_or_si256(res, _mm256_sll_epi32(_mm256_and_si256(_mm256_set_m128i(hi, lo), ff), sh));
		}
		_mm256_storeu_si256((__m256i *)packed, res);
		if (goodBits == 0xff) {
			for (int k = 0; k < 8; k++) {
				put3(o, k, packed[k]);
			}
			continue;
		}
		for (int k = 0; k < 8; k++) {
			if (goodBits >> k & 1) {
				put3(o, k, packed[k]);
			} else if (inside >> k & 1) {
				slow[ns++] = ox + k;
			} else {
				fill3(o, k, fill);
			}
		}
	}
	for (; ox < n; ox++)
		slow[ns++] = ox;
	return ns;
}
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

int faster_warp_bilinear3(uint8_t *out, const uint8_t *src, long srcLen, const float *colX, const float *colY,
		float rowX, float rowY, float cx, float cy, float sw, float sh, int w, int h, int n, const float *fill,
		int32_t *slow) {
	// The gathers read 4 bytes at a tap's offset + 3 on the lower row: one
	// byte past the image at its last pixel, so the caller pads src by 4.
	if (faster_cpu_level() < 2 || w < 2 || h < 2 || (long)w * 3 * h + 4 > srcLen || (long)w * 3 * h > 0x7ffffff0L)
		return -1;
	return warp3_avx2(out, src, colX, colY, rowX, rowY, cx, cy, sw, sh, w, h, n, fill, slow);
}

int faster_warp_pil_bilinear3(uint8_t *out, const uint8_t *src, long srcLen, double a0, double a2, double a3, double a5,
		double rowX, double rowY, int w, int h, int n, const uint8_t *fill, int32_t *slow) {
	// The gathers read 4 bytes at a tap's offset + 3 on the lower row: one
	// byte past the image at its last pixel, so the caller pads src by 4.
	if (faster_cpu_level() < 2 || w < 2 || h < 2 || (long)w * 3 * h + 4 > srcLen || (long)w * 3 * h > 0x7ffffff0L)
		return -1;
	return warp_pil3_avx2(out, src, a0, a2, a3, a5, rowX, rowY, w, h, n, fill, slow);
}

#else

int faster_warp_bilinear3(uint8_t *out, const uint8_t *src, long srcLen, const float *colX, const float *colY,
		float rowX, float rowY, float cx, float cy, float sw, float sh, int w, int h, int n, const float *fill,
		int32_t *slow) {
	return -1;
}

int faster_warp_pil_bilinear3(uint8_t *out, const uint8_t *src, long srcLen, double a0, double a2, double a3, double a5,
		double rowX, double rowY, int w, int h, int n, const uint8_t *fill, int32_t *slow) {
	return -1;
}

#endif
