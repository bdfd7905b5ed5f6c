/* kernels.cu: the cuda backend's own kernels, one source for two compilers.
 *
 * NVRTC compiles it as CUDA C++ after prelude_gpu.h, for the device's
 * architecture, with --fmad=false; gcc compiles it as C after
 * prelude_cpu.h with -ffp-contract=off, and the tests run that build on
 * the CPU against Go twins, the reference backend and torch. So the
 * bodies keep to the subset both accept: the prelude's macros and types,
 * fmaf, expf, logf, sqrt, no headers, no templates, no C99-only syntax.
 *
 * Rules of the subset (see prelude_cpu.h for why):
 *   - a block's threads work in phases: THREADS(t) { ... } END_THREADS,
 *     then SYNC; what a thread keeps for a later phase goes to SHARED
 *     arrays indexed by t, never a local;
 *   - the block size is a power of two, at most MAXB (geometry.go plans it);
 *   - reductions are trees over SHARED arrays, in the same order on both.
 *
 * a*b+c is two roundings on both compilers; fmaf(a, b, c) one. Where a
 * kernel mirrors torch, it rounds where torch's CPU and CUDA kernels do.
 */

#define MAXB 256

DEVICE int finite_f(float v) { return (f2u(v) & 0x7f800000u) != 0x7f800000u; }
DEVICE float neg_inf(void) { return u2f(0xff800000u); }
DEVICE float nan_f(void) { return u2f(0x7fc00000u); }

/* ---- conversions (bit-exact, round to nearest even) ---- */

/* f32_to_f16: IEEE binary16, round to nearest even; NaN stays NaN (quiet,
 * sign and the top payload bits kept, as x86's vcvtps2ph); overflow to inf. */
DEVICE u16 f32_to_f16(float f) {
	u32 x = f2u(f);
	u32 sign = (x >> 16) & 0x8000u;
	u32 ax = x & 0x7fffffffu;
	if (ax >= 0x7f800000u) /* inf or NaN */
		return (u16)(sign | (ax > 0x7f800000u ? (0x7e00u | ((ax >> 13) & 0x3ffu)) : 0x7c00u));
	if (ax >= 0x477ff000u) /* >= 65520: rounds to inf */
		return (u16)(sign | 0x7c00u);
	if (ax < 0x38800000u) { /* below 2^-14: a subnormal half or zero */
		if (ax < 0x33000000u) /* <= 2^-25 (a tie, to even): zero */
			return (u16)sign;
		u32 e = ax >> 23;
		u32 m = (ax & 0x7fffffu) | 0x800000u;
		u32 shift = 126u - e; /* 14..24 */
		u32 r = m >> shift;
		u32 rem = m & ((1u << shift) - 1u);
		u32 half = 1u << (shift - 1u);
		if (rem > half || (rem == half && (r & 1u)))
			r++;
		return (u16)(sign | r);
	}
	u32 r = ax - 0x38000000u; /* rebias 127 -> 15 */
	r += 0xfffu + ((r >> 13) & 1u);
	return (u16)(sign | (r >> 13));
}

DEVICE float f16_to_f32(u16 h) {
	u32 sign = (u32)(h & 0x8000u) << 16;
	u32 e = (h >> 10) & 0x1fu;
	u32 m = h & 0x3ffu;
	if (e == 0x1fu)
		return u2f(sign | 0x7f800000u | (m << 13));
	if (e == 0) {
		float v = (float)m * 5.9604644775390625e-8f; /* m * 2^-24, exact */
		return sign ? -v : v;
	}
	return u2f(sign | ((e + 112u) << 23) | (m << 13));
}

/* f32_to_bf16: round to nearest even; every NaN becomes 0x7fc0 (c10's
 * round_to_nearest_even). */
DEVICE u16 f32_to_bf16(float f) {
	u32 x = f2u(f);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (u16)0x7fc0u;
	x += 0x7fffu + ((x >> 16) & 1u);
	return (u16)(x >> 16);
}

DEVICE float bf16_to_f32(u16 h) { return u2f((u32)h << 16); }

KERNEL cast_f32_f16(const float *in, u16 *out, i64 n) {
	FOR_EACH(i, n) out[i] = f32_to_f16(in[i]);
}
KERNEL cast_f16_f32(const u16 *in, float *out, i64 n) {
	FOR_EACH(i, n) out[i] = f16_to_f32(in[i]);
}
KERNEL cast_f32_bf16(const float *in, u16 *out, i64 n) {
	FOR_EACH(i, n) out[i] = f32_to_bf16(in[i]);
}
KERNEL cast_bf16_f32(const u16 *in, float *out, i64 n) {
	FOR_EACH(i, n) out[i] = bf16_to_f32(in[i]);
}

/* ---- input ---- */

/* normalize_u8: uint8 HWC images (n of h*w*c bytes) to float NCHW,
 * out = v*scale[ch] + shift[ch] (scale = 1/(255*std), shift = -mean/std,
 * as train.Images.Fill: two roundings). */
