// Kernel bodies of resize.c, compiled once per instruction set: resize.c
// includes this file with SFX (the name suffix) defined, inside a
// "#pragma GCC target" region. Nothing else includes it.

// hrow3 resamples one 3-channel source row s (lim readable bytes) into dst
// (uint16 when WIDE, else uint8), n outputs of hk taps. For each output and
// each group of 4 taps it loads the group's 12 source bytes at once,
// spreads them into 16-bit pairs (tap pair x channel) and multiplies them
// with the matching pairs of weights with pmaddwd, so that each int32 lane
// sums one channel. SPLIT weights are sums lo + hi<<15 of two int16 parts
// (see prepWeights): the two products are summed apart and joined at the
// end, which gives the same sum modulo 2^32.
static inline __attribute__((always_inline)) void CAT(hrow3_, SFX)(void *dst, const uint8_t *s, long lim,
		int n, int hk, const int32_t *start, const int32_t *count, const int32_t *w, const int16_t *wq,
		int shift, int maxv, const int tail, const int SPLIT, const int WIDE, const int GC) {
	const int G = GC ? GC : (hk + 3) / 4;
	const int per = SPLIT ? 32 : 16;
	const long need = (long)(G - 1) * 12 + 16;
	const __m128i mA = _mm_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1);
	const __m128i mB = _mm_setr_epi8(6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1);
	const __m128i rnd = _mm_set1_epi32(1 << (shift - 1));
	const __m128i sh = _mm_cvtsi32_si128(shift);
	const __m128i vmax = _mm_set1_epi16((short)maxv);
	const __m128i zero = _mm_setzero_si128();
	for (int x = 0; x < n; x++) {
		long o = (long)start[x] * 3;
		if (tail && o + need > lim)
			continue; // done by the loop below
		const uint8_t *p = s + o;
		const int16_t *q = wq + (long)x * G * per;
		__m128i acc = rnd, acch = zero;
		for (int g = 0; g < G; g++, p += 12, q += per) {
			__m128i v = _mm_loadu_si128((const __m128i *)p);
			__m128i a = _mm_shuffle_epi8(v, mA), b = _mm_shuffle_epi8(v, mB);
			acc = _mm_add_epi32(acc, _mm_madd_epi16(a, _mm_loadu_si128((const __m128i *)q)));
			acc = _mm_add_epi32(acc, _mm_madd_epi16(b, _mm_loadu_si128((const __m128i *)(q + 8))));
			if (SPLIT) {
				acch = _mm_add_epi32(acch, _mm_madd_epi16(a, _mm_loadu_si128((const __m128i *)(q + 16))));
				acch = _mm_add_epi32(acch, _mm_madd_epi16(b, _mm_loadu_si128((const __m128i *)(q + 24))));
			}
		}
		if (SPLIT)
			acc = _mm_add_epi32(acc, _mm_slli_epi32(acch, 15));
		acc = _mm_sra_epi32(acc, sh);
		__m128i p16 = _mm_packs_epi32(acc, acc); // saturates; the clamp below is exact
		if (WIDE) {
			p16 = _mm_min_epi16(_mm_max_epi16(p16, zero), vmax);
			// Writes 4 samples: the 4th is the next output's, written after.
			_mm_storel_epi64((__m128i *)((uint16_t *)dst + (long)x * 3), p16);
		} else {
			int32_t b4 = _mm_cvtsi128_si32(_mm_packus_epi16(p16, p16));
			memcpy((uint8_t *)dst + (long)x * 3, &b4, 4);
		}
	}
	// The outputs whose loads would pass the end of the source, in a loop of
	// their own so that the one above calls nothing (and keeps its vector
	// constants in registers). It overwrites what the SIMD stores of
	// their left neighbours spilled on them. Only rows near the end of the
	// source have such outputs (tail): the others skip both checks.
	if (!tail)
		return;
	for (int x = 0; x < n; x++)
		if ((long)start[x] * 3 + need > lim)
			hscalar(dst, WIDE, s, x, 3, hk, start, count, w, shift, maxv);
}

