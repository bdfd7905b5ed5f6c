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
 *     arrays indexed by t, never a local; SHARED(type, name, dims)
 *     declares one;
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

/* The casts around a channels_last convolution (BackendOptions.ChannelsLast):
 * float NCHW to 16-bit NHWC, and 16-bit NHWC back to float NCHW, each
 * value rounded or widened as the plain casts do; a filter KCRS <-> KRSC
 * is the same with n = K, c = C, hw = R*R. A transpose of each image's
 * c x hw matrix, a tile of TILE channels x TILE positions at a time
 * through SHARED memory: read along the input's contiguous dimension and
 * written along the output's, so both coalesce, with no division per
 * value (indexing each value by the output cost three 64-bit divisions).
 * PerRow launches, a row per tile: cast_tiles(n, c, hw) of them
 * (kernels.CastTiles). */
#define TILE 32

DEVICE i64 cast_tiles(i64 n, i64 c, i64 hw) { return n * ((c + TILE - 1) / TILE) * ((hw + TILE - 1) / TILE); }

/* tile_at: tile k's image b, first channel c0 and first position p0. */
DEVICE void tile_at(i64 k, i64 c, i64 hw, i64 *b, i64 *c0, i64 *p0) {
	const i64 tc = (c + TILE - 1) / TILE, tp = (hw + TILE - 1) / TILE;
	const i64 bb = k / (tc * tp), r = k - bb * tc * tp;
	*b = bb;
	*c0 = (r / tp) * TILE;
	*p0 = (r - (r / tp) * tp) * TILE;
}

/* round_to16: v rounded to nearest even into bfloat16 (bf16) or
 * binary16. */
DEVICE u16 round_to16(float v, int bf16) { return bf16 ? f32_to_bf16(v) : f32_to_f16(v); }

/* tile_put16: tile k's values rounded (round_to16) into 16-bit NHWC y16,
 * written along channels, the tile holding them [channel][position]
 * (by_channel) or [position][channel]: the second pass of the casts to
 * NHWC, of add_relu_tiles and of bn_tiles_copy16. No SYNC: the caller's
 * before (the tile written) and after (before it is written again). */
DEVICE void tile_put16(float tile[TILE][TILE + 1], int by_channel, u16 *y16, i64 k, i32 c, i32 hw, int bf16) {
	THREADS(t)
	i64 b, c0, p0;
	tile_at(k, c, hw, &b, &c0, &p0);
	for (int e = t; e < TILE * TILE; e += BLOCK_DIM) {
		const int r = e / TILE, q = e % TILE; /* position, channel */
		if (c0 + q < c && p0 + r < hw)
			y16[(b * hw + p0 + r) * c + c0 + q] = round_to16(by_channel ? tile[q][r] : tile[r][q], bf16);
	}
	END_THREADS
}

/* cast_tiles_move: one of the two casts, by which input is given: inf
 * (float NCHW) into outh (16-bit NHWC), or inh (16-bit NHWC) into outf
 * (float NCHW), bf16 or fp16 by bf16. Each tile is read with consecutive
 * threads along the input's contiguous dimension (positions of NCHW,
 * channels of NHWC) into tile[r][q], and written from tile[q][r] along
 * the output's. */
DEVICE void cast_tiles_move(const float *inf, const u16 *inh, float *outf, u16 *outh, i32 n, i32 c, i32 hw, int bf16) {
	SHARED(float, tile, [TILE][TILE + 1]);
	const int nchw_in = inf != 0;
	const i64 tiles = cast_tiles(n, c, hw);
	for (i64 k = BLOCK_IDX; k < tiles; k += GRID_DIM) {
		THREADS(t)
		i64 b, c0, p0;
		tile_at(k, c, hw, &b, &c0, &p0);
		for (int e = t; e < TILE * TILE; e += BLOCK_DIM) {
			const int r = e / TILE, q = e % TILE;
			const i64 ch = nchw_in ? c0 + r : c0 + q, pos = nchw_in ? p0 + q : p0 + r;
			if (ch < c && pos < hw) {
				if (nchw_in)
					tile[r][q] = inf[(b * c + ch) * hw + pos];
				else
					tile[r][q] = bf16 ? bf16_to_f32(inh[(b * hw + pos) * c + ch]) : f16_to_f32(inh[(b * hw + pos) * c + ch]);
			}
		}
		END_THREADS
		SYNC
		if (nchw_in) {
			tile_put16(tile, 1, outh, k, c, hw, bf16);
		} else {
			THREADS(t)
			i64 b, c0, p0;
			tile_at(k, c, hw, &b, &c0, &p0);
			for (int e = t; e < TILE * TILE; e += BLOCK_DIM) {
				const int r = e / TILE, q = e % TILE; /* channel, position */
				if (c0 + r < c && p0 + q < hw)
					outf[(b * c + c0 + r) * hw + p0 + q] = tile[q][r];
			}
			END_THREADS
		}
		SYNC
	}
}

KERNEL cast_nchw_nhwc_f16(const float *in, u16 *out, i32 n, i32 c, i32 hw) { cast_tiles_move(in, 0, 0, out, n, c, hw, 0); }
KERNEL cast_nhwc_nchw_f16(const u16 *in, float *out, i32 n, i32 c, i32 hw) { cast_tiles_move(0, in, out, 0, n, c, hw, 0); }
KERNEL cast_nchw_nhwc_bf16(const float *in, u16 *out, i32 n, i32 c, i32 hw) { cast_tiles_move(in, 0, 0, out, n, c, hw, 1); }
KERNEL cast_nhwc_nchw_bf16(const u16 *in, float *out, i32 n, i32 c, i32 hw) { cast_tiles_move(0, in, out, 0, n, c, hw, 1); }

/* ---- input ---- */

/* normalize_u8: uint8 HWC images (n of h*w*c bytes; CHW ones with
 * NORM_CHW) to float NCHW in one of two arithmetics. Without NORM_DIV:
 * out = v*a[ch] + b[ch] (a = 1/(255*std), b = -mean/std, as
 * train.Images.Fill: two roundings). With NORM_DIV: out = (v/255 - a[ch])
 * / b[ch] (a = mean, b = std, as torchvision's ToTensor and Normalize and
 * the loader's table: three). NORM_FLIP mirrors each image left to right
 * (column x reads column w-1-x: flip test-time augmentation). */
