//go:build cgo && !faster_serveonly && !faster_noonednn

package onednn

// #include "shim.h"
import "C"

import (
	"strings"
	"sync"
	"unsafe"

	"github.com/faster-training/faster/train"
)

// numerics is how an op runs its convolution or matrix product: the data
// type of its source, weights and output gradient in oneDNN memory (f32,
// or bf16 where the CPU computes bf16 natively), and the precision its
// f32 buffers are rounded to first when that is emulated (Float32: none).
// Destinations and gradients with respect to the source and weights stay
// f32: the products accumulate in f32 either way.
type numerics struct {
	dt      C.dnnl_data_type_t
	emulate train.Precision
}

func newNumerics(p train.Precision) numerics {
	switch {
	case p == train.BFloat16 && nativeBF16():
		return numerics{dt: C.dnnl_bf16, emulate: train.Float32}
	case p == train.BFloat16 || p == train.Float16:
		return numerics{dt: C.dnnl_f32, emulate: p}
	}
	return numerics{dt: C.dnnl_f32, emulate: train.Float32}
}

// nativeBF16 reports whether oneDNN runs bf16 convolutions on this CPU's
// bf16 instructions (avx512_core_bf16 or AMX). Creating the primitive is
// not enough: on AVX-512 without bf16 oneDNN 2.x creates one too
// ("jit_bf16:avx512_core"), emulating the bf16 products, and that kernel
// took 3.5x the fp32 Winograd step here (4.6 s against 1.3 s, ThinNet at
// batch 512), where rounding over the fp32 kernels costs almost nothing.
// So the implementation's name must name a bf16 ISA. The engine must be
// initialised.
var nativeBF16 = sync.OnceValue(func() bool {
	src, err := newMDOf([]int{1, 16, 8, 8}, C.dnnl_bf16, C.dnnl_format_tag_any)
	if err != nil {
		return false
	}
	wei, _ := newMDOf([]int{16, 16, 3, 3}, C.dnnl_bf16, C.dnnl_format_tag_any)
	dst, _ := newMDOf([]int{1, 16, 6, 6}, C.dnnl_f32, C.dnnl_format_tag_any)
	strides, pads := dims([]int{1, 1}), dims([]int{0, 0})
	var d C.dnnl_convolution_desc_t
	if check("", C.dnnl_convolution_forward_desc_init(&d, C.dnnl_forward_training, C.dnnl_convolution_direct,
		&src, &wei, nil, &dst, dimsPtr(&strides), dimsPtr(&pads), dimsPtr(&pads))) != nil {
		return false
	}
	p, err := newPrim("bf16 convolution probe", unsafe.Pointer(&d), nil)
	if err != nil {
		return false
	}
	defer p.free()
	return bf16ISA(p.impl())
})

// bf16ISA reports whether a oneDNN implementation name ("jit_bf16:
// avx512_core_bf16", "brg:avx512_core_amx") names an ISA with bf16
// instructions, rather than oneDNN's emulation on plain AVX-512
// ("jit_bf16:avx512_core").
func bf16ISA(impl string) bool {
	isa := impl[strings.LastIndexByte(impl, ':')+1:]
	return strings.Contains(isa, "bf16") || strings.Contains(isa, "amx")
}

// roundMem rounds src's values to precision p (bf16 or fp16: round to
// nearest even, fp16 overflowing to ±Inf and keeping subnormals) and
// writes them as f32 into dst, which has src's descriptor and may be src.
func roundMem(s *stream, p train.Precision, dst, src *mem) {
	n := mdSize(&src.md) / 4
	if n == 0 {
		return
	}
	half := C.int(0)
	if p == train.Float16 {
		half = 1
	}
	C.shim_round((*C.float)(C.shim_data(dst.m)), (*C.float)(C.shim_data(src.m)), C.size_t(n), half, C.int(s.threads))
}

// rounder holds rounded copies of buffers that belong to other layers.
type rounder struct{ m *mem }

// round returns a buffer of src's layout holding src rounded to p.
func (r *rounder) round(s *stream, p train.Precision, src *mem) (*mem, error) {
	if r.m == nil || !mdEqual(&r.m.md, &src.md) {
		r.free()
		m, err := newMem(src.md)
		if err != nil {
			return nil, err
		}
		r.m = m
	}
	roundMem(s, p, r.m, src)
	return r.m, nil
}

func (r *rounder) free() {
	r.m.free()
	r.m = nil
}

func freeRounders(rs ...*rounder) {
	for _, r := range rs {
		r.free()
	}
}

// Precision implements train.PrecisionReporter.
func (b *Backend) Precision() (train.Precision, bool) {
	return b.prec, b.num.dt == C.dnnl_bf16
}

// roundFloats is roundMem on Go memory (dst and src of equal length), for
// tests and benchmarks of the C rounding.
func roundFloats(p train.Precision, dst, src []float32, threads int) {
	if len(src) == 0 || len(dst) != len(src) {
		return
	}
	half := C.int(0)
	if p == train.Float16 {
		half = 1
	}
	C.shim_round((*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&src[0])), C.size_t(len(src)), half, C.int(threads))
}