KERNEL normalize_u8(const u8 *in, float *out, const float *scale, const float *shift,
		    i32 n, i32 c, i32 h, i32 w) {
	const i64 hw = (i64)h * w;
	FOR_EACH(i, (i64)n * c * hw) {
		i64 p = i % hw;
		i64 ch = (i / hw) % c;
		i64 img = i / (hw * c);
		float v = (float)in[(img * hw + p) * c + ch];
		out[i] = v * scale[ch] + shift[ch];
	}
}

/* ---- optimiser ---- */

/* sgd: torch.optim.SGD (dampening 0, maximize off) over one flat buffer of
 * parameters, rounding as torch does:
 *   d = fma(wd, w, g)                  grad.add(param, alpha=wd), when wd != 0
 *   v = d on the first step, else m*v + d   buf.mul_(m).add_(d)
 *   d = Nesterov ? fma(m, v, d) : v    d.add(buf, alpha=m)
 *   w = fma(-lr, d, w)                 param.add_(d, alpha=-lr)
 * v is not touched when momentum is 0. */
KERNEL sgd(float *w, const float *g, float *v, i64 n, float lr, float momentum, float wd,
	   i32 nesterov, i32 first) {
	FOR_EACH(i, n) {
		float d = g[i];
		if (wd != 0.0f)
			d = fmaf(wd, w[i], d);
		if (momentum != 0.0f) {
			float b = first ? d : momentum * v[i] + d;
			v[i] = b;
			d = nesterov ? fmaf(momentum, b, d) : b;
		}
		w[i] = fmaf(-lr, d, w[i]);
	}
}

/* amp_unscale: torch's _amp_foreach_non_finite_check_and_unscale_ on one
 * flat buffer: found_inf = 1 where an input is not finite (checked before
 * scaling); g = g*inv_scale unless inv_scale is 1. */
KERNEL amp_unscale(float *g, i64 n, float *found_inf, const float *inv_scale) {
	const float inv = *inv_scale;
	FOR_EACH(i, n) {
		float v = g[i];
		if (!finite_f(v))
			*found_inf = 1.0f;
		g[i] = inv == 1.0f ? v : v * inv;
	}
}

/* ---- block reductions (every thread of the block calls them) ---- */

DEVICE void reduce_max_f(float *sh) {
	for (int s = BLOCK_DIM / 2; s > 0; s >>= 1) {
		THREADS(t)
		if (t < s && sh[t + s] > sh[t])
			sh[t] = sh[t + s];
		END_THREADS
		SYNC
	}
}

DEVICE void reduce_sum_f(float *sh) {
	for (int s = BLOCK_DIM / 2; s > 0; s >>= 1) {
		THREADS(t)
		if (t < s)
			sh[t] += sh[t + s];
		END_THREADS
		SYNC
	}
}

DEVICE void reduce_sum_d(double *sh) {
	for (int s = BLOCK_DIM / 2; s > 0; s >>= 1) {
		THREADS(t)
		if (t < s)
			sh[t] += sh[t + s];
		END_THREADS
		SYNC
	}
}

DEVICE void reduce_sum_i(int *sh) {
	for (int s = BLOCK_DIM / 2; s > 0; s >>= 1) {
		THREADS(t)
		if (t < s)
			sh[t] += sh[t + s];
		END_THREADS
		SYNC
	}
}

/* ---- loss ---- */

/* ce_loss: softmax cross-entropy of logits (n x k) against labels with
 * label smoothing eps, one block per row: the gradient
 *   dlogits = (softmax - target) * gscale,  target = (1-eps)[j = y] + eps/k
 * (gscale = loss scale / n for a mean), and per row in rowstat[3*row..]:
 * the loss -(1-eps) log p_y - eps/k sum_j log p_j, whether the label is the
 * top-1 and among the top-5 (rank as train.CrossEntropy: ties to the lower
 * index, a NaN above every number, a NaN label logit never correct).
 * A label outside [0, k) gives a NaN loss and counts as wrong. */
KERNEL ce_loss(const float *logits, const i32 *labels, float *dlogits, float *rowstat,
	       i32 n, i32 k, float eps, float gscale) {
	SHARED float sh[MAXB];
	SHARED int shi[MAXB];
	SHARED float mx, lse;
	for (i64 row = BLOCK_IDX; row < n; row += GRID_DIM) {
		const float *x = logits + row * k;
		float *dx = dlogits + row * k;
		const i32 y = labels[row];
		const int ok = y >= 0 && y < k;
		THREADS(t)
		float m = neg_inf();
		for (i32 j = t; j < k; j += BLOCK_DIM)
			if (x[j] > m)
				m = x[j];
		sh[t] = m;
		END_THREADS
		SYNC
		reduce_max_f(sh);
		THREADS(t)
		if (t == 0)
			mx = sh[0];
		END_THREADS
		SYNC
		THREADS(t)
		float s = 0.0f;
		for (i32 j = t; j < k; j += BLOCK_DIM)
			s += expf(x[j] - mx);
		sh[t] = s;
		END_THREADS
		SYNC
		reduce_sum_f(sh);
		THREADS(t)
		if (t == 0)
			lse = mx + logf(sh[0]);
		END_THREADS
		SYNC
		THREADS(t)
		float s = 0.0f;
		int r = 0;
		const float ly = ok ? x[y] : nan_f();
		for (i32 j = t; j < k; j += BLOCK_DIM) {
			float v = x[j];
			s += v - lse;
			if (v > ly || (v == ly && j < y) || (v != v && j != y))
				r++;
			float tgt = (j == y ? 1.0f - eps : 0.0f) + eps / (float)k;
			dx[j] = (expf(v - lse) - tgt) * gscale;
		}
		sh[t] = s;
		shi[t] = r;
		END_THREADS
		SYNC
		reduce_sum_f(sh);
		reduce_sum_i(shi);
		THREADS(t)
		if (t == 0) {
			const float ly = ok ? x[y] : nan_f();
			float nll = lse - ly;
			float loss = eps == 0.0f ? nll : (1.0f - eps) * nll - eps / (float)k * sh[0];
			int rank = ly != ly ? 1 << 30 : shi[0];
			rowstat[3 * row] = loss;
			rowstat[3 * row + 1] = rank == 0 ? 1.0f : 0.0f;
			rowstat[3 * row + 2] = rank < 5 ? 1.0f : 0.0f;
		}
		END_THREADS
		SYNC
	}
}

