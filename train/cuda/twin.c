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
