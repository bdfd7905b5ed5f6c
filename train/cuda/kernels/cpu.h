/* cpu.h: the launchers of cpu.c (kernels.cu built for the CPU). */
#include <stdint.h>

void cpu_cast_f32_f16(int g, int b, const float *in, uint16_t *out, int64_t n);
void cpu_cast_f16_f32(int g, int b, const uint16_t *in, float *out, int64_t n);
void cpu_cast_f32_bf16(int g, int b, const float *in, uint16_t *out, int64_t n);
void cpu_cast_bf16_f32(int g, int b, const uint16_t *in, float *out, int64_t n);
void cpu_normalize_u8(int g, int b, const uint8_t *in, float *out, const float *a, const float *bb,
		      int32_t n, int32_t c, int32_t h, int32_t w, int32_t mode);
void cpu_sgd(int g, int b, float *w, const float *gr, float *v, int64_t n, float lr, float momentum, float wd,
	     int32_t nesterov, int32_t first);
void cpu_amp_unscale(int g, int b, float *gr, int64_t n, float *found_inf, const float *inv_scale);
void cpu_ce_loss(int g, int b, const float *logits, const int32_t *labels, float *dlogits, float *rowstat,
		 int32_t n, int32_t k, float eps, float gscale);
void cpu_ce_sums(int g, int b, const float *rowstat, int32_t n, double *sums);
void cpu_bn_plane_sum(int g, int b, const void *x, double *part, int32_t n, int32_t c, int32_t hw, int32_t fl);
void cpu_bn_stats(int g, int b, const void *x, const double *part, double *stat, float *bmean, float *bvar,
		  float *rmean, float *rvar, int32_t n, int32_t c, int32_t hw, float eps, float momentum, int32_t fl);
void cpu_bn_apply(int g, int b, const void *x, void *y, const float *gamma, const float *beta, const double *stat,
		  const float *s, uint16_t *y16, int32_t n, int32_t c, int32_t hw, int32_t fl);
void cpu_bn_eval(int g, int b, const void *x, void *y, const float *gamma, const float *beta, const float *rmean,
		 const float *rvar, const float *s, uint16_t *y16, int32_t n, int32_t c, int32_t hw, float eps, int32_t fl);
void cpu_bn_bwd_sum(int g, int b, const void *dy, const void *x, const float *gamma, const float *beta,
		    const double *fstat, const float *bmean, const float *bvar, double *part, int32_t n, int32_t c,
		    int32_t hw, float eps, int32_t fl);
void cpu_bn_bwd_stats(int g, int b, const double *part, double *stat, float *dgamma, float *dbeta, int32_t n,
		      int32_t c, int32_t hw);
void cpu_bn_bwd_apply(int g, int b, const void *dy, const void *x, const float *gamma, const float *beta,
		      const double *fstat, const float *bmean, const float *bvar, const double *stat, void *dx,
		      int32_t n, int32_t c, int32_t hw, float eps, int32_t fl);
void cpu_bn_nhwc_sum(int g, int b, const void *x, double *part, int32_t n, int32_t c, int32_t hw, int32_t fl);
void cpu_bn_nhwc_apply(int g, int b, const void *x, void *y, const float *gamma, const float *beta,
		       const double *stat, const float *s, uint16_t *y16, int32_t n, int32_t c, int32_t hw, int32_t fl);
void cpu_bn_nhwc_eval(int g, int b, const void *x, void *y, const float *gamma, const float *beta,
		      const float *rmean, const float *rvar, const float *s, uint16_t *y16, int32_t n, int32_t c, int32_t hw, float eps, int32_t fl);
void cpu_bn_nhwc_bwd_sum(int g, int b, const void *dy, const void *x, const float *gamma, const float *beta,
			 const double *fstat, const float *bmean, double *part, int32_t n, int32_t c, int32_t hw,
			 int32_t fl);
void cpu_bn_nhwc_bwd_apply(int g, int b, const void *dy, const void *x, const float *gamma, const float *beta,
			   const double *fstat, const float *bmean, const double *stat, void *dx, int32_t n,
			   int32_t c, int32_t hw, int32_t fl);
