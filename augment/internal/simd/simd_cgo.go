//go:build cgo

package simd

/*
#cgo CFLAGS: -O3
#include "resize.h"

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

func i32(s []int32) *C.int32_t { return (*C.int32_t)(unsafe.Pointer(&s[0])) }

// SetLevel limits the instruction sets the kernels use, for tests: 0 none
// (Resize reports false), 1 SSSE3, 2 AVX2 (the default). It must not be
// called while any Resize runs.
func SetLevel(level int) { C.faster_set_level_cap(C.int(level)) }
