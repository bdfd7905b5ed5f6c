//go:build cgo

package kernels

/*
#cgo CFLAGS: -std=gnu11 -O2
#include "cpu.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// SetReverse makes the CPU build run the blocks and threads of every
// later launch in reverse order (or in order again), and returns the
// setting before. Call it only while no launch runs (a test's TestMain).
func SetReverse(on bool) bool {
	r := 0
	if on {
		r = 1
	}
	return C.nvj_cpu_set_reverse(C.int(r)) != 0
}

// RunCPU runs b's passes with resize.cu's CPU build over Go memory: src
// holds the pictures at their descriptors' offsets; the rows go to u8
// (uint8 HWC) when f32 is nil, else to f32 (float32 CHW through lut).
func RunCPU(b *Batch, src, u8 []byte, f32 []float32, lut []float32) error {
	n := len(b.Desc) / NDesc
	if n == 0 {
		return nil
	}
	row := int64(b.OutW * b.OutH * b.Ch)
	for i := range n {
		d := b.Desc[i*NDesc:]
		if need := d[0] + (d[2]+d[3]-1)*d[1] + int64(b.Ch); need > int64(len(src)) && d[3] > 0 {
			return fmt.Errorf("kernels: image %d reads %d bytes of a %d-byte source", i, need, len(src))
		}
		dst := int64(len(u8))
		if f32 != nil {
			dst = int64(len(f32))
		}
		if d[9]+row > dst {
			return fmt.Errorf("kernels: image %d writes past the destination", i)
		}
	}
	if f32 != nil && len(lut) < 3*256 {
		return fmt.Errorf("kernels: normalisation table of %d floats", len(lut))
	}
	tmp := make([]byte, max(b.TmpBytes, 1))
	h, v := b.Launches()
	C.nvj_cpu_resize_h(C.int(h.GX), C.int(h.GY), Block, (*C.uint8_t)(unsafe.Pointer(&src[0])), (*C.uint8_t)(&tmp[0]),
		(*C.int32_t)(&b.Tab[0]), (*C.int64_t)(&b.Desc[0]), C.int32_t(b.OutW), C.int32_t(b.Ch))
	if f32 == nil {
		C.nvj_cpu_resize_v_u8(C.int(v.GX), C.int(v.GY), Block, (*C.uint8_t)(&tmp[0]), (*C.uint8_t)(&u8[0]),
			(*C.int32_t)(&b.Tab[0]), (*C.int64_t)(&b.Desc[0]), C.int32_t(b.OutW), C.int32_t(b.OutH), C.int32_t(b.Ch))
		return nil
	}
	C.nvj_cpu_resize_v_f32(C.int(v.GX), C.int(v.GY), Block, (*C.uint8_t)(&tmp[0]), (*C.float)(&f32[0]),
		(*C.int32_t)(&b.Tab[0]), (*C.int64_t)(&b.Desc[0]), (*C.float)(&lut[0]), C.int32_t(b.OutW), C.int32_t(b.OutH), C.int32_t(b.Ch))
	return nil
}