/* ce_sums: one block adds the rows' loss, top-1 and top-5 (rowstat of
 * ce_loss) to sums[0..2], in double: the per-batch sums, read once per
 * logging interval. */
KERNEL ce_sums(const float *rowstat, i32 n, double *sums) {
	SHARED double sh[3 * MAXB];
	if (BLOCK_IDX != 0)
		return;
	THREADS(t)
	double a = 0, b = 0, c = 0;
	for (i64 r = t; r < n; r += BLOCK_DIM) {
		a += rowstat[3 * r];
		b += rowstat[3 * r + 1];
		c += rowstat[3 * r + 2];
	}
	sh[t] = a;
	sh[MAXB + t] = b;
	sh[2 * MAXB + t] = c;
	END_THREADS
	SYNC
	reduce_sum_d(sh);
	reduce_sum_d(sh + MAXB);
	reduce_sum_d(sh + 2 * MAXB);
	THREADS(t)
	if (t == 0) {
		sums[0] += sh[0];
		sums[1] += sh[MAXB];
		sums[2] += sh[2 * MAXB];
	}
	END_THREADS
}

/* ---- ReLU then BatchNorm, training (ThinNet's order: conv, ReLU, BN) ---- */

DEVICE float relu_f(float v) { return v > 0.0f ? v : (v != v ? v : 0.0f); }

/* relu_bn_train: y = gamma*(r - mean)/sqrt(var + eps) + beta with r =
 * ReLU(x), x NCHW, the batch's mean and biased variance per channel (in
 * double, as the reference backend), written to bmean and bvar; the
 * running statistics updated as train.BatchNorm2D does:
 *   running = (1-m)*running + m*batch, the variance unbiased by cnt/(cnt-1).
 * One block per channel. */
KERNEL relu_bn_train(const float *x, float *y, const float *gamma, const float *beta,
		     float *bmean, float *bvar, float *rmean, float *rvar,
		     i32 n, i32 c, i32 hw, float eps, float momentum) {
	SHARED double sh[MAXB];
	SHARED double mean, invsd;
	const i64 cnt = (i64)n * hw;
	for (i64 ch = BLOCK_IDX; ch < c; ch += GRID_DIM) {
		THREADS(t)
		double s = 0;
		for (i64 i = t; i < cnt; i += BLOCK_DIM)
			s += relu_f(x[((i / hw) * c + ch) * hw + i % hw]);
		sh[t] = s;
		END_THREADS
		SYNC
		reduce_sum_d(sh);
		THREADS(t)
		if (t == 0)
			mean = sh[0] / (double)cnt;
		END_THREADS
		SYNC
		THREADS(t)
		double s = 0;
		for (i64 i = t; i < cnt; i += BLOCK_DIM) {
			double d = relu_f(x[((i / hw) * c + ch) * hw + i % hw]) - mean;
			s += d * d;
		}
		sh[t] = s;
		END_THREADS
		SYNC
		reduce_sum_d(sh);
		THREADS(t)
		if (t == 0) {
			double var = sh[0] / (double)cnt;
			invsd = 1.0 / sqrt(var + (double)eps);
			float bm = (float)mean, bv = (float)var;
			float cntf = (float)cnt;
			float unbias = cntf / (cntf - 1.0f > 1.0f ? cntf - 1.0f : 1.0f);
			bmean[ch] = bm;
			bvar[ch] = bv;
			rmean[ch] = (1.0f - momentum) * rmean[ch] + momentum * bm;
			rvar[ch] = (1.0f - momentum) * rvar[ch] + momentum * bv * unbias;
		}
		END_THREADS
		SYNC
		THREADS(t)
		const double g = gamma[ch], b = beta[ch];
		for (i64 i = t; i < cnt; i += BLOCK_DIM) {
			i64 at = ((i / hw) * c + ch) * hw + i % hw;
			y[at] = (float)(g * (relu_f(x[at]) - mean) * invsd + b);
		}
		END_THREADS
		SYNC
	}
}
