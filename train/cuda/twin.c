//go:build cgo

/* twin.c: see twin.h. */
#include <stdlib.h>
#include <string.h>

#include "twin.h"

void twin_conv_fwd(const float *x, const float *w, float *y, int n, int c, int h, int wd, int k, int r, int pad,
		   int stride, int oh, int ow) {
	double *acc = malloc(sizeof(double) * (size_t)oh * ow);
	for (int in = 0; in < n; in++)
		for (int o = 0; o < k; o++) {
			memset(acc, 0, sizeof(double) * (size_t)oh * ow);
			for (int i = 0; i < c; i++) {
				const float *plane = x + ((size_t)in * c + i) * h * wd;
				for (int kh = 0; kh < r; kh++)
					for (int kw = 0; kw < r; kw++) {
						double wv = w[(((size_t)o * c + i) * r + kh) * r + kw];
						for (int yo = 0; yo < oh; yo++) {
							int iy = yo * stride - pad + kh;
							if (iy < 0 || iy >= h)
								continue;
							for (int xo = 0; xo < ow; xo++) {
								int ix = xo * stride - pad + kw;
								if (ix >= 0 && ix < wd)
									acc[yo * ow + xo] += wv * plane[iy * wd + ix];
							}
						}
					}
			}
			float *dst = y + ((size_t)in * k + o) * oh * ow;
			for (int j = 0; j < oh * ow; j++)
				dst[j] = (float)acc[j];
		}
	free(acc);
}

void twin_conv_bwd_data(const float *w, const float *dy, float *dx, int n, int c, int h, int wd, int k, int r,
			int pad, int stride, int oh, int ow) {
	double *acc = malloc(sizeof(double) * (size_t)h * wd);
	for (int in = 0; in < n; in++)
		for (int i = 0; i < c; i++) {
			memset(acc, 0, sizeof(double) * (size_t)h * wd);
			for (int o = 0; o < k; o++) {
				const float *g = dy + ((size_t)in * k + o) * oh * ow;
				for (int kh = 0; kh < r; kh++)
					for (int kw = 0; kw < r; kw++) {
						double wv = w[(((size_t)o * c + i) * r + kh) * r + kw];
						for (int yo = 0; yo < oh; yo++) {
							int iy = yo * stride - pad + kh;
							if (iy < 0 || iy >= h)
								continue;
							for (int xo = 0; xo < ow; xo++) {
								int ix = xo * stride - pad + kw;
								if (ix >= 0 && ix < wd)
									acc[iy * wd + ix] += wv * g[yo * ow + xo];
							}
						}
					}
			}
			float *dst = dx + ((size_t)in * c + i) * h * wd;
			for (int j = 0; j < h * wd; j++)
				dst[j] = (float)acc[j];
		}
	free(acc);
}

void twin_conv_bwd_filter(const float *x, const float *dy, float *dw, int n, int c, int h, int wd, int k, int r,
			  int pad, int stride, int oh, int ow) {
	for (int o = 0; o < k; o++)
		for (int i = 0; i < c; i++)
			for (int kh = 0; kh < r; kh++)
				for (int kw = 0; kw < r; kw++) {
					double s = 0;
					for (int in = 0; in < n; in++) {
						const float *g = dy + ((size_t)in * k + o) * oh * ow;
						const float *plane = x + ((size_t)in * c + i) * h * wd;
						for (int yo = 0; yo < oh; yo++) {
							int iy = yo * stride - pad + kh;
							if (iy < 0 || iy >= h)
								continue;
							for (int xo = 0; xo < ow; xo++) {
								int ix = xo * stride - pad + kw;
								if (ix >= 0 && ix < wd)
									s += (double)g[yo * ow + xo] * plane[iy * wd + ix];
							}
						}
					}
					dw[(((size_t)o * c + i) * r + kh) * r + kw] = (float)s;
				}
}

/* Column-major: element (i, j) of a matrix with leading dimension ld is at
 * i + j*ld; op(A)(i, l) is A(l, i) when transposed. */
void twin_sgemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda, const float *b, int ldb,
		float beta, float *cm, int ldc) {
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++) {
			double s = 0;
			for (int l = 0; l < k; l++) {
				double av = ta ? a[l + (size_t)i * lda] : a[i + (size_t)l * lda];
				double bv = tb ? b[j + (size_t)l * ldb] : b[l + (size_t)j * ldb];
				s += av * bv;
			}
			float *dst = cm + i + (size_t)j * ldc;
			*dst = beta == 0.0f ? (float)(alpha * s) : (float)(alpha * s + (double)beta * *dst);
		}
}

/* ---- 16-bit operands (BackendOptions.Precision bf16, fp16) ---- */

/* The conversions of kernels.cu's cast kernels, bit for bit: round to
 * nearest even, overflow to inf, subnormal halves kept. */
