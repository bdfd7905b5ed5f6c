/* twin.h: the CPU twin's convolutions and matrix product (twin.c), with
 * the semantics of the GPU machine's cuDNN and cuBLAS calls: NCHW float32
 * cross-correlation with pads and strides, no groups or dilation, alpha 1
 * and beta 0; column-major sgemm. They accumulate in double and round once,
 * as the reference backend does. Addresses are host pointers. */
#include <stddef.h>
#include <stdint.h>

void twin_conv_fwd(const float *x, const float *w, float *y, int n, int c, int h, int wd, int k, int r, int pad,
		   int stride, int oh, int ow);
void twin_conv_bwd_data(const float *w, const float *dy, float *dx, int n, int c, int h, int wd, int k, int r,
			int pad, int stride, int oh, int ow);
void twin_conv_bwd_filter(const float *x, const float *dy, float *dw, int n, int c, int h, int wd, int k, int r,
			  int pad, int stride, int oh, int ow);
void twin_sgemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda, const float *b, int ldb,
		float beta, float *cm, int ldc);

/* 16-bit operands (bf16 when bf16, else IEEE fp16), cuDNN's and cuBLAS's
 * mixed precision as the GPU machine calls them: twin_conv_16 is direction
 * dir (0 forward: a x, b w, out y; 1 backward data: a w, b dy, out dx;
 * 2 backward filter: a x, b dy, out dw) with every tensor 16-bit, the
 * products summed in double and the result rounded to float, then to 16
 * bits (round to nearest even; the GPU sums in float and rounds once to
 * 16 bits); twin_gemm_16 is cublasGemmEx with 16-bit A and B and a float
 * C (CUBLAS_COMPUTE_32F). twin_f32_to_16 and twin_16_to_f32 are the cast
 * kernels' conversions. */
uint16_t twin_f32_to_16(float f, int bf16);
float twin_16_to_f32(uint16_t h, int bf16);
void twin_conv_16(int dir, int bf16, const uint16_t *a, const uint16_t *b, uint16_t *out, int n, int c, int h, int wd,
		  int k, int r, int pad, int stride, int oh, int ow);
/* twin_conv_16_nhwc is twin_conv_16 on channels-last tensors (x, y and
 * their gradients N×H×W×C, the filter K×R×R×C): the same sums, the
 * operands and result moved from and to that layout. */
void twin_conv_16_nhwc(int dir, int bf16, const uint16_t *a, const uint16_t *b, uint16_t *out, int n, int c, int h,
		       int wd, int k, int r, int pad, int stride, int oh, int ow);
void twin_gemm_16(int bf16, int ta, int tb, int m, int n, int k, float alpha, const uint16_t *a, int lda,
		  const uint16_t *b, int ldb, float beta, float *cm, int ldc);
