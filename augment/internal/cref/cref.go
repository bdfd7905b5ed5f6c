//go:build cgo

package cref

/*
#cgo CFLAGS: -O3
#include <stdint.h>
#include <string.h>

#define HPASS(NAME, T) \
static void NAME(T *dst, const uint8_t *src, int n, int ks, const int32_t *start, const int32_t *count, \
		const int32_t *w, int ch, int shift, int32_t maxv) { \
	int32_t round = 1 << (shift - 1); \
	for (int x = 0; x < n; x++) { \
		const uint8_t *s = src + start[x] * ch; \
		const int32_t *ww = w + x * ks; \
		int cnt = count[x]; \
		if (ch == 3) { \
			int32_t r = round, g = round, b = round; \
			for (int k = 0; k < cnt; k++) { \
				r += s[k*3] * ww[k]; g += s[k*3+1] * ww[k]; b += s[k*3+2] * ww[k]; \
			} \
			r >>= shift; g >>= shift; b >>= shift; \
			dst[x*3] = r < 0 ? 0 : r > maxv ? maxv : r; \
			dst[x*3+1] = g < 0 ? 0 : g > maxv ? maxv : g; \
			dst[x*3+2] = b < 0 ? 0 : b > maxv ? maxv : b; \
		} else { \
			int32_t v = round; \
			for (int k = 0; k < cnt; k++) v += s[k] * ww[k]; \
			v >>= shift; \
			dst[x] = v < 0 ? 0 : v > maxv ? maxv : v; \
		} \
	} \
}

#define VPASS(NAME, T) \
static void NAME(uint8_t *dst, const T *tmp, int rowLen, int first, const int32_t *w, int n, int shift) { \
	int32_t round = 1 << (shift - 1); \
	for (int i = 0; i < rowLen; i++) { \
		int32_t s = round; \
		for (int k = 0; k < n; k++) s += (int32_t)tmp[(first + k) * rowLen + i] * w[k]; \
		s >>= shift; \
		dst[i] = s < 0 ? 0 : s > 255 ? 255 : s; \
	} \
}

HPASS(hpass8, uint8_t)
HPASS(hpass16, uint16_t)
VPASS(vpass8, uint8_t)
VPASS(vpass16, uint16_t)

typedef struct {
	int n, ks;
	const int32_t *start, *count, *w;
} tab;

static void resize(uint8_t *dst, int dstStride, int dstH, const uint8_t *src, int srcStride, int ch,
		tab h, tab v, int ylo, int yhi, void *tmp, int wide, int hshift, int32_t hmax, int vshift) {
	int rowLen = h.n * ch;
	for (int y = ylo; y < yhi; y++) {
		if (wide)
			hpass16((uint16_t *)tmp + (y - ylo) * rowLen, src + y * srcStride, h.n, h.ks, h.start, h.count, h.w, ch, hshift, hmax);
		else
			hpass8((uint8_t *)tmp + (y - ylo) * rowLen, src + y * srcStride, h.n, h.ks, h.start, h.count, h.w, ch, hshift, hmax);
	}
	for (int y = 0; y < dstH; y++) {
		if (wide)
			vpass16(dst + y * dstStride, (uint16_t *)tmp, rowLen, v.start[y] - ylo, v.w + y * v.ks, v.count[y], vshift);
		else
			vpass8(dst + y * dstStride, (uint8_t *)tmp, rowLen, v.start[y] - ylo, v.w + y * v.ks, v.count[y], vshift);
	}
}
*/
import "C"

import "unsafe"

// Table is one axis's weight table, as augment builds it.
type Table struct {
	N, KSize        int
	Start, Count, W []int32
}

// Resize runs the C kernels: horizontal pass over source rows [ylo, yhi)
// into tmp (uint8 rows when wide is false, uint16 rows otherwise; it must
// hold (yhi-ylo)*h.N*ch samples), then the vertical pass into dst.
func Resize(dst []uint8, dstStride, dstH int, src []uint8, srcStride, ch int, h, v Table,
	ylo, yhi int, tmp8 []uint8, tmp16 []uint16, hshift uint, hmax int32, vshift uint) {
	ct := func(t Table) C.tab {
		return C.tab{n: C.int(t.N), ks: C.int(t.KSize), start: (*C.int32_t)(unsafe.Pointer(&t.Start[0])),
			count: (*C.int32_t)(unsafe.Pointer(&t.Count[0])), w: (*C.int32_t)(unsafe.Pointer(&t.W[0]))}
	}
	var tmp unsafe.Pointer
	wide := C.int(0)
	if tmp16 != nil {
		tmp, wide = unsafe.Pointer(&tmp16[0]), 1
	} else {
		tmp = unsafe.Pointer(&tmp8[0])
	}
	C.resize((*C.uint8_t)(&dst[0]), C.int(dstStride), C.int(dstH), (*C.uint8_t)(&src[0]), C.int(srcStride), C.int(ch),
		ct(h), ct(v), C.int(ylo), C.int(yhi), tmp, wide, C.int(hshift), C.int32_t(hmax), C.int(vshift))
}