// hrow1 is hrow3 for one channel: 8 taps per group, summed across lanes.
static inline __attribute__((always_inline)) void CAT(hrow1_, SFX)(void *dst, const uint8_t *s, long lim,
		int n, int hk, const int32_t *start, const int32_t *count, const int32_t *w, const int16_t *wq,
		int shift, int maxv, const int tail, const int SPLIT, const int WIDE, const int GC) {
	const int G = GC ? GC : (hk + 7) / 8;
	const int per = SPLIT ? 16 : 8;
	const long need = (long)G * 8;
	const __m128i zero = _mm_setzero_si128();
	const uint32_t round = 1u << (shift - 1);
	for (int x = 0; x < n; x++) {
		long o = start[x];
		if (tail && o + need > lim)
			continue; // done by the loop below
		const uint8_t *p = s + o;
		const int16_t *q = wq + (long)x * G * per;
		__m128i acc = zero, acch = zero;
		for (int g = 0; g < G; g++, p += 8, q += per) {
			__m128i v = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)p), zero);
			acc = _mm_add_epi32(acc, _mm_madd_epi16(v, _mm_loadu_si128((const __m128i *)q)));
			if (SPLIT)
				acch = _mm_add_epi32(acch, _mm_madd_epi16(v, _mm_loadu_si128((const __m128i *)(q + 8))));
		}
		if (SPLIT)
			acc = _mm_add_epi32(acc, _mm_slli_epi32(acch, 15));
		acc = _mm_add_epi32(acc, _mm_shuffle_epi32(acc, 0x4e));
		acc = _mm_add_epi32(acc, _mm_shuffle_epi32(acc, 0xb1));
		int32_t v = (int32_t)((uint32_t)_mm_cvtsi128_si32(acc) + round) >> shift;
		v = v < 0 ? 0 : v > maxv ? maxv : v;
		if (WIDE)
			((uint16_t *)dst)[x] = (uint16_t)v;
		else
			((uint8_t *)dst)[x] = (uint8_t)v;
	}
	if (!tail)
		return;
	for (int x = 0; x < n; x++)
		if ((long)start[x] + need > lim)
			hscalar(dst, WIDE, s, x, 1, hk, start, count, w, shift, maxv);
}

// hrow1q is hrow1 for tables of at most 4 taps without split weights (the
// area filter's below a factor of 3, on a plane): four outputs per step,
// their 4 source bytes gathered into one vector, multiplied with their
// weights by pmaddwd and the pair sums joined by phaddd. Every source
// load is 4 bytes at start[x], inside the row where the caller checked
// that hrow1's 8-byte loads are.
static inline __attribute__((always_inline)) void CAT(hrow1q_, SFX)(void *dst, const uint8_t *s, int n, int hk,
		const int32_t *start, const int32_t *count, const int32_t *w, const int16_t *wq, int shift, int maxv,
		const int WIDE) {
	const __m128i zero = _mm_setzero_si128();
	const __m128i rnd = _mm_set1_epi32(1 << (shift - 1));
	const __m128i sh = _mm_cvtsi32_si128(shift);
	const __m128i vmax = _mm_set1_epi16((short)maxv);
	int x = 0;
	for (; x + 4 <= n; x += 4) {
		int32_t a0, a1, a2, a3;
		memcpy(&a0, s + start[x], 4);
		memcpy(&a1, s + start[x + 1], 4);
		memcpy(&a2, s + start[x + 2], 4);
		memcpy(&a3, s + start[x + 3], 4);
		__m128i v = _mm_setr_epi32(a0, a1, a2, a3);
		const int16_t *q = wq + (long)x * 8;
		__m128i w01 = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)q), _mm_loadl_epi64((const __m128i *)(q + 8)));
		__m128i w23 = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(q + 16)), _mm_loadl_epi64((const __m128i *)(q + 24)));
		__m128i acc = _mm_hadd_epi32(_mm_madd_epi16(_mm_unpacklo_epi8(v, zero), w01),
			_mm_madd_epi16(_mm_unpackhi_epi8(v, zero), w23));
		acc = _mm_sra_epi32(_mm_add_epi32(acc, rnd), sh);
		__m128i p16 = _mm_packs_epi32(acc, acc); // saturates; the clamp below is exact
		if (WIDE) {
			p16 = _mm_min_epi16(_mm_max_epi16(p16, zero), vmax);
			_mm_storel_epi64((__m128i *)((uint16_t *)dst + x), p16);
		} else {
			int32_t b4 = _mm_cvtsi128_si32(_mm_packus_epi16(p16, p16));
			memcpy((uint8_t *)dst + x, &b4, 4);
		}
	}
	for (; x < n; x++)
		hscalar(dst, WIDE, s, x, 1, hk, start, count, w, shift, maxv);
}

