//go:build cgo

package simd

/*
#cgo CFLAGS: -O3
#include "resize.h"

int faster_warp_bilinear3(uint8_t *out, const uint8_t *src, long srcLen, const float *colX, const float *colY,
		float rowX, float rowY, float cx, float cy, float sw, float sh, int w, int h, int n, const float *fill,
		int32_t *slow);
int faster_warp_pil_bilinear3(uint8_t *out, const uint8_t *src, long srcLen, double a0, double a2, double a3, double a5,
		double rowX, double rowY, int w, int h, int n, const uint8_t *fill, int32_t *slow);

// run builds the job on the C stack: Go passes only pointers to memory
// without Go pointers in it, as cgo's rules ask.
static int run(uint8_t *dst, int dstStride, int dstH, const uint8_t *src, long srcLen, int srcStride, int ch,
		int hn, int hk, const int32_t *hstart, const int32_t *hcount, const int32_t *hw,
		int vk, const int32_t *vstart, const int32_t *vcount, const int32_t *vw, int ylo, int yhi,
		void *tmp, int wide, int hshift, int hmax, int vshift, int16_t *wq, long wqLen) {
	job j = {dst, dstStride, dstH, src, srcLen, srcStride, ch, hn, hk, hstart, hcount, hw,
		vk, vstart, vcount, vw, ylo, yhi, tmp, wide, hshift, hmax, vshift, wq, wqLen, 0};
	return faster_resize(&j);
}
*/
import "C"

import "unsafe"

// Resize runs j and reports true, or reports false having written nothing
// to j.Dst when the kernels cannot run it (see the package doc).
func Resize(j *Job) bool {
	if !j.valid() {
		return false
	}
	tmp, wide := unsafe.Pointer(nil), C.int(0)
	if j.Tmp16 != nil {
		tmp, wide = unsafe.Pointer(&j.Tmp16[0]), 1
	} else {
		tmp = unsafe.Pointer(&j.Tmp8[0])
	}
	return C.run((*C.uint8_t)(&j.Dst[0]), C.int(j.DstStride), C.int(j.DstH),
		(*C.uint8_t)(&j.Src[0]), C.long(len(j.Src)), C.int(j.SrcStride), C.int(j.Channels),
		C.int(j.H.N), C.int(j.H.KSize), i32(j.H.Start), i32(j.H.Count), i32(j.H.W),
		C.int(j.V.KSize), i32(j.V.Start), i32(j.V.Count), i32(j.V.W), C.int(j.YLo), C.int(j.YHi),
		tmp, wide, C.int(j.HShift), C.int(j.HMax), C.int(j.VShift),
		(*C.int16_t)(&j.Weights[0]), C.long(len(j.Weights))) != 0
}

// WarpBilinear3 writes the pixels of one output row of augment's bilinear
// RGB warp whose four taps lie inside the w×h source image,
// computing what the Go kernel computes, and lists the others (edges, and
// the row's last len(out)/3 mod 8) in slow, returning how many. ok is false,
// with nothing written, without AVX2 or cgo: the caller does the row. src
// holds the image's rows (w*3 bytes each) and 4 bytes more; colX and colY
// have len(out)/3 entries, slow at least as many; fill is nil (zero
// padding) or the three fill values (torchvision's mask blend, clamped).
func WarpBilinear3(out, src []byte, colX, colY []float32, rowX, rowY, cx, cy, sw, sh float32, w, h int, fill *[3]float32, slow []int32) (nslow int, ok bool) {
	n := len(out) / 3
	if n == 0 || len(colX) < n || len(colY) < n || len(slow) < n {
		return 0, false
	}
	r := C.faster_warp_bilinear3((*C.uint8_t)(&out[0]), (*C.uint8_t)(&src[0]), C.long(len(src)),
		(*C.float)(&colX[0]), (*C.float)(&colY[0]), C.float(rowX), C.float(rowY), C.float(cx), C.float(cy),
		C.float(sw), C.float(sh), C.int(w), C.int(h), C.int(n), (*C.float)(unsafe.Pointer(fill)), (*C.int32_t)(&slow[0]))
	if r < 0 {
		return 0, false
	}
	return int(r), true
}

// WarpPILBilinear3 writes the pixels of one output row of augment's PIL
// bilinear RGB warp (WarpPILBilinear) whose position a0 xin + rowX + a2,
// a3 xin + rowY + a5 (xin = x + 0.5) falls outside the w×h source (the
// fill) or has its 2x2 taps inside it, computing what the Go kernel
// computes, and lists the others (the picture's border, and the row's
// last len(out)/3 mod 8) in slow, returning how many. ok is false, with
// nothing written, without AVX2 or cgo: the caller does the row. src
// holds the image's rows (w*3 bytes each) and 4 bytes more; slow has at
// least len(out)/3 entries.
func WarpPILBilinear3(out, src []byte, a0, a2, a3, a5, rowX, rowY float64, w, h int, fill *[3]byte, slow []int32) (nslow int, ok bool) {
	n := len(out) / 3
	if n == 0 || len(slow) < n {
		return 0, false
	}
	r := C.faster_warp_pil_bilinear3((*C.uint8_t)(&out[0]), (*C.uint8_t)(&src[0]), C.long(len(src)),
		C.double(a0), C.double(a2), C.double(a3), C.double(a5), C.double(rowX), C.double(rowY),
		C.int(w), C.int(h), C.int(n), (*C.uint8_t)(&fill[0]), (*C.int32_t)(&slow[0]))
	if r < 0 {
		return 0, false
	}
	return int(r), true
}

func i32(s []int32) *C.int32_t { return (*C.int32_t)(unsafe.Pointer(&s[0])) }

// SetLevel limits the instruction sets the kernels use, for tests: 0 none
// (Resize reports false), 1 SSSE3, 2 AVX2 (the default). It must not be
// called while any Resize runs.
func SetLevel(level int) { C.faster_set_level_cap(C.int(level)) }