static uint32_t twin_f2u(float f) {
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}
static float twin_u2f(uint32_t u) {
	float f;
	memcpy(&f, &u, 4);
	return f;
}
uint16_t twin_f32_to_16(float f, int bf16) {
	uint32_t x = twin_f2u(f);
	if (bf16) {
		if ((x & 0x7fffffffu) > 0x7f800000u)
			return 0x7fc0u;
		x += 0x7fffu + ((x >> 16) & 1u);
		return (uint16_t)(x >> 16);
	}
	uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
	if (ax >= 0x7f800000u)
		return (uint16_t)(sign | (ax > 0x7f800000u ? (0x7e00u | ((ax >> 13) & 0x3ffu)) : 0x7c00u));
	if (ax >= 0x477ff000u)
		return (uint16_t)(sign | 0x7c00u);
	if (ax < 0x38800000u) {
		if (ax < 0x33000000u)
			return (uint16_t)sign;
		uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u, shift = 126u - e;
		uint32_t r = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
		if (rem > half || (rem == half && (r & 1u)))
			r++;
		return (uint16_t)(sign | r);
	}
	uint32_t r = ax - 0x38000000u;
	r += 0xfffu + ((r >> 13) & 1u);
	return (uint16_t)(sign | (r >> 13));
}
float twin_16_to_f32(uint16_t h, int bf16) {
	if (bf16)
		return twin_u2f((uint32_t)h << 16);
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
	if (e == 0x1fu)
		return twin_u2f(sign | 0x7f800000u | (m << 13));
	if (e == 0) {
		float v = (float)m * 5.9604644775390625e-8f;
		return sign ? -v : v;
	}
	return twin_u2f(sign | ((e + 112u) << 23) | (m << 13));
}

static float *widen(const uint16_t *v, size_t n, int bf16) {
	float *f = malloc(sizeof(float) * (n ? n : 1));
	for (size_t i = 0; i < n; i++)
		f[i] = twin_16_to_f32(v[i], bf16);
	return f;
}

void twin_conv_16(int dir, int bf16, const uint16_t *a, const uint16_t *b, uint16_t *out, int n, int c, int h, int wd,
		  int k, int r, int pad, int stride, int oh, int ow) {
	size_t nx = (size_t)n * c * h * wd, nw = (size_t)k * c * r * r, ny = (size_t)n * k * oh * ow;
	size_t na = dir == 1 ? nw : nx, nb = dir == 0 ? nw : ny, nout = dir == 0 ? ny : dir == 1 ? nx : nw;
	float *fa = widen(a, na, bf16), *fb = widen(b, nb, bf16), *fo = malloc(sizeof(float) * nout);
	if (dir == 0)
		twin_conv_fwd(fa, fb, fo, n, c, h, wd, k, r, pad, stride, oh, ow);
	else if (dir == 1)
		twin_conv_bwd_data(fa, fb, fo, n, c, h, wd, k, r, pad, stride, oh, ow);
	else
		twin_conv_bwd_filter(fa, fb, fo, n, c, h, wd, k, r, pad, stride, oh, ow);
	for (size_t i = 0; i < nout; i++)
		out[i] = twin_f32_to_16(fo[i], bf16);
	free(fa);
	free(fb);
	free(fo);
}

/* nhwc moves n planes of c×hw 16-bit values between channels-first
 * (to_nhwc 0: src is NHWC, dst NCHW) and channels-last (to_nhwc 1). */
static uint16_t *relayout(const uint16_t *src, int n, int c, int hw, int to_nhwc) {
	uint16_t *dst = malloc(sizeof(uint16_t) * (size_t)n * c * hw + 1);
	for (int b = 0; b < n; b++)
		for (int ch = 0; ch < c; ch++)
			for (int p = 0; p < hw; p++) {
				size_t first = ((size_t)b * c + ch) * hw + p, last = ((size_t)b * hw + p) * c + ch;
				if (to_nhwc)
					dst[last] = src[first];
				else
					dst[first] = src[last];
			}
	return dst;
}

void twin_conv_16_nhwc(int dir, int bf16, const uint16_t *a, const uint16_t *b, uint16_t *out, int n, int c, int h,
		       int wd, int k, int r, int pad, int stride, int oh, int ow) {
	/* Each operand to channels-first: x (n, c, h*w), w (k, c, r*r), dy (n, k, oh*ow). */
	int an = dir == 1 ? k : n, ac = c, ahw = dir == 1 ? r * r : h * wd;
	int bn = dir == 0 ? k : n, bc = dir == 0 ? c : k, bhw = dir == 0 ? r * r : oh * ow;
	int on = dir == 2 ? k : n, oc = dir == 0 ? k : c, ohw = dir == 0 ? oh * ow : dir == 1 ? h * wd : r * r;
	uint16_t *fa = relayout(a, an, ac, ahw, 0), *fb = relayout(b, bn, bc, bhw, 0);
	uint16_t *fo = malloc(sizeof(uint16_t) * (size_t)on * oc * ohw + 1);
	twin_conv_16(dir, bf16, fa, fb, fo, n, c, h, wd, k, r, pad, stride, oh, ow);
	uint16_t *lo = relayout(fo, on, oc, ohw, 1);
	memcpy(out, lo, sizeof(uint16_t) * (size_t)on * oc * ohw);
	free(fa);
	free(fb);
	free(fo);
	free(lo);
}

void twin_gemm_16(int bf16, int ta, int tb, int m, int n, int k, float alpha, const uint16_t *a, int lda,
		  const uint16_t *b, int ldb, float beta, float *cm, int ldc) {
	size_t na = (size_t)lda * (ta ? m : k), nb = (size_t)ldb * (tb ? k : n);
	float *fa = widen(a, na, bf16), *fb = widen(b, nb, bf16);
	twin_sgemm(ta, tb, m, n, k, alpha, fa, lda, fb, ldb, beta, cm, ldc);
	free(fa);
	free(fb);
}
