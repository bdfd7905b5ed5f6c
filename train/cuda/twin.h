/* twin.h: the CPU twin's convolutions and matrix product (twin.c), with
 * the semantics of the GPU machine's cuDNN and cuBLAS calls: NCHW float32
 * cross-correlation with pads and strides, no groups or dilation, alpha 1
 * and beta 0; column-major sgemm. They accumulate in double and round once,
 * as the reference backend does. Addresses are host pointers. */
#include <stddef.h>

void twin_conv_fwd(const float *x, const float *w, float *y, int n, int c, int h, int wd, int k, int r, int pad,
		   int stride, int oh, int ow);
void twin_conv_bwd_data(const float *w, const float *dy, float *dx, int n, int c, int h, int wd, int k, int r,
			int pad, int stride, int oh, int ow);
void twin_conv_bwd_filter(const float *x, const float *dy, float *dw, int n, int c, int h, int wd, int k, int r,
			  int pad, int stride, int oh, int ow);
void twin_sgemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda, const float *b, int ldb,
		float beta, float *cm, int ldc);
