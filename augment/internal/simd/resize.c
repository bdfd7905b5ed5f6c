//go:build cgo

// The SIMD resize kernels. Same integer arithmetic as augment's Go kernels
// (sum of weight*sample plus round, arithmetic shift, clamp), so the same
// bytes; see doc.go.

#include <stdint.h>
#include <string.h>

#include "resize.h"

#define VBLK 2048 // samples per block of the vertical pass (8 KiB of int32 on the stack)
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

// hscalar computes output x of a row with the plain loop: the outputs whose
// SIMD loads would read past the end of the source.
static void hscalar(void *dst, int wide, const uint8_t *s, int x, int ch, int hk, const int32_t *start,
		const int32_t *count, const int32_t *w, int shift, int maxv) {
	const uint8_t *p = s + (long)start[x] * ch;
	const int32_t *ww = w + (long)x * hk;
	int cnt = count[x];
	for (int c = 0; c < ch; c++) {
		uint32_t a = 1u << (shift - 1);
		for (int k = 0; k < cnt; k++)
			a += (uint32_t)p[k * ch + c] * (uint32_t)ww[k];
		int32_t v = (int32_t)a >> shift;
		v = v < 0 ? 0 : v > maxv ? maxv : v;
		if (wide)
			((uint16_t *)dst)[(long)x * ch + c] = (uint16_t)v;
		else
			((uint8_t *)dst)[(long)x * ch + c] = (uint8_t)v;
	}
}

// wqLen is the number of int16 weights prepWeights writes.
static long wqLen(int n, int hk, int ch, int split) {
	long g = ch == 3 ? (hk + 3) / 4 : (hk + 7) / 8;
	return (long)n * g * (split ? 32 : 16) / (ch == 3 ? 1 : 2);
}

// prepWeights rearranges the horizontal weights for hrow3/hrow1. Per output
// and group of taps, 3 channels: [w0 w1 w0 w1 w0 w1 0 0] [w2 w3 w2 w3 w2 w3
// 0 0]; 1 channel: [w0 .. w7]; taps past hk are 0. When some weight does not
// fit int16 (split), each weight w is stored as lo = w & 0x7fff and
// hi = w >> 15, lo vectors then hi vectors: w = lo + hi<<15 exactly.
// It returns 0 when a weight does not fit even so.
static int prepWeights(job *j) {
	int split = 0;
	long nw = (long)j->hn * j->hk;
	for (long i = 0; i < nw; i++) {
		int32_t w = j->hw[i];
		if (w < -32768 || w > 32767)
			split = 1;
		if (w < -(1 << 30) || w >= (1 << 30))
			return 0;
	}
	if (wqLen(j->hn, j->hk, j->ch, split) > j->wqLen)
		return 0;
	j->split = split;
	int hk = j->hk;
	int16_t *q = j->wq;
	for (int x = 0; x < j->hn; x++) {
		const int32_t *w = j->hw + (long)x * hk;
		int gsz = j->ch == 3 ? 4 : 8;
		for (int g = 0; g < (hk + gsz - 1) / gsz; g++) {
			for (int part = 0; part <= split; part++) {
				int16_t v[8];
				for (int half = 0; half < (j->ch == 3 ? 2 : 1); half++) {
					for (int t = 0; t < 8; t++) {
						int k;
						if (j->ch == 3)
							k = t < 6 ? g * 4 + half * 2 + (t & 1) : -1;
						else
							k = g * 8 + t;
						int32_t wk = k >= 0 && k < hk ? w[k] : 0;
						if (split)
							wk = part == 0 ? (wk & 0x7fff) : (wk >> 15);
						v[t] = (int16_t)wk;
					}
					memcpy(q, v, sizeof v);
					q += 8;
				}
			}
		}
	}
	return 1;
}

// vfits16 reports whether the vertical pass may use vpassw: a 16-bit
// intermediate (whose samples the horizontal pass clamps to hmax <= 32767)
// and vertical weights that all fit int16.
static int vfits16(const job *j) {
	if (!j->wide || j->hmax > 32767)
		return 0;
	long nw = (long)j->dstH * j->vk;
	for (long i = 0; i < nw; i++)
		if (j->vw[i] < -32768 || j->vw[i] > 32767)
			return 0;
	return 1;
}

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>

#if defined(__clang__) /* clang ignores GCC's target pragma */
#pragma clang attribute push(__attribute__((target("ssse3"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("ssse3")
#endif
#define SFX ssse3
#include "kern.h"
#undef SFX
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#if defined(__clang__) /* clang ignores GCC's target pragma */
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2")
#endif
#define SFX avx2
#include "kern.h"
#undef SFX
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

static int levelCap = 2;

void faster_set_level_cap(int cap) { __atomic_store_n(&levelCap, cap, __ATOMIC_RELAXED); }

// cpuLevel is 0 without SSSE3, 1 with SSSE3, 2 with AVX2 usable (CPU and OS),
// at most levelCap (tests lower it to run the SSSE3 kernels).
static int cpuLevel(void) {
	static int level = -1;
	int cap = __atomic_load_n(&levelCap, __ATOMIC_RELAXED);
	int known = __atomic_load_n(&level, __ATOMIC_RELAXED);
	if (known >= 0)
		return known < cap ? known : cap;
	unsigned a, b, c, d;
	int l = 0;
	if (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSSE3)) {
		l = 1;
		if ((c & bit_OSXSAVE) && (c & bit_AVX)) {
			unsigned lo, hi;
			__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
			if ((lo & 6) == 6 && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_AVX2))
				l = 2;
		}
	}
	__atomic_store_n(&level, l, __ATOMIC_RELAXED);
	return l < cap ? l : cap;
}

int faster_cpu_level(void) { return cpuLevel(); }

int faster_resize(job *j) {
	int level = cpuLevel();
	if (level == 0 || (j->ch != 1 && j->ch != 3) || j->hshift < 1 || j->hshift > 31 || j->vshift < 1 ||
			j->vshift > 31 || j->hmax < 0 || (j->wide ? j->hmax > 32767 : j->hmax != 255))
		return 0;
	if (!prepWeights(j))
		return 0;
	if (level == 2) {
		hpass_avx2(j);
		if (vfits16(j))
			vpassw_avx2(j);
		else
			vpass_avx2(j);
	} else {
		hpass_ssse3(j);
		if (vfits16(j))
			vpassw_ssse3(j);
		else
			vpass_ssse3(j);
	}
	return 1;
}

#else

void faster_set_level_cap(int cap) { (void)cap; }

int faster_cpu_level(void) { return 0; }

int faster_resize(job *j) {
	(void)j;
	(void)prepWeights;
	(void)hscalar;
	(void)vfits16;
	return 0;
}

#endif