int64_t cpu_bn_nhwc_runs(int32_t n, int32_t c, int32_t hw);
void cpu_bn_tiles_apply(int g, int b, const void *x, float *y, const float *gamma, const float *beta,
			const double *stat, const float *s, uint16_t *y16, int32_t n, int32_t c, int32_t hw, int32_t fl);
void cpu_bn_tiles_eval(int g, int b, const void *x, float *y, const float *gamma, const float *beta,
		       const float *rmean, const float *rvar, const float *s, uint16_t *y16, int32_t n, int32_t c, int32_t hw, float eps, int32_t fl);
void cpu_bn_tiles_bwd_sum(int g, int b, const float *dy, const void *x, const float *gamma, const float *beta,
			  const double *fstat, const float *bmean, double *part, int32_t n, int32_t c, int32_t hw,
			  int32_t fl);
void cpu_bn_tiles_bwd_apply(int g, int b, const float *dy, const void *x, const float *gamma, const float *beta,
			    const double *fstat, const float *bmean, const double *stat, void *dx, int32_t n,
			    int32_t c, int32_t hw, int32_t fl);
void cpu_relu_fwd(int g, int b, const float *x, float *y, int64_t n);
void cpu_relu_bwd(int g, int b, const float *dy, const float *y, float *dx, int64_t n);
void cpu_add(int g, int b, const float *x, const float *y, float *out, int64_t n);
void cpu_add_relu(int g, int b, const float *x, const float *y, float *out, int64_t n);
void cpu_add_relu_bwd(int g, int b, const float *x, const float *y, const float *r, float *out, int64_t n);
void cpu_add_relu_low(int g, int b, const float *x, const float *y, float *out, uint16_t *out16, int64_t n, int32_t fl);
void cpu_add_relu_tiles(int g, int b, const float *x, const float *y, float *out, uint16_t *out16, int32_t n, int32_t c,
			int32_t hw, int32_t fl);
void cpu_add_relu_bwd_low(int g, int b, const void *x, const void *y, const float *r, float *out, int64_t n, int32_t fl);
void cpu_add_relu_bwd_tiles(int g, int b, const void *x, const void *y, const float *r, float *out, int32_t n,
			    int32_t c, int32_t hw, int32_t fl);
void cpu_bias_act(int g, int b, float *y, const float *bias, int64_t n, int32_t c, int32_t hw, int32_t relu);
void cpu_bias_grad(int g, int b, const float *dy, float *db, int32_t n, int32_t c, int32_t hw);
/* The pools' dims d: n, c, h, w, oh, ow, kh, kw, sh, sw, ph, pw (and
 * exclude_pad for the average), in the kernels' order. */
void cpu_maxpool_fwd(int g, int b, const float *x, float *y, int32_t *arg, const int32_t *d);
void cpu_maxpool_bwd(int g, int b, const float *dy, const int32_t *arg, float *dx, const int32_t *d);
void cpu_avgpool_fwd(int g, int b, const float *x, float *y, const int32_t *d);
void cpu_avgpool_bwd(int g, int b, const float *dy, float *dx, const int32_t *d);
void cpu_ema_update(int g, int b, float *avg, const float *v, int64_t n, float decay, int32_t first);
void cpu_swap_f32(int g, int b, float *x, float *y, int64_t n);
void cpu_copy_f32(int g, int b, const float *src, float *dst, int64_t n);
void cpu_fill_f32(int g, int b, float *v, int64_t n, float value);

int cpu_set_schedule(int s);
/* races.c: kernel kind (0 phase, 1 nosync, 2 loop, 3 blocks), racy or fixed. */
int cpu_race(int kind, int g, int b, const float *in, float *out, int tiles, int fixed);

/* By name (cpu.c's dispatch table): cpu_launch returns 0, -1 for an unknown
 * kernel, -2 for a count of slots other than the kernel's parameters. */
int cpu_launch(const char *name, int grid, int block, const unsigned long long *args, int nargs);
int cpu_kernel_nargs(const char *name);
int cpu_kernel_count(void);
const char *cpu_kernel_name(int i);
const char *cpu_kernel_args(int i);