// hrows runs one row kernel over source rows [ylo, yhi) into tmp; GC is
// the number of tap groups when known at compile time (0: from hk).
static inline __attribute__((always_inline)) void CAT(hrows_, SFX)(const job *j, const int CH,
		const int SPLIT, const int WIDE, const int GC) {
	int rowLen = j->hn * j->ch;
	// reach: the bytes past a row's start that the SIMD loads of its
	// furthest-reaching output touch; a row with that many readable bytes
	// needs no per-output bound check.
	const long G = GC ? GC : CH == 3 ? (j->hk + 3) / 4 : (j->hk + 7) / 8;
	const long need = CH == 3 ? (G - 1) * 12 + 16 : G * 8;
	long reach = 0;
	for (int x = 0; x < j->hn; x++) {
		long r = (long)j->hstart[x] * CH + need;
		reach = r > reach ? r : reach;
	}
	for (int y = j->ylo; y < j->yhi; y++) {
		const uint8_t *s = j->src + (long)y * j->srcStride;
		long lim = j->srcLen - (long)y * j->srcStride;
		int tail = reach > lim;
		void *d = WIDE ? (void *)((uint16_t *)j->tmp + (long)(y - j->ylo) * rowLen)
		               : (void *)((uint8_t *)j->tmp + (long)(y - j->ylo) * rowLen);
		// Two inlined copies of the row kernel: tail a constant in each.
#define ROW(K, T) CAT(K, SFX)(d, s, lim, j->hn, j->hk, j->hstart, j->hcount, j->hw, j->wq, j->hshift, j->hmax, \
		T, SPLIT, WIDE, GC)
		if (CH == 3) {
			if (tail)
				ROW(hrow3_, 1);
			else
				ROW(hrow3_, 0);
		} else {
			if (tail)
				ROW(hrow1_, 1);
			else if (!SPLIT && GC == 1 && j->hk <= 4)
				CAT(hrow1q_, SFX)(d, s, j->hn, j->hk, j->hstart, j->hcount, j->hw, j->wq, j->hshift, j->hmax, WIDE);
			else
				ROW(hrow1_, 0);
		}
#undef ROW
	}
}

// One compiled copy per (channels, split, wide, groups): constants fold.
#define HROWS(CH, SP, WD, GC)                                                                     \
	static __attribute__((noinline)) void CAT(hrows_##CH##_##SP##WD##GC##_, SFX)(const job *j) { \
		CAT(hrows_, SFX)(j, CH, SP, WD, GC);                                                     \
	}
#define HROWS_G(CH, SP, WD) HROWS(CH, SP, WD, 1) HROWS(CH, SP, WD, 2) HROWS(CH, SP, WD, 0)
HROWS_G(3, 0, 0)
HROWS_G(3, 0, 1)
HROWS_G(3, 1, 0)
HROWS_G(3, 1, 1)
HROWS_G(1, 0, 0)
HROWS_G(1, 0, 1)
HROWS_G(1, 1, 0)
HROWS_G(1, 1, 1)
#undef HROWS_G
#undef HROWS