#define NORM_CHW 1
#define NORM_DIV 2
#define NORM_FLIP 4
KERNEL normalize_u8(const u8 *in, float *out, const float *a, const float *b,
		    i32 n, i32 c, i32 h, i32 w, i32 mode) {
	/* A block per output plane (PerRow over the n·c planes of h·w): the
	 * image and channel found once a plane, not per value. */
	const i32 hw = h * w;
	const i64 planes = (i64)n * c;
	for (i64 pl = BLOCK_IDX; pl < planes; pl += GRID_DIM) {
		THREADS(t)
		const i64 img = pl / c, ch = pl - img * c;
		const float ac = a[ch], bc = b[ch];
		float *o = out + pl * hw;
		for (i32 p = t; p < hw; p += BLOCK_DIM) {
			i32 q = p;
			if (mode & NORM_FLIP)
				q += w - 1 - 2 * (p % w);
			const float v = (float)in[(mode & NORM_CHW) ? pl * hw + q : (img * hw + q) * c + ch];
			if (mode & NORM_DIV)
				o[p] = (v / 255.0f - ac) / bc;
			else
				o[p] = v * ac + bc;
		}
		END_THREADS
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
 * A label outside [0, k) gives a NaN loss and counts as wrong.
 * With dscale (not null), gscale is instead the GradScaler's scale kept on
 * the device (amp_update_scale's), so that a step's launch does not change
 * with it: (float)((((*dscale / ranks) * rows) / local) / n), the host's
 * float64 arithmetic for a device holding rows of a rank's local batch,
 * of ranks processes. */
KERNEL ce_loss(const float *logits, const i32 *labels, float *dlogits, float *rowstat,
	       i32 n, i32 k, float eps, float gscale, const double *dscale, i32 ranks, i32 rows, i32 local) {
	SHARED(float, sh, [MAXB]);
	SHARED(int, shi, [MAXB]);
	SHARED(float, mx, );
	SHARED(float, lse, );
	if (dscale)
		gscale = (float)((((*dscale / (double)ranks) * (double)rows) / (double)local) / (double)n);
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
	SHARED(double, sh, [3 * MAXB]);
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

/* ---- BatchNorm over planes (ThinNet's order: conv, ReLU, BN) ---- */

/* relu_f: max(v, 0), a NaN kept (Go's max, the reference's ReLU). */
DEVICE float relu_f(float v) { return v > 0.0f ? v : (v != v ? v : 0.0f); }

/* act_f: v, or relu_f(v) when relu != 0. */
DEVICE float act_f(float v, int relu) { return relu ? relu_f(v) : v; }

/* A channel's statistics of an NCHW tensor are reduced in two levels, so
 * that a launch has work for every multiprocessor whatever the channel
 * count (one block a channel left most of an H200 idle: 64 blocks for
 * ResNet-18's first BatchNorm, each looping over 3.2 million values) and
 * no element pays a 64-bit division to find its channel:
 *   - a block per plane (the n·c planes of hw contiguous values; PerRow,
 *     rows = n·c, cols = hw) sums in double, in tree order, into part,
 *     laid out channel by channel (part[ch·n + image]);
 *   - a block per channel (PerRow, rows = c, cols = n) adds its n planes'
 *     partial sums, in tree order too, and a thread of it computes the
 *     channel's statistics (a thread per channel adding its n sums one
 *     after another was 512 dependent loads deep at ThinNet's batch, in a
 *     launch of one block).
 * Training is three launches, two reads of x: bn_plane_sum (the sum and
 * the sum of squares), bn_stats, bn_apply; the backward bn_bwd_sum,
 * bn_bwd_stats, bn_bwd_apply. The sums are of r - k, k the channel's
 * first value (bn_shift), so that var = E[(r-k)²] - E[r-k]² cancels no
 * more than |mean - k|/σ allows, about one σ, wherever the mean lies (a
 * one-pass E[r²] - E[r]² loses 2^-53·mean²/σ² relative: y 44 float32 ulp
 * from the reference's two passes at mean = 1000σ). stat holds 2·c doubles: the
 * channel's mean (or dy's mean) in [0, c), its inverse standard deviation
 * (or dy·x-hat's mean) in [c, 2c).
 *
 * fl, the kernels' flags: BN_RELU reads ReLU(x) (the convolution's ReLU
 * handed on, train.ReLUInputBatchNormOp). BN_X16: x is 16-bit, the
 * convolution's output as cuDNN wrote it (NCHW), and the backward's dx is
 * written so for the convolution's backward to read as it is; BN_Y16: y
 * is written 16-bit for the convolution after it to read as it is, and
 * the backward's dy is that convolution's 16-bit input gradient
 * (train.LowInputOp, train.LowOutputOp). BN_F16 or BN_BF16 names the
 * 16-bit format. Each value is widened as it is read and rounded
 * (f32_to_f16, f32_to_bf16) as it is written: the same bits as the casts
 * before and after, without their passes. BN_RELU_OUT: y = ReLU(BatchNorm
 * (x)), the ReLU layer after it folded in (train.ReLUOutputBatchNormOp);
 * the backward's dy is the gradient of ReLU's output, masked where the
 * output, computed again from the forward's statistics (fstat) to the
 * same bits, is not > 0. BN_ADD (the apply and eval kernels): y =
 * ReLU(BatchNorm(x) + s), float32, s float32 in y's layout: a residual
 * block's main path's last BatchNorm with the block's add and ReLU folded
 * in (cuDNN's BN_ADD_ACTIVATION; train.SumReLUBatchNormOp), add_relu's
 * bits without its pass; with BN_COPY16 y also rounded (fl's format) into
 * y16, the next block's convolutions' operand (add_relu_low's and
 * add_relu_tiles's bits). The backward is BatchNorm's own: the block's
 * ReLU backward stays with the block's ReLU op, which owns y. */
#define BN_RELU 1
#define BN_F16 2
#define BN_BF16 4
#define BN_X16 8
#define BN_Y16 16
#define BN_RELU_OUT 32
#define BN_NHWC 64
#define BN_ADD 128
#define BN_COPY16 256

/* ld_f32: p[i] as float32: float32 values, or 16-bit ones when low
 * (bfloat16 when bf16, else binary16), widened. */
DEVICE float ld_f32(const void *p, i64 i, int low, int bf16) {
	if (!low)
		return ((const float *)p)[i];
	if (bf16)
		return bf16_to_f32(((const u16 *)p)[i]);
	return f16_to_f32(((const u16 *)p)[i]);
}

/* bn_ld: p[i] as float32, 16-bit in fl's format when fl has the flag
 * which (BN_X16 or BN_Y16). */
DEVICE float bn_ld(const void *p, i64 i, i32 fl, i32 which) { return ld_f32(p, i, fl & which, fl & BN_BF16); }

/* bn_in: act(x) at i, the value BatchNorm normalises. */
DEVICE float bn_in(const void *x, i64 i, i32 fl) { return act_f(bn_ld(x, i, fl, BN_X16), fl & BN_RELU); }

/* bn_st: p[i] = v, rounded to nearest even into fl's 16-bit format when
 * fl has the flag which. */
DEVICE void bn_st(void *p, i64 i, float v, i32 fl, i32 which) {
	if (!(fl & which))
		((float *)p)[i] = v;
	else
		((u16 *)p)[i] = round_to16(v, fl & BN_BF16);
}

/* bn_out: BatchNorm's value v at i written out: into y (ReLU(v) with
 * BN_RELU_OUT; 16-bit with BN_Y16), or with BN_ADD ReLU(v + s[i]) into
 * float32 y and, with BN_COPY16, rounded into y16[i] too. */
DEVICE void bn_out(void *y, u16 *y16, const float *s, i64 i, float v, i32 fl) {
	if (fl & BN_ADD) {
		const float r = relu_f(v + s[i]);
		((float *)y)[i] = r;
		if (fl & BN_COPY16)
			y16[i] = round_to16(r, fl & BN_BF16);
		return;
	}
	bn_st(y, i, act_f(v, fl & BN_RELU_OUT), fl, BN_Y16);
}

/* bn_shift: channel ch's shift k, act(x) at its first place (image 0,
 * position 0; x NHWC with BN_NHWC), or 0 when that is not finite (so a channel with an Inf
 * sums to the reference's Inf mean, not to Inf - Inf) or the tensor is
 * empty (nothing to read). */
DEVICE double bn_shift(const void *x, i64 ch, i32 n, i32 hw, i32 fl) {
	if (n <= 0 || hw <= 0)
		return 0.0;
	const float k = bn_in(x, (fl & BN_NHWC) ? ch : ch * hw, fl);
	return finite_f(k) ? (double)k : 0.0;
}

/* bn_plane_sum: part[q] = the sum over plane p (image p / c, channel
 * p % c) of act(x) - k, part[n·c + q] that of (act(x) - k)^2, k =
 * bn_shift of the plane's channel, q = channel·n + image. */
KERNEL bn_plane_sum(const void *x, double *part, i32 n, i32 c, i32 hw, i32 fl) {
	SHARED(double, sh, [2 * MAXB]);
	const i64 planes = (i64)n * c;
	for (i64 p = BLOCK_IDX; p < planes; p += GRID_DIM) {
		THREADS(t)
		const i64 at = p * hw;
		const double k = bn_shift(x, p % c, n, hw, fl);
		double s = 0, q = 0;
		for (i32 i = t; i < hw; i += BLOCK_DIM) {
			const double v = bn_in(x, at + i, fl) - k;
			s += v;
			q += v * v;
		}
		sh[t] = s;
		sh[MAXB + t] = q;
		END_THREADS
		SYNC
		reduce_sum_d(sh);
		reduce_sum_d(sh + MAXB);
		THREADS(t)
		if (t == 0) {
			const i64 q = (p % c) * n + p / c;
			part[q] = sh[0];
			part[planes + q] = sh[MAXB];
		}
		END_THREADS
		SYNC
	}
}

/* bn_chan_sum: a block's tree sum of channel ch's n partial sums at
 * part[ch·n ...] into sh[0], and of those at part[n·c + ch·n ...] into
 * sh[MAXB] (bn_plane_sum's and bn_bwd_sum's layout). */
DEVICE void bn_chan_sum(const double *part, double *sh, i64 ch, i32 n, i32 c) {
	const i64 planes = (i64)n * c;
	THREADS(t)
	double s = 0, q = 0;
	for (i32 i = t; i < n; i += BLOCK_DIM) {
		s += part[ch * n + i];
		q += part[planes + ch * n + i];
	}
	sh[t] = s;
	sh[MAXB + t] = q;
	END_THREADS
	SYNC
	reduce_sum_d(sh);
	reduce_sum_d(sh + MAXB);
}

/* bn_stats: per channel, a block each (PerRow over c, cols n), from the
 * planes' sums (x and fl give the shift k back), the mean k + E[r-k] into
 * stat[ch], the biased variance E[(r-k)²] - E[r-k]² (at least 0) and
 * stat[c + ch] = 1/sqrt(var + eps) (with BN_NHWC also stat[4c + ch] =
 * 1/sqrt(float32 var + eps), the backward's, once a channel); the batch's mean and variance as
 * float32 into bmean, bvar; the running statistics updated as
 * train.BatchNorm2D does: running = (1-m)*running + m*batch, the variance
 * unbiased by cnt/(cnt-1). */
KERNEL bn_stats(const void *x, const double *part, double *stat, float *bmean, float *bvar, float *rmean,
		float *rvar, i32 n, i32 c, i32 hw, float eps, float momentum, i32 fl) {
	SHARED(double, sh, [2 * MAXB]);
	for (i64 ch = BLOCK_IDX; ch < c; ch += GRID_DIM) {
		bn_chan_sum(part, sh, ch, n, c);
		THREADS(t)
		if (t == 0) {
			const i64 cnt = (i64)n * hw;
			const double s = sh[0], q = sh[MAXB];
			const double d = s / (double)cnt, mean = bn_shift(x, ch, n, hw, fl) + d;
			double var = q / (double)cnt - d * d;
			if (var < 0)
				var = 0;
			stat[ch] = mean;
			stat[c + ch] = 1.0 / sqrt(var + (double)eps);
			const float bm = (float)mean, bv = (float)var;
			if (fl & BN_NHWC) /* the backward's 1/σ, from the float32 variance as it computes it */
				stat[4 * c + ch] = 1.0 / sqrt((double)bv + (double)eps);
			const float cntf = (float)cnt;
			const float unbias = cntf / (cntf - 1.0f > 1.0f ? cntf - 1.0f : 1.0f);
			bmean[ch] = bm;
			bvar[ch] = bv;
			rmean[ch] = (1.0f - momentum) * rmean[ch] + momentum * bm;
			rvar[ch] = (1.0f - momentum) * rvar[ch] + momentum * bv * unbias;
		}
		END_THREADS
		SYNC
	}
}

/* bn_pre: BatchNorm's output at i before any ReLU after it, gamma*(act(x)
 * - mean)*invsd + beta in double, rounded once: the forward's value, and
 * the backward's again from the same operands (BN_RELU_OUT's mask). */
DEVICE float bn_pre_v(float v, double g, double m, double invsd, double b) { return (float)(g * (v - m) * invsd + b); }
DEVICE float bn_pre(const void *x, i64 i, i32 fl, double g, double m, double invsd, double b) {
	return bn_pre_v(bn_in(x, i, fl), g, m, invsd, b);
}

/* bn_apply: y = gamma*(act(x) - mean)*invsd + beta (ReLU of it with
 * BN_RELU_OUT), plane by plane, mean and invsd from stat (bn_stats). */
KERNEL bn_apply(const void *x, void *y, const float *gamma, const float *beta, const double *stat,
		const float *s, u16 *y16, i32 n, i32 c, i32 hw, i32 fl) {
	const i64 planes = (i64)n * c;
	for (i64 p = BLOCK_IDX; p < planes; p += GRID_DIM) {
		THREADS(t)
		const i64 ch = p % c, at = p * hw;
		const double g = gamma[ch], b = beta[ch], m = stat[ch], invsd = stat[c + ch];
		for (i32 i = t; i < hw; i += BLOCK_DIM)
			bn_out(y, y16, s, at + i, bn_pre(x, at + i, fl, g, m, invsd, b), fl);
		END_THREADS
	}
}

/* bn_eval: BatchNorm with the running statistics, as the reference
 * backend's eval Forward, plane by plane: y = gamma*(r - mean)*invsd +
 * beta in double, r = act(x), invsd = 1/sqrt(var + eps), mean and var the
 * float32 running statistics. */
KERNEL bn_eval(const void *x, void *y, const float *gamma, const float *beta, const float *rmean,
	       const float *rvar, const float *s, u16 *y16, i32 n, i32 c, i32 hw, float eps, i32 fl) {
	const i64 planes = (i64)n * c;
	for (i64 p = BLOCK_IDX; p < planes; p += GRID_DIM) {
		THREADS(t)
		const i64 ch = p % c, at = p * hw;
		const double m = rmean[ch], invsd = 1.0 / sqrt((double)rvar[ch] + (double)eps);
		const double g = gamma[ch], b = beta[ch];
		for (i32 i = t; i < hw; i += BLOCK_DIM)
			bn_out(y, y16, s, at + i, (float)(g * ((double)bn_in(x, at + i, fl) - m) * invsd + b), fl);
		END_THREADS
	}
}

/* BatchNorm's backward, after a training forward over x or over ReLU(x)
 * (fl has BN_RELU: x is the input before the ReLU; x-hat is
 * computed from relu(x) and dx is 0 where the ReLU masked, x > 0 false),
 * as the reference backend's BatchNorm (and ReLU) backward, from the
 * batch's float32 mean and biased variance the forward wrote:
 *   x-hat = (r - mean)*invsd, invsd = 1/sqrt(var + eps)
 *   dbeta = sum dy, dgamma = sum dy*x-hat  (double)
 *   dx = gamma*invsd*(dy - dbeta/M - x-hat*dgamma/M), M = n*hw.
 * With BN_RELU_OUT dy is first masked as the ReLU after it would (bn_mask). */

/* bn_grad: a channel's constants of the backward: the forward's float32
 * mean m, 1/σ inv (from its float32 variance) and gamma·inv k; for
 * BN_RELU_OUT's mask gamma fg, beta fb and the forward's statistics fm,
 * finv; the backward's g1 = dbeta/M and g2 = dgamma/M (bn_bwd_stats). */
typedef struct {
	double m, inv, k, fg, fb, fm, finv, g1, g2;
} bn_grad;

/* bn_grad_of: channel ch's bn_grad; beta and fstat are read only with
 * BN_RELU_OUT, stat when not NULL. */
DEVICE bn_grad bn_grad_of(i64 ch, i32 c, const float *gamma, const float *beta, const double *fstat, const float *bmean,
			  double inv, const double *stat, i32 fl) {
	bn_grad q;
	const int ro = (fl & BN_RELU_OUT) != 0;
	q.m = bmean[ch];
	q.inv = inv;
	q.k = (double)gamma[ch] * inv;
	q.fg = gamma[ch];
	q.fb = ro ? beta[ch] : 0;
	q.fm = ro ? fstat[ch] : 0;
	q.finv = ro ? fstat[c + ch] : 0;
	q.g1 = stat ? stat[ch] : 0;
	q.g2 = stat ? stat[c + ch] : 0;
	return q;
}

/* bn_mask: dy's value g at i, or with BN_RELU_OUT 0 where the output
 * before the ReLU (bn_pre from the forward's statistics) is not > 0. */
DEVICE double bn_mask(double g, const void *x, i64 i, i32 fl, const bn_grad *q) {
	if ((fl & BN_RELU_OUT) && !(bn_pre(x, i, fl, q->fg, q->fm, q->finv, q->fb) > 0.0f))
		return 0.0;
	return g;
}

/* bn_grad_sum: adds the value at i (dy's value dyv) to the sums of dy and
 * of dy·x-hat. */
DEVICE void bn_grad_sum(double dyv, const void *x, i64 i, i32 fl, const bn_grad *q, double *sdy, double *sdyx) {
	const double g = bn_mask(dyv, x, i, fl, q);
	*sdy += g;
	*sdyx += g * ((double)bn_in(x, i, fl) - q->m) * q->inv;
}

/* bn_grad_dx: dx at i from dy's value dyv. */
DEVICE void bn_grad_dx(double dyv, const void *x, void *dx, i64 i, i32 fl, const bn_grad *q) {
	const float v = bn_ld(x, i, fl, BN_X16);
	if ((fl & BN_RELU) && !(v > 0.0f)) {
		bn_st(dx, i, 0.0f, fl, BN_X16);
		return;
	}
	const double xh = ((double)act_f(v, fl & BN_RELU) - q->m) * q->inv;
	const double g = bn_mask(dyv, x, i, fl, q);
	bn_st(dx, i, (float)(q->k * (g - q->g1 - xh * q->g2)), fl, BN_X16);
}

/* bn_bwd_sum: part[p] = the sum of dy over plane p, part[n·c + p] that of
 * dy*x-hat. */
KERNEL bn_bwd_sum(const void *dy, const void *x, const float *gamma, const float *beta, const double *fstat,
		  const float *bmean, const float *bvar, double *part, i32 n, i32 c, i32 hw, float eps, i32 fl) {
	SHARED(double, sh, [2 * MAXB]);
	const i64 planes = (i64)n * c;
	for (i64 p = BLOCK_IDX; p < planes; p += GRID_DIM) {
		THREADS(t)
		const i64 ch = p % c, at = p * hw;
		const bn_grad q = bn_grad_of(ch, c, gamma, beta, fstat, bmean, 1.0 / sqrt((double)bvar[ch] + (double)eps), 0, fl);
		double sdy = 0, sdyx = 0;
		for (i32 i = t; i < hw; i += BLOCK_DIM)
			bn_grad_sum(bn_ld(dy, at + i, fl, BN_Y16), x, at + i, fl, &q, &sdy, &sdyx);
		sh[t] = sdy;
		sh[MAXB + t] = sdyx;
		END_THREADS
		SYNC
		reduce_sum_d(sh);
		reduce_sum_d(sh + MAXB);
		THREADS(t)
		if (t == 0) {
			const i64 q = (p % c) * n + p / c;
			part[q] = sh[0];
			part[planes + q] = sh[MAXB];
		}
		END_THREADS
		SYNC
	}
}

/* bn_bwd_stats: per channel, a block each (PerRow over c, cols n), dbeta
 * and dgamma (float32) from the planes' sums, and stat[ch] = dbeta/M,
 * stat[c + ch] = dgamma/M in double. */
KERNEL bn_bwd_stats(const double *part, double *stat, float *dgamma, float *dbeta, i32 n, i32 c, i32 hw) {
	SHARED(double, sh, [2 * MAXB]);
	for (i64 ch = BLOCK_IDX; ch < c; ch += GRID_DIM) {
		bn_chan_sum(part, sh, ch, n, c);
		THREADS(t)
		if (t == 0) {
			const i64 cnt = (i64)n * hw;
			const double sdy = sh[0], sdyx = sh[MAXB];
			dbeta[ch] = (float)sdy;
			dgamma[ch] = (float)sdyx;
			stat[ch] = sdy / (double)cnt;
			stat[c + ch] = sdyx / (double)cnt;
		}
		END_THREADS
		SYNC
	}
}

/* bn_bwd_apply: dx, plane by plane, from stat (bn_bwd_stats). */
KERNEL bn_bwd_apply(const void *dy, const void *x, const float *gamma, const float *beta, const double *fstat,
		    const float *bmean, const float *bvar, const double *stat, void *dx, i32 n, i32 c, i32 hw,
		    float eps, i32 fl) {
	const i64 planes = (i64)n * c;
	for (i64 p = BLOCK_IDX; p < planes; p += GRID_DIM) {
		THREADS(t)
		const i64 ch = p % c, at = p * hw;
		const bn_grad q = bn_grad_of(ch, c, gamma, beta, fstat, bmean, 1.0 / sqrt((double)bvar[ch] + (double)eps), stat, fl);
		for (i32 i = t; i < hw; i += BLOCK_DIM)
			bn_grad_dx(bn_ld(dy, at + i, fl, BN_Y16), x, dx, at + i, fl, &q);
		END_THREADS
	}
}

/* ---- BatchNorm over channels-last values ----
 *
 * With BN_NHWC, x, y, dy and dx are N×H×W×C: the channels-last 16-bit
 * operands of the convolutions before and after (backend ChannelsLast),
 * passed as they are. The values and their arithmetic are those of the
 * kernels above, place by place; only the order of the sums differs (the
 * statistics within the double sums' rounding of the planes'), so
 * bn_stats and bn_bwd_stats serve both. The sums: a block per image and
 * group of BN_LANES channels (PerRow, rows n·ceil(c/BN_LANES), size
 * BN_LANES·hw), consecutive threads on consecutive channels, BLOCK_DIM /
 * BN_LANES of them down the image's positions, their tree into part in
 * bn_plane_sum's layout. The element-wise passes: a block per run of
 * positions (PerRow, rows bn_nhwc_runs, size TILE·TILE), its threads along
 * their run·c contiguous values. The backward's 1/σ is bn_stats's
 * stat[4c + ch] (one square root a channel, not one a value). */
#define BN_LANES 32

/* bn_lanes_sum: the tree of sh's BLOCK_DIM values down to the BN_LANES
 * first, sh[j] the sum of the lanes of channel j. */
DEVICE void bn_lanes_sum(double *sh) {
	for (int s = BLOCK_DIM / 2; s >= BN_LANES; s >>= 1) {
		THREADS(t)
		if (t < s)
			sh[t] += sh[t + s];
		END_THREADS
		SYNC
	}
}

/* bn_nhwc_part: writes the block's BN_LANES channels' sums (sh, sh +
 * MAXB) into part for image im from channel ch0. */
DEVICE void bn_nhwc_part(double *sh, double *part, i64 im, i32 ch0, i32 n, i32 c) {
	const i64 planes = (i64)n * c;
	bn_lanes_sum(sh);
	bn_lanes_sum(sh + MAXB);
	THREADS(t)
	if (t < BN_LANES && ch0 + t < c) {
		const i64 q = (i64)(ch0 + t) * n + im;
		part[q] = sh[t];
		part[planes + q] = sh[MAXB + t];
	}
	END_THREADS
	SYNC
}

/* bn_nhwc_sum: bn_plane_sum over NHWC x. */
KERNEL bn_nhwc_sum(const void *x, double *part, i32 n, i32 c, i32 hw, i32 fl) {
	SHARED(double, sh, [2 * MAXB]);
	const i32 groups = (c + BN_LANES - 1) / BN_LANES;
	for (i64 p = BLOCK_IDX; p < (i64)n * groups; p += GRID_DIM) {
		const i64 im = p / groups;
		const i32 ch0 = (i32)(p - im * groups) * BN_LANES;
		THREADS(t)
		const i32 ch = ch0 + t % BN_LANES, lanes = BLOCK_DIM / BN_LANES;
		double s = 0, q = 0;
		if (ch < c) {
			const double k = bn_shift(x, ch, n, hw, fl);
			for (i32 i = t / BN_LANES; i < hw; i += lanes) {
				const double v = bn_in(x, (im * hw + i) * c + ch, fl) - k;
				s += v;
				q += v * v;
			}
		}
		sh[t] = s;
		sh[MAXB + t] = q;
		END_THREADS
		SYNC
		bn_nhwc_part(sh, part, im, ch0, n, c);
	}
}

/* bn_nhwc_runs: the element-wise passes' rows: runs of positions of about
 * TILE·TILE values. */
DEVICE i64 bn_nhwc_run(i32 c) { return (TILE * TILE + c - 1) / c; }
DEVICE i64 bn_nhwc_runs(i32 n, i32 c, i32 hw) { return ((i64)n * hw + bn_nhwc_run(c) - 1) / bn_nhwc_run(c); }

/* bn_nhwc_apply: bn_apply over NHWC x and y. */
KERNEL bn_nhwc_apply(const void *x, void *y, const float *gamma, const float *beta, const double *stat,
		     const float *s, u16 *y16, i32 n, i32 c, i32 hw, i32 fl) {
	const i64 total = (i64)n * hw * c;
	const i32 run = (i32)bn_nhwc_run(c) * c;
	for (i64 p = BLOCK_IDX; p < bn_nhwc_runs(n, c, hw); p += GRID_DIM) {
		THREADS(t)
		const i64 at = p * run;
		for (i32 e = t; e < run && at + e < total; e += BLOCK_DIM) {
			const i32 ch = e % c; /* a run is whole positions */
			const double g = gamma[ch], b = beta[ch], m = stat[ch], invsd = stat[c + ch];
			bn_out(y, y16, s, at + e, bn_pre(x, at + e, fl, g, m, invsd, b), fl);
		}
		END_THREADS
	}
}

/* bn_nhwc_eval: bn_eval over NHWC x and y. */
KERNEL bn_nhwc_eval(const void *x, void *y, const float *gamma, const float *beta, const float *rmean,
		    const float *rvar, const float *s, u16 *y16, i32 n, i32 c, i32 hw, float eps, i32 fl) {
	const i64 total = (i64)n * hw * c;
	const i32 run = (i32)bn_nhwc_run(c) * c;
	for (i64 p = BLOCK_IDX; p < bn_nhwc_runs(n, c, hw); p += GRID_DIM) {
		THREADS(t)
		const i64 at = p * run;
		for (i32 e = t; e < run && at + e < total; e += BLOCK_DIM) {
			const i32 ch = e % c; /* a run is whole positions */
			const double m = rmean[ch], invsd = 1.0 / sqrt((double)rvar[ch] + (double)eps);
			const double g = gamma[ch], b = beta[ch];
			bn_out(y, y16, s, at + e, (float)(g * ((double)bn_in(x, at + e, fl) - m) * invsd + b), fl);
		}
		END_THREADS
	}
}

/* bn_nhwc_bwd_sum: bn_bwd_sum over NHWC dy and x; 1/σ from fstat[4c + ch]. */
KERNEL bn_nhwc_bwd_sum(const void *dy, const void *x, const float *gamma, const float *beta, const double *fstat,
		       const float *bmean, double *part, i32 n, i32 c, i32 hw, i32 fl) {
	SHARED(double, sh, [2 * MAXB]);
	const i32 groups = (c + BN_LANES - 1) / BN_LANES;
	for (i64 p = BLOCK_IDX; p < (i64)n * groups; p += GRID_DIM) {
		const i64 im = p / groups;
		const i32 ch0 = (i32)(p - im * groups) * BN_LANES;
		THREADS(t)
		const i32 ch = ch0 + t % BN_LANES, lanes = BLOCK_DIM / BN_LANES;
		double sdy = 0, sdyx = 0;
		if (ch < c) {
			const bn_grad q = bn_grad_of(ch, c, gamma, beta, fstat, bmean, fstat[4 * c + ch], 0, fl);
			for (i32 i = t / BN_LANES; i < hw; i += lanes) {
				const i64 at = (im * hw + i) * c + ch;
				bn_grad_sum(bn_ld(dy, at, fl, BN_Y16), x, at, fl, &q, &sdy, &sdyx);
			}
		}
		sh[t] = sdy;
		sh[MAXB + t] = sdyx;
		END_THREADS
		SYNC
		bn_nhwc_part(sh, part, im, ch0, n, c);
	}
}

/* bn_nhwc_bwd_apply: bn_bwd_apply over NHWC dy, x and dx. */
KERNEL bn_nhwc_bwd_apply(const void *dy, const void *x, const float *gamma, const float *beta, const double *fstat,
			 const float *bmean, const double *stat, void *dx, i32 n, i32 c, i32 hw, i32 fl) {
	const i64 total = (i64)n * hw * c;
	const i32 run = (i32)bn_nhwc_run(c) * c;
	for (i64 p = BLOCK_IDX; p < bn_nhwc_runs(n, c, hw); p += GRID_DIM) {
		THREADS(t)
		const i64 at = p * run;
		for (i32 e = t; e < run && at + e < total; e += BLOCK_DIM) {
			const i32 ch = e % c; /* a run is whole positions */
			const bn_grad q = bn_grad_of(ch, c, gamma, beta, fstat, bmean, fstat[4 * c + ch], stat, fl);
			bn_grad_dx(bn_ld(dy, at + e, fl, BN_Y16), x, dx, at + e, fl, &q);
		}
		END_THREADS
	}
}

/* ---- BatchNorm from channels-last values to float32 channels-first ----
 *
 * A BatchNorm after a channels-last convolution whose output goes to a
 * float32 op (an add, a pool): x (and dx) N×H×W×C as the convolution
 * wrote it (and reads it back), y (and dy) float32 N×C×H×W. The cast
 * between them is the layout's change inside the BatchNorm's own passes,
 * through SHARED tiles as cast_tiles_move moves them (x read along
 * channels, y written along positions, and dy read along positions for
 * the backward's passes along channels). The sums are bn_nhwc_sum's
 * (forward) or bn_tiles_bwd_sum's, a block per image and BN_LANES (=
 * TILE) channels over the image's tiles; the statistics bn_stats's and
 * bn_bwd_stats's (with BN_NHWC); each value's arithmetic the kernels'
 * above. Element-wise passes: PerRow over cast_tiles(n, c, hw) tiles. */

/* bn_tiles_load_dy: dy's tile of image b, channels c0.., positions p0..
 * (float32 NCHW) into tdy[channel][position], read along positions. */
DEVICE void bn_tiles_load_dy(const float *dy, float tdy[TILE][TILE + 1], i64 b, i64 c0, i64 p0, i32 c, i32 hw) {
	THREADS(t)
	for (int e = t; e < TILE * TILE; e += BLOCK_DIM) {
		const int r = e / TILE, q = e % TILE;
		if (c0 + r < c && p0 + q < hw)
			tdy[r][q] = dy[(b * c + c0 + r) * hw + p0 + q];
	}
	END_THREADS
	SYNC
}

/* bn_tiles_load_x: act(x)'s tile k (NHWC) into tile[position][channel],
 * read along channels. */
DEVICE void bn_tiles_load_x(const void *x, float tile[TILE][TILE + 1], i64 k, i32 c, i32 hw, i32 fl) {
	THREADS(t)
	i64 b, c0, p0;
	tile_at(k, c, hw, &b, &c0, &p0);
	for (int e = t; e < TILE * TILE; e += BLOCK_DIM) {
		const int r = e / TILE, q = e % TILE; /* position, channel */
		if (c0 + q < c && p0 + r < hw)
			tile[r][q] = bn_in(x, (b * hw + p0 + r) * c + c0 + q, fl);
	}
	END_THREADS
	SYNC
}

/* bn_tiles_out: BatchNorm's value v at i of float32 NCHW y, written as
 * bn_out writes it; with BN_ADD and BN_COPY16 the output also into *keep
 * (its place in the tile, for bn_tiles_copy16). */
DEVICE void bn_tiles_out(float *y, const float *s, i64 i, float v, float *keep, i32 fl) {
	if (!(fl & BN_ADD)) {
		y[i] = act_f(v, fl & BN_RELU_OUT);
		return;
	}
	const float r = relu_f(v + s[i]);
	y[i] = r;
	if (fl & BN_COPY16)
		*keep = r;
}

/* bn_tiles_copy16: with BN_ADD and BN_COPY16, tile k's outputs (kept in
 * tile[position][channel] by bn_tiles_out) rounded into channels-last y16
 * along channels (tile_put16). */
DEVICE void bn_tiles_copy16(float tile[TILE][TILE + 1], u16 *y16, i64 k, i32 c, i32 hw, i32 fl) {
	if ((fl & (BN_ADD | BN_COPY16)) != (BN_ADD | BN_COPY16))
		return;
	SYNC
	tile_put16(tile, 0, y16, k, c, hw, fl & BN_BF16);
}

/* bn_tiles_apply: bn_apply from NHWC x into float32 NCHW y (s NCHW, y16
 * NHWC). */
KERNEL bn_tiles_apply(const void *x, float *y, const float *gamma, const float *beta, const double *stat,
		      const float *s, u16 *y16, i32 n, i32 c, i32 hw, i32 fl) {
	SHARED(float, tile, [TILE][TILE + 1]);
	for (i64 k = BLOCK_IDX; k < cast_tiles(n, c, hw); k += GRID_DIM) {
		bn_tiles_load_x(x, tile, k, c, hw, fl);
		THREADS(t)
		i64 b, c0, p0;
		tile_at(k, c, hw, &b, &c0, &p0);
		for (int e = t; e < TILE * TILE; e += BLOCK_DIM) {
			const int r = e / TILE, q = e % TILE; /* channel, position */
			const i64 ch = c0 + r;
			if (ch < c && p0 + q < hw)
				bn_tiles_out(y, s, (b * c + ch) * hw + p0 + q,
					     bn_pre_v(tile[q][r], gamma[ch], stat[ch], stat[c + ch], beta[ch]), &tile[q][r], fl);
		}
		END_THREADS
		bn_tiles_copy16(tile, y16, k, c, hw, fl);
		SYNC
	}
}

/* bn_tiles_eval: bn_eval from NHWC x into float32 NCHW y (s NCHW, y16
 * NHWC), the tile's channels' 1/σ once a tile. */
KERNEL bn_tiles_eval(const void *x, float *y, const float *gamma, const float *beta, const float *rmean,
		     const float *rvar, const float *s, u16 *y16, i32 n, i32 c, i32 hw, float eps, i32 fl) {
	SHARED(float, tile, [TILE][TILE + 1]);
	SHARED(double, inv, [TILE]);
	for (i64 k = BLOCK_IDX; k < cast_tiles(n, c, hw); k += GRID_DIM) {
		bn_tiles_load_x(x, tile, k, c, hw, fl);
		THREADS(t)
		i64 b, c0, p0;
		tile_at(k, c, hw, &b, &c0, &p0);
		if (t < TILE && c0 + t < c)
			inv[t] = 1.0 / sqrt((double)rvar[c0 + t] + (double)eps);
		END_THREADS
		SYNC
		THREADS(t)
		i64 b, c0, p0;
		tile_at(k, c, hw, &b, &c0, &p0);
		for (int e = t; e < TILE * TILE; e += BLOCK_DIM) {
			const int r = e / TILE, q = e % TILE; /* channel, position */
			const i64 ch = c0 + r;
			if (ch < c && p0 + q < hw)
				bn_tiles_out(y, s, (b * c + ch) * hw + p0 + q,
					     bn_pre_v(tile[q][r], gamma[ch], rmean[ch], inv[r], beta[ch]), &tile[q][r], fl);
		}
		END_THREADS
		bn_tiles_copy16(tile, y16, k, c, hw, fl);
		SYNC
	}
}

/* bn_tiles_bwd_sum: bn_bwd_sum from float32 NCHW dy and NHWC x, a block
 * per image and TILE channels (PerRow, rows BNGroups), over the image's
 * position tiles; 1/σ from fstat[4c + ch]. */
KERNEL bn_tiles_bwd_sum(const float *dy, const void *x, const float *gamma, const float *beta, const double *fstat,
			const float *bmean, double *part, i32 n, i32 c, i32 hw, i32 fl) {
	SHARED(float, tdy, [TILE][TILE + 1]);
	SHARED(double, sh, [2 * MAXB]);
	const i32 groups = (c + TILE - 1) / TILE;
	for (i64 p = BLOCK_IDX; p < (i64)n * groups; p += GRID_DIM) {
		const i64 im = p / groups;
		const i32 ch0 = (i32)(p - im * groups) * TILE;
		THREADS(t)
		sh[t] = 0;
		sh[MAXB + t] = 0;
		END_THREADS
		SYNC
		for (i32 p0 = 0; p0 < hw; p0 += TILE) {
			bn_tiles_load_dy(dy, tdy, im, ch0, p0, c, hw);
			THREADS(t)
			const i32 j = t % TILE, ch = ch0 + j, lanes = BLOCK_DIM / TILE;
			if (ch < c) {
				const bn_grad q = bn_grad_of(ch, c, gamma, beta, fstat, bmean, fstat[4 * c + ch], 0, fl);
				double sdy = sh[t], sdyx = sh[MAXB + t];
				for (i32 r = t / TILE; r < TILE && p0 + r < hw; r += lanes)
					bn_grad_sum(tdy[j][r], x, (im * hw + p0 + r) * c + ch, fl, &q, &sdy, &sdyx);
				sh[t] = sdy;
				sh[MAXB + t] = sdyx;
			}
			END_THREADS
			SYNC
		}
		bn_nhwc_part(sh, part, im, ch0, n, c);
	}
}

/* bn_tiles_bwd_apply: bn_bwd_apply from float32 NCHW dy and NHWC x into
 * NHWC dx. */
KERNEL bn_tiles_bwd_apply(const float *dy, const void *x, const float *gamma, const float *beta, const double *fstat,
			  const float *bmean, const double *stat, void *dx, i32 n, i32 c, i32 hw, i32 fl) {
	SHARED(float, tdy, [TILE][TILE + 1]);
	for (i64 k = BLOCK_IDX; k < cast_tiles(n, c, hw); k += GRID_DIM) {
		i64 b, c0, p0;
		tile_at(k, c, hw, &b, &c0, &p0);
		bn_tiles_load_dy(dy, tdy, b, c0, p0, c, hw);
		THREADS(t)
		for (int e = t; e < TILE * TILE; e += BLOCK_DIM) {
			const int r = e / TILE, q = e % TILE; /* position, channel */
			const i64 ch = c0 + q;
			if (ch < c && p0 + r < hw) {
				const bn_grad g = bn_grad_of(ch, c, gamma, beta, fstat, bmean, fstat[4 * c + ch], stat, fl);
				bn_grad_dx(tdy[q][r], x, dx, (b * hw + p0 + r) * c + ch, fl, &g);
			}
		}
		END_THREADS
		SYNC
	}
}

/* ---- element-wise ---- */

/* relu_fwd: y = max(x, 0); a NaN stays NaN (Go's max, the reference). */
KERNEL relu_fwd(const float *x, float *y, i64 n) {
	FOR_EACH(i, n) y[i] = relu_f(x[i]);
}

/* relu_bwd: dx = dy where y > 0, else 0. y = relu_f(x), so y > 0 exactly
 * where x > 0: the reference's ReLU backward (mask x > 0) and its conv's
 * fused ReLU (mask y > 0) in one. */
KERNEL relu_bwd(const float *dy, const float *y, float *dx, i64 n) {
	FOR_EACH(i, n) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

/* add: y = a + b (y may be a or b). */
KERNEL add(const float *a, const float *b, float *y, i64 n) {
	FOR_EACH(i, n) y[i] = a[i] + b[i];
}

/* add_relu: y = relu_f(a + b), add then relu_fwd in one pass (a residual
 * block's end; y may be a or b). */
KERNEL add_relu(const float *a, const float *b, float *y, i64 n) {
	FOR_EACH(i, n) y[i] = relu_f(a[i] + b[i]);
}

/* add_relu_bwd: dx = a + b where y > 0, else 0: a residual block's
 * gradient add (its main path's and its shortcut's input gradients) and
 * relu_bwd of the block before it (y its output, this block's input) in
 * one pass, the same bits (dx may be a or b). */
KERNEL add_relu_bwd(const float *a, const float *b, const float *y, float *dx, i64 n) {
	FOR_EACH(i, n) dx[i] = y[i] > 0.0f ? a[i] + b[i] : 0.0f;
}

/* A residual block's end with 16-bit values for the convolutions beside
 * it: forward, its output also rounded into the next block's
 * convolutions' 16-bit operand (add_relu_low, add_relu_tiles); backward,
 * its gradient sum with a (SUM_A16) or b (SUM_B16) a convolution's input
 * gradient as cuDNN wrote it, widened as it is read (add_relu_bwd_low,
 * _tiles): add_relu_bwd's bits without the casts before it. 16-bit values
 * are bf16 with SUM_BF16, else fp16, channels-last with SUM_NHWC; y and
 * dx, and an operand without its flag, are float32 NCHW. */
#define SUM_A16 1
#define SUM_B16 2
#define SUM_BF16 4
#define SUM_NHWC 8

/* sum_ld: p[i] as float32, 16-bit when fl has the flag which. */
DEVICE float sum_ld(const void *p, i64 i, i32 fl, i32 which) { return ld_f32(p, i, fl & which, fl & SUM_BF16); }

/* add_relu_low: add_relu, its output also rounded into y16 (bf16 with
 * SUM_BF16, else fp16): the next block's convolutions' 16-bit operand,
 * the bits their cast would make (Elementwise). */
KERNEL add_relu_low(const float *a, const float *b, float *y, u16 *y16, i64 n, i32 fl) {
	FOR_EACH(i, n) {
		const float v = relu_f(a[i] + b[i]);
		y[i] = v;
		y16[i] = round_to16(v, fl & SUM_BF16);
	}
}

/* add_relu_tiles: add_relu_low with y16 channels-last: each tile's sums
 * written along positions into y and kept in SHARED memory, then rounded
 * into y16 along channels (PerRow over cast_tiles tiles). */
KERNEL add_relu_tiles(const float *a, const float *b, float *y, u16 *y16, i32 n, i32 c, i32 hw, i32 fl) {
	SHARED(float, tile, [TILE][TILE + 1]);
	for (i64 k = BLOCK_IDX; k < cast_tiles(n, c, hw); k += GRID_DIM) {
		THREADS(t)
		i64 bb, c0, p0;
		tile_at(k, c, hw, &bb, &c0, &p0);
		for (int e = t; e < TILE * TILE; e += BLOCK_DIM) {
			const int r = e / TILE, q = e % TILE; /* channel, position */
			if (c0 + r < c && p0 + q < hw) {
				const i64 i = (bb * c + c0 + r) * hw + p0 + q;
				const float v = relu_f(a[i] + b[i]);
				y[i] = v;
				tile[r][q] = v;
			}
		}
		END_THREADS
		SYNC
		tile_put16(tile, 1, y16, k, c, hw, fl & SUM_BF16);
		SYNC
	}
}

/* add_relu_bwd_low: add_relu_bwd with 16-bit NCHW operands (Elementwise). */
KERNEL add_relu_bwd_low(const void *a, const void *b, const float *y, float *dx, i64 n, i32 fl) {
	FOR_EACH(i, n) dx[i] = y[i] > 0.0f ? sum_ld(a, i, fl, SUM_A16) + sum_ld(b, i, fl, SUM_B16) : 0.0f;
}

/* add_relu_bwd_tiles: add_relu_bwd with 16-bit channels-last operands
 * (SUM_NHWC), their tiles read along channels into SHARED memory and the
 * sum written along positions (PerRow over cast_tiles tiles). */
KERNEL add_relu_bwd_tiles(const void *a, const void *b, const float *y, float *dx, i32 n, i32 c, i32 hw, i32 fl) {
	SHARED(float, ta, [TILE][TILE + 1]);
	SHARED(float, tb, [TILE][TILE + 1]);
	for (i64 k = BLOCK_IDX; k < cast_tiles(n, c, hw); k += GRID_DIM) {
		THREADS(t)
		i64 bb, c0, p0;
		tile_at(k, c, hw, &bb, &c0, &p0);
		for (int e = t; e < TILE * TILE; e += BLOCK_DIM) {
			const int r = e / TILE, q = e % TILE; /* position, channel */
			if (c0 + q < c && p0 + r < hw) {
				const i64 i = (bb * hw + p0 + r) * c + c0 + q;
				if (fl & SUM_A16)
					ta[r][q] = sum_ld(a, i, fl, SUM_A16);
				if (fl & SUM_B16)
					tb[r][q] = sum_ld(b, i, fl, SUM_B16);
			}
		}
		END_THREADS
		SYNC
		THREADS(t)
		i64 bb, c0, p0;
		tile_at(k, c, hw, &bb, &c0, &p0);
		for (int e = t; e < TILE * TILE; e += BLOCK_DIM) {
			const int r = e / TILE, q = e % TILE; /* channel, position */
			if (c0 + r < c && p0 + q < hw) {
				const i64 i = (bb * c + c0 + r) * hw + p0 + q;
				const float av = (fl & SUM_A16) ? ta[q][r] : ((const float *)a)[i];
				const float bv = (fl & SUM_B16) ? tb[q][r] : ((const float *)b)[i];
				dx[i] = y[i] > 0.0f ? av + bv : 0.0f;
			}
		}
		END_THREADS
		SYNC
	}
}

/* bias_act: in place, y += bias[(i/hw) % c] (when bias is not NULL), then
 * relu_f when relu != 0: the bias and fused ReLU after a convolution
 * (hw = H*W) or a matrix product (hw = 1, c = the outputs). One float32
 * addition after the product's rounding (the reference adds the bias in
 * its double accumulator). */
KERNEL bias_act(float *y, const float *bias, i64 n, i32 c, i32 hw, i32 relu) {
	FOR_EACH(i, n) {
		float v = y[i];
		if (bias)
			v = v + bias[(i / hw) % c];
		y[i] = relu ? relu_f(v) : v;
	}
}

/* bias_grad: db[ch] = the sum of dy over n and hw, in double (tree order),
 * as the reference's conv and linear backward. One block per channel. */
KERNEL bias_grad(const float *dy, float *db, i32 n, i32 c, i32 hw) {
	SHARED(double, sh, [MAXB]);
	const i64 cnt = (i64)n * hw;
	for (i64 ch = BLOCK_IDX; ch < c; ch += GRID_DIM) {
		THREADS(t)
		double s = 0;
		for (i64 i = t; i < cnt; i += BLOCK_DIM)
			s += dy[((i / hw) * c + ch) * hw + i % hw];
		sh[t] = s;
		END_THREADS
		SYNC
		reduce_sum_d(sh);
		THREADS(t)
		if (t == 0)
			db[ch] = (float)sh[0];
		END_THREADS
		SYNC
	}
}

/* ---- pooling (windows of kh x kw, stride sh x sw, padding ph x pw) ----
 * PerRow launches, a row per n·c plane (of the outputs forward, of the
 * inputs backward): a value's place found with 32-bit arithmetic within
 * its plane. */

/* maxpool_fwd: one thread per output (a block per output plane); y = the window's maximum over its
 * valid elements, arg = its index in the h*w plane. As the reference: the
 * first valid element in row-major order, then any strictly greater (so a
 * NaN wins only as the first; a tie keeps the first). A window without a
 * valid element gives -inf and arg -1. */
KERNEL maxpool_fwd(const float *x, float *y, i32 *arg, i32 n, i32 c, i32 h, i32 w, i32 oh, i32 ow,
		   i32 kh, i32 kw, i32 sh, i32 sw, i32 ph, i32 pw) {
	const i64 planes = (i64)n * c;
	const i32 ohw = oh * ow;
	for (i64 pl = BLOCK_IDX; pl < planes; pl += GRID_DIM) {
		THREADS(t)
		const float *src = x + pl * h * w;
		for (i32 q = t; q < ohw; q += BLOCK_DIM) {
			const i32 yo = q / ow, xo = q - yo * ow;
			const i32 y0 = yo * sh - ph, x0 = xo * sw - pw;
			float best = neg_inf();
			i32 a = -1;
			for (i32 ky = y0; ky < y0 + kh; ky++) {
				if (ky < 0 || ky >= h)
					continue;
				for (i32 kx = x0; kx < x0 + kw; kx++) {
					if (kx < 0 || kx >= w)
						continue;
					float v = src[ky * w + kx];
					if (a < 0 || v > best) {
						best = v;
						a = ky * w + kx;
					}
				}
			}
			y[pl * ohw + q] = best;
			arg[pl * ohw + q] = a;
		}
		END_THREADS
	}
}

/* pool_range: the outputs along one axis whose window covers input index
 * i: [*lo, *hi) within [0, on). */
DEVICE void pool_range(i32 i, i32 k, i32 s, i32 p, i32 on, i32 *lo, i32 *hi) {
	/* output o covers i when o*s - p <= i < o*s - p + k */
	i32 a = i + p - k + 1; /* o*s >= a */
	i32 l = a <= 0 ? 0 : (a + s - 1) / s;
	i32 h = (i + p) / s + 1; /* o*s <= i + p; i + p >= 0 */
	*lo = l;
	*hi = h < on ? h : on;
}

/* pool_covering: the outputs [ylo, yhi) x [xlo, xhi) whose windows cover
 * input p (row-major in a plane of width w). */
DEVICE void pool_covering(i32 p, i32 w, i32 kh, i32 kw, i32 sh, i32 sw, i32 ph, i32 pw, i32 oh, i32 ow,
			  i32 *ylo, i32 *yhi, i32 *xlo, i32 *xhi) {
	const i32 iy = p / w, ix = p - iy * w;
	pool_range(iy, kh, sh, ph, oh, ylo, yhi);
	pool_range(ix, kw, sw, pw, ow, xlo, xhi);
}

/* maxpool_bwd: one thread per input (a block per input plane), a gather (no atomics): dx = the sum of
 * dy over the outputs whose window covers the input and chose it (arg), in
 * the outputs' order, from 0 in float32: the reference's scatter order. */
KERNEL maxpool_bwd(const float *dy, const i32 *arg, float *dx, i32 n, i32 c, i32 h, i32 w, i32 oh, i32 ow,
		   i32 kh, i32 kw, i32 sh, i32 sw, i32 ph, i32 pw) {
	const i64 planes = (i64)n * c;
	const i32 hw = h * w;
	for (i64 pl = BLOCK_IDX; pl < planes; pl += GRID_DIM) {
		THREADS(t)
		const float *g = dy + pl * oh * ow;
		const i32 *a = arg + pl * oh * ow;
		for (i32 p = t; p < hw; p += BLOCK_DIM) {
			i32 ylo, yhi, xlo, xhi;
			pool_covering(p, w, kh, kw, sh, sw, ph, pw, oh, ow, &ylo, &yhi, &xlo, &xhi);
			float s = 0.0f;
			for (i32 yo = ylo; yo < yhi; yo++)
				for (i32 xo = xlo; xo < xhi; xo++)
					if (a[yo * ow + xo] == p)
						s += g[yo * ow + xo];
			dx[pl * hw + p] = s;
		}
		END_THREADS
	}
}

/* pool_div: the reference's divisor of output (yo, xo): kh*kw, or with
 * exclude_pad the window's valid elements (count_include_pad=False). */
DEVICE i32 pool_div(i32 yo, i32 xo, i32 h, i32 w, i32 kh, i32 kw, i32 sh, i32 sw, i32 ph, i32 pw, i32 exclude_pad) {
	if (!exclude_pad)
		return kh * kw;
	const i32 y0 = yo * sh - ph, x0 = xo * sw - pw;
	const i32 ylo = y0 > 0 ? y0 : 0, yhi = y0 + kh < h ? y0 + kh : h;
	const i32 xlo = x0 > 0 ? x0 : 0, xhi = x0 + kw < w ? x0 + kw : w;
	return (yhi > ylo ? yhi - ylo : 0) * (xhi > xlo ? xhi - xlo : 0);
}

/* avgpool_fwd: one thread per output: the window's valid elements summed
 * in double (row-major), divided by pool_div in double, as the reference. */
KERNEL avgpool_fwd(const float *x, float *y, i32 n, i32 c, i32 h, i32 w, i32 oh, i32 ow,
		   i32 kh, i32 kw, i32 sh, i32 sw, i32 ph, i32 pw, i32 exclude_pad) {
	const i64 planes = (i64)n * c;
	const i32 ohw = oh * ow;
	for (i64 pl = BLOCK_IDX; pl < planes; pl += GRID_DIM) {
		THREADS(t)
		const float *src = x + pl * h * w;
		for (i32 q = t; q < ohw; q += BLOCK_DIM) {
			const i32 yo = q / ow, xo = q - yo * ow;
			const i32 y0 = yo * sh - ph, x0 = xo * sw - pw;
			double s = 0;
			for (i32 ky = y0; ky < y0 + kh; ky++) {
				if (ky < 0 || ky >= h)
					continue;
				for (i32 kx = x0; kx < x0 + kw; kx++)
					if (kx >= 0 && kx < w)
						s += src[ky * w + kx];
			}
			y[pl * ohw + q] = (float)(s / (double)pool_div(yo, xo, h, w, kh, kw, sh, sw, ph, pw, exclude_pad));
		}
		END_THREADS
	}
}

/* avgpool_bwd: one thread per input, a gather: dx = the sum over the
 * outputs whose window covers the input of dy/div in float32, in the
 * outputs' order from 0, as the reference's scatter. */
KERNEL avgpool_bwd(const float *dy, float *dx, i32 n, i32 c, i32 h, i32 w, i32 oh, i32 ow,
		   i32 kh, i32 kw, i32 sh, i32 sw, i32 ph, i32 pw, i32 exclude_pad) {
	const i64 planes = (i64)n * c;
	const i32 hw = h * w;
	for (i64 pl = BLOCK_IDX; pl < planes; pl += GRID_DIM) {
		THREADS(t)
		const float *g = dy + pl * oh * ow;
		for (i32 p = t; p < hw; p += BLOCK_DIM) {
			i32 ylo, yhi, xlo, xhi;
			pool_covering(p, w, kh, kw, sh, sw, ph, pw, oh, ow, &ylo, &yhi, &xlo, &xhi);
			float s = 0.0f;
			for (i32 yo = ylo; yo < yhi; yo++)
				for (i32 xo = xlo; xo < xhi; xo++)
					s += g[yo * ow + xo] / (float)pool_div(yo, xo, h, w, kh, kw, sh, sw, ph, pw, exclude_pad);
			dx[pl * hw + p] = s;
		}
		END_THREADS
	}
}

/* ---- weights ---- */

/* ema_update: first: avg = v; else avg = d*avg + r*v in float32 as
 * train.EMA's update, d = decay and r = 1 - decay. train.EMA rounds its
 * float64 decay to d and 1-decay to r; from the float32 decay here r is
 * (float)(1 - (double)decay), which is train.EMA's r whenever the decay
 * is a float32 (0.5, 0.75, ...), within an ulp of it otherwise. */
KERNEL ema_update(float *avg, const float *v, i64 n, float decay, i32 first) {
	const float r = (float)(1.0 - (double)decay);
	FOR_EACH(i, n) avg[i] = first ? v[i] : decay * avg[i] + r * v[i];
}

/* swap_f32: exchanges a and b (train.EMA's Swap). */
KERNEL swap_f32(float *a, float *b, i64 n) {
	FOR_EACH(i, n) {
		float t = a[i];
		a[i] = b[i];
		b[i] = t;
	}
}

KERNEL copy_f32(const float *src, float *dst, i64 n) {
	FOR_EACH(i, n) dst[i] = src[i];
}

KERNEL fill_f32(float *v, i64 n, float value) {
	FOR_EACH(i, n) v[i] = value;
}

/* sgd_lr: sgd with the learning rate read from device memory (*lr), so
 * that a training step captured as a CUDA graph replays with each step's
 * rate: the graph's arguments stay the same while the rate changes. */
KERNEL sgd_lr(float *w, const float *g, float *v, i64 n, const float *lr, float momentum, float wd,
	      i32 nesterov, i32 first) {
	const float rate = *lr;
	FOR_EACH(i, n) {
		float d = g[i];
		if (wd != 0.0f)
			d = fmaf(wd, w[i], d);
		if (momentum != 0.0f) {
			float b = first ? d : momentum * v[i] + d;
			v[i] = b;
			d = nesterov ? fmaf(momentum, b, d) : b;
		}
		w[i] = fmaf(-rate, d, w[i]);
	}
}

/* sgd_found: sgd_lr, skipped when *found_inf is not 0: the GradScaler's
 * skipped step decided on the device, as torch's fused optimiser steps
 * take found_inf as a tensor (_fused_sgd_'s found_inf argument) so that
 * no flag is read back inside the step. amp_unscale wrote the flag
 * earlier on the same stream. Whether the momentum exists is read from
 * the device too (*have not 0; amp_update_scale sets it after the first
 * step taken), since a skipped first step makes none. */
KERNEL sgd_found(float *w, const float *g, float *v, i64 n, const float *lr, float momentum, float wd,
		 i32 nesterov, const float *have, const float *found_inf) {
	if (*found_inf != 0.0f)
		return;
	const i32 first = *have == 0.0f;
	const float rate = *lr;
	FOR_EACH(i, n) {
		float d = g[i];
		if (wd != 0.0f)
			d = fmaf(wd, w[i], d);
		if (momentum != 0.0f) {
			float b = first ? d : momentum * v[i] + d;
			v[i] = b;
			d = nesterov ? fmaf(momentum, b, d) : b;
		}
		w[i] = fmaf(-rate, d, w[i]);
	}
}

/* amp_update_scale: torch's _amp_update_scale_ on train.GradScaler's state
 * kept on the device, sc = {scale, growth count, skipped count, growth
 * factor, backoff factor, growth interval} in doubles (GradScaler.Update's
 * float64 arithmetic, so the same scales): a step whose gradients were not
 * finite (*found_inf, amp_unscale's) cuts the scale by the backoff factor,
 * zeroes the count and counts the skip; GrowthInterval finite steps in a
 * row multiply it by the growth factor. It writes the next step's unscale
 * factor, (float)(1/scale) as the host's float32(1/Scale), into *inv, and
 * after a finite step sets *have (the momentum exists; null without
 * momentum). One thread: nothing of the step is read back to the host. */
KERNEL amp_update_scale(double *sc, const float *found_inf, float *inv, float *have) {
	if (BLOCK_IDX != 0)
		return;
	THREADS(t)
	if (t == 0) {
		if (*found_inf != 0.0f) {
			sc[0] *= sc[4];
			sc[1] = 0;
			sc[2] += 1;
		} else {
			sc[1] += 1;
			if (sc[1] == sc[5]) {
				sc[0] *= sc[3];
				sc[1] = 0;
			}
			if (have)
				*have = 1.0f;
		}
		*inv = (float)(1.0 / sc[0]);
	}
	END_THREADS
}
