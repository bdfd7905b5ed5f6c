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
		int shift, int maxv, const int SPLIT, const int WIDE, const int GC) {
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
		if (o + need > lim)
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
	// their left neighbours spilled on them.
	for (int x = 0; x < n; x++)
		if ((long)start[x] * 3 + need > lim)
			hscalar(dst, WIDE, s, x, 3, hk, start, count, w, shift, maxv);
}

// hrow1 is hrow3 for one channel: 8 taps per group, summed across lanes.
static inline __attribute__((always_inline)) void CAT(hrow1_, SFX)(void *dst, const uint8_t *s, long lim,
		int n, int hk, const int32_t *start, const int32_t *count, const int32_t *w, const int16_t *wq,
		int shift, int maxv, const int SPLIT, const int WIDE, const int GC) {
	const int G = GC ? GC : (hk + 7) / 8;
	const int per = SPLIT ? 16 : 8;
	const long need = (long)G * 8;
	const __m128i zero = _mm_setzero_si128();
	const uint32_t round = 1u << (shift - 1);
	for (int x = 0; x < n; x++) {
		long o = start[x];
		if (o + need > lim)
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
	for (int x = 0; x < n; x++)
		if ((long)start[x] + need > lim)
			hscalar(dst, WIDE, s, x, 1, hk, start, count, w, shift, maxv);
}

// hrows runs one row kernel over source rows [ylo, yhi) into tmp; GC is
// the number of tap groups when known at compile time (0: from hk).
static inline __attribute__((always_inline)) void CAT(hrows_, SFX)(const job *j, const int CH,
		const int SPLIT, const int WIDE, const int GC) {
	int rowLen = j->hn * j->ch;
	for (int y = j->ylo; y < j->yhi; y++) {
		const uint8_t *s = j->src + (long)y * j->srcStride;
		long lim = j->srcLen - (long)y * j->srcStride;
		void *d = WIDE ? (void *)((uint16_t *)j->tmp + (long)(y - j->ylo) * rowLen)
		               : (void *)((uint8_t *)j->tmp + (long)(y - j->ylo) * rowLen);
		if (CH == 3)
			CAT(hrow3_, SFX)(d, s, lim, j->hn, j->hk, j->hstart, j->hcount, j->hw, j->wq, j->hshift, j->hmax,
				SPLIT, WIDE, GC);
		else
			CAT(hrow1_, SFX)(d, s, lim, j->hn, j->hk, j->hstart, j->hcount, j->hw, j->wq, j->hshift, j->hmax,
				SPLIT, WIDE, GC);
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