// hpass runs the horizontal pass over source rows [ylo, yhi) into tmp.
static void CAT(hpass_, SFX)(const job *j) {
	int g = j->ch == 3 ? (j->hk + 3) / 4 : (j->hk + 7) / 8;
#define PICK(CH, SP, WD)                          \
	(g == 1   ? CAT(hrows_##CH##_##SP##WD##1_, SFX) \
	 : g == 2 ? CAT(hrows_##CH##_##SP##WD##2_, SFX) \
	          : CAT(hrows_##CH##_##SP##WD##0_, SFX))
	void (*f)(const job *);
	if (j->ch == 3)
		f = j->split ? (j->wide ? PICK(3, 1, 1) : PICK(3, 1, 0)) : (j->wide ? PICK(3, 0, 1) : PICK(3, 0, 0));
	else
		f = j->split ? (j->wide ? PICK(1, 1, 1) : PICK(1, 1, 0)) : (j->wide ? PICK(1, 0, 1) : PICK(1, 0, 0));
#undef PICK
	f(j);
}

// vrows accumulates the taps of one block of one output row: taps outer,
// samples inner, two taps per sweep, so that the compiler vectorises the
// inner loops. Unsigned arithmetic wraps like Go's int32.
#define VROWS(T)                                                                          \
	{                                                                                     \
		const T *t = (const T *)j->tmp + (long)first * rowLen + i0;                       \
		int k = 0;                                                                        \
		if (n >= 2) {                                                                     \
			uint32_t w0 = (uint32_t)w[0], w1 = (uint32_t)w[1];                            \
			const T *t1 = t + rowLen;                                                     \
			for (int i = 0; i < m; i++) acc[i] = round + t[i] * w0 + t1[i] * w1;          \
			k = 2;                                                                        \
		} else {                                                                          \
			for (int i = 0; i < m; i++) acc[i] = round;                                   \
		}                                                                                 \
		for (; k + 1 < n; k += 2) {                                                       \
			uint32_t w0 = (uint32_t)w[k], w1 = (uint32_t)w[k + 1];                        \
			const T *t0 = t + (long)k * rowLen, *t1 = t0 + rowLen;                        \
			for (int i = 0; i < m; i++) acc[i] += t0[i] * w0 + t1[i] * w1;                \
		}                                                                                 \
		if (k < n) {                                                                      \
			uint32_t w0 = (uint32_t)w[k];                                                 \
			const T *t0 = t + (long)k * rowLen;                                           \
			for (int i = 0; i < m; i++) acc[i] += t0[i] * w0;                             \
		}                                                                                 \
	}

// vpassw is the vertical pass for a 16-bit intermediate whose weights all
// fit int16 (the area filter's: samples at most 255<<7, weights at most
// 1<<14; see vfits16): pairs of taps are interleaved and multiplied with
// pmaddwd, 16 samples per step with the accumulators in registers, over
// all of a row's taps before the next samples. Every pair product and sum
// is exact in int32 and the products are those of VROWS, so the bytes are
// the same; packs then packus saturate as the clamp does.
static void CAT(vpassw_, SFX)(const job *j) {
	int rowLen = j->hn * j->ch;
	const __m128i rnd = _mm_set1_epi32(1 << (j->vshift - 1));
	const __m128i sh = _mm_cvtsi32_si128(j->vshift);
	const __m128i zero = _mm_setzero_si128();
	uint32_t round = 1u << (j->vshift - 1);
	int shift = j->vshift;
	for (int y = 0; y < j->dstH; y++) {
		int first = j->vstart[y] - j->ylo, n = j->vcount[y];
		const int32_t *w = j->vw + (long)y * j->vk;
		const uint16_t *t = (const uint16_t *)j->tmp + (long)first * rowLen;
		uint8_t *d = j->dst + (long)y * j->dstStride;
		int i = 0;
		for (; i + 16 <= rowLen; i += 16) {
			__m128i a0 = rnd, a1 = rnd, a2 = rnd, a3 = rnd;
			for (int k = 0; k < n; k += 2) {
				const uint16_t *t0 = t + (long)k * rowLen + i;
				__m128i x0 = _mm_loadu_si128((const __m128i *)t0);
				__m128i x1 = _mm_loadu_si128((const __m128i *)(t0 + 8));
				__m128i y0 = zero, y1 = zero, wp;
				if (k + 1 < n) {
					y0 = _mm_loadu_si128((const __m128i *)(t0 + rowLen));
					y1 = _mm_loadu_si128((const __m128i *)(t0 + rowLen + 8));
					wp = _mm_set1_epi32((int)(((uint32_t)w[k + 1] << 16) | ((uint32_t)w[k] & 0xffff)));
				} else {
					wp = _mm_set1_epi32((int)((uint32_t)w[k] & 0xffff));
				}
				a0 = _mm_add_epi32(a0, _mm_madd_epi16(_mm_unpacklo_epi16(x0, y0), wp));
				a1 = _mm_add_epi32(a1, _mm_madd_epi16(_mm_unpackhi_epi16(x0, y0), wp));
				a2 = _mm_add_epi32(a2, _mm_madd_epi16(_mm_unpacklo_epi16(x1, y1), wp));
				a3 = _mm_add_epi32(a3, _mm_madd_epi16(_mm_unpackhi_epi16(x1, y1), wp));
			}
			a0 = _mm_sra_epi32(a0, sh);
			a1 = _mm_sra_epi32(a1, sh);
			a2 = _mm_sra_epi32(a2, sh);
			a3 = _mm_sra_epi32(a3, sh);
			__m128i p = _mm_packus_epi16(_mm_packs_epi32(a0, a1), _mm_packs_epi32(a2, a3));
			_mm_storeu_si128((__m128i *)(d + i), p);
		}
		for (; i < rowLen; i++) {
			uint32_t a = round;
			for (int k = 0; k < n; k++)
				a += (uint32_t)t[(long)k * rowLen + i] * (uint32_t)w[k];
			int32_t v = (int32_t)a >> shift;
			d[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
		}
	}
}

// vpass runs the vertical pass: every output row from the rows of tmp.
static void CAT(vpass_, SFX)(const job *j) {
	int rowLen = j->hn * j->ch;
	uint32_t acc[VBLK];
	uint32_t round = 1u << (j->vshift - 1);
	int shift = j->vshift;
	for (int y = 0; y < j->dstH; y++) {
		int first = j->vstart[y] - j->ylo, n = j->vcount[y];
		const int32_t *w = j->vw + (long)y * j->vk;
		uint8_t *d = j->dst + (long)y * j->dstStride;
		for (int i0 = 0; i0 < rowLen; i0 += VBLK) {
			int m = rowLen - i0 < VBLK ? rowLen - i0 : VBLK;
			if (j->wide)
				VROWS(uint16_t)
			else
				VROWS(uint8_t)
			for (int i = 0; i < m; i++) {
				int32_t v = (int32_t)acc[i] >> shift;
				d[i0 + i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
			}
		}
	}
}
