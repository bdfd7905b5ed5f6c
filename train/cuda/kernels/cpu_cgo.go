//go:build cgo

package kernels

/*
#cgo CFLAGS: -std=gnu11 -O2
#cgo LDFLAGS: -lm
#include <stdlib.h>
#include "cpu.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// The CPU build: each function runs one kernel of kernels.cu, compiled by
// gcc, over Go slices with launch l (as planned for the GPU, or any other
// power-of-two block of at most MaxBlock, to test the striding).

// HasCPUBuild reports whether this build has kernels.cu's CPU build (cgo).
const HasCPUBuild = true

// SetSchedule makes the CPU build run every later launch in schedule s,
// and returns the one before. Call it only while no launch runs (a test's
// TestMain): the schedule is the process's.
func SetSchedule(s Schedule) Schedule {
	if s < 0 || int(s) >= len(scheduleNames) {
		panic(fmt.Sprintf("kernels: SetSchedule(%d)", int(s)))
	}
	return Schedule(C.cpu_set_schedule(C.int(s)))
}

// raceKernel runs races.c's kernel kind (0 a race within a phase, 1 a
// SYNC missing between phases, 2 one missing at a loop's end, 3 blocks
// depending on each other), or its fixed form, over in into out:
// l.Block threads, tiles of them per block for kind 2.
func raceKernel(kind int, l Launch, in, out []float32, tiles int, fixed bool) error {
	if err := check(l, len(in), l.Grid*l.Block*max(tiles, 1), len(out), len(in)); err != nil {
		return err
	}
	f := 0
	if fixed {
		f = 1
	}
	if rc := C.cpu_race(C.int(kind), C.int(l.Grid), C.int(l.Block), (*C.float)(fp(in)), (*C.float)(fp(out)), C.int(tiles), C.int(f)); rc != 0 {
		return fmt.Errorf("kernels: race kernel %d: code %d", kind, rc)
	}
	return nil
}

func check(l Launch, lens ...int) error {
	if l.Grid < 1 || l.Block < 1 || l.Block > MaxBlock || l.Block&(l.Block-1) != 0 {
		return fmt.Errorf("kernels: launch %+v: want a grid ≥ 1 and a power-of-two block ≤ %d", l, MaxBlock)
	}
	for i := 1; i < len(lens); i += 2 {
		if lens[i-1] < lens[i] {
			return fmt.Errorf("kernels: buffer of %d elements, want %d", lens[i-1], lens[i])
		}
	}
	return nil
}

func fp[T any](s []T) *T {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

// CastF32F16 converts in to binary16 bits in out.
func CastF32F16(l Launch, in []float32, out []uint16) error {
	if err := check(l, len(out), len(in)); err != nil {
		return err
	}
	C.cpu_cast_f32_f16(C.int(l.Grid), C.int(l.Block), (*C.float)(fp(in)), (*C.uint16_t)(fp(out)), C.int64_t(len(in)))
	return nil
}

// CastF16F32 converts binary16 bits in to float32.
func CastF16F32(l Launch, in []uint16, out []float32) error {
	if err := check(l, len(out), len(in)); err != nil {
		return err
	}
	C.cpu_cast_f16_f32(C.int(l.Grid), C.int(l.Block), (*C.uint16_t)(fp(in)), (*C.float)(fp(out)), C.int64_t(len(in)))
	return nil
}

// CastF32BF16 converts in to bfloat16 bits in out.
func CastF32BF16(l Launch, in []float32, out []uint16) error {
	if err := check(l, len(out), len(in)); err != nil {
		return err
	}
	C.cpu_cast_f32_bf16(C.int(l.Grid), C.int(l.Block), (*C.float)(fp(in)), (*C.uint16_t)(fp(out)), C.int64_t(len(in)))
	return nil
}

// CastBF16F32 converts bfloat16 bits in to float32.
func CastBF16F32(l Launch, in []uint16, out []float32) error {
	if err := check(l, len(out), len(in)); err != nil {
		return err
	}
	C.cpu_cast_bf16_f32(C.int(l.Grid), C.int(l.Block), (*C.uint16_t)(fp(in)), (*C.float)(fp(out)), C.int64_t(len(in)))
	return nil
}

// NormalizeU8 writes n uint8 images of c×h×w (HWC, or CHW with
// NormCHW) as float NCHW: out = v·a[ch] + b[ch] (a the scale, b the
// shift), or with NormDiv out = (v/255 − a[ch])/b[ch] (a the mean, b the
// std); NormFlip mirrors each image left to right.
func NormalizeU8(l Launch, in []uint8, out, a, b []float32, n, c, h, w int, mode NormMode) error {
	if err := check(l, len(in), n*c*h*w, len(out), n*c*h*w, len(a), c, len(b), c); err != nil {
		return err
	}
	C.cpu_normalize_u8(C.int(l.Grid), C.int(l.Block), (*C.uint8_t)(fp(in)), (*C.float)(fp(out)),
		(*C.float)(fp(a)), (*C.float)(fp(b)), C.int32_t(n), C.int32_t(c), C.int32_t(h), C.int32_t(w), C.int32_t(mode))
	return nil
}

func b2i(b bool) C.int32_t {
	if b {
		return 1
	}
	return 0
}

// SGD updates w (and the velocity v when Momentum ≠ 0) from gradient g.
func SGD(l Launch, w, g, v []float32, a SGDArgs) error {
	if err := check(l, len(g), len(w), len(v), len(w)); err != nil {
		return err
	}
	C.cpu_sgd(C.int(l.Grid), C.int(l.Block), (*C.float)(fp(w)), (*C.float)(fp(g)), (*C.float)(fp(v)), C.int64_t(len(w)),
		C.float(a.LR), C.float(a.Momentum), C.float(a.WeightDecay), b2i(a.Nesterov), b2i(a.First))
	return nil
}

// AMPUnscale multiplies g by invScale (unless 1) and sets *foundInf to 1
// when some element of g was not finite.
func AMPUnscale(l Launch, g []float32, foundInf *float32, invScale float32) error {
	if err := check(l); err != nil {
		return err
	}
	inv := invScale
	C.cpu_amp_unscale(C.int(l.Grid), C.int(l.Block), (*C.float)(fp(g)), C.int64_t(len(g)),
		(*C.float)(unsafe.Pointer(foundInf)), (*C.float)(unsafe.Pointer(&inv)))
	return nil
}

// CELoss computes the cross-entropy gradient into dlogits and each row's
// loss, top-1 and top-5 into rowstat (3 a row).
func CELoss(l Launch, logits []float32, labels []int32, dlogits, rowstat []float32, n, k int, eps, gscale float32) error {
	if err := check(l, len(logits), n*k, len(labels), n, len(dlogits), n*k, len(rowstat), 3*n); err != nil {
		return err
	}
	C.cpu_ce_loss(C.int(l.Grid), C.int(l.Block), (*C.float)(fp(logits)), (*C.int32_t)(fp(labels)), (*C.float)(fp(dlogits)),
		(*C.float)(fp(rowstat)), C.int32_t(n), C.int32_t(k), C.float(eps), C.float(gscale))
	return nil
}

// CESums adds the n rows of rowstat to sums (loss, top-1, top-5).
func CESums(l Launch, rowstat []float32, n int, sums *[3]float64) error {
	if err := check(l, len(rowstat), 3*n); err != nil {
		return err
	}
	C.cpu_ce_sums(C.int(l.Grid), C.int(l.Block), (*C.float)(fp(rowstat)), C.int32_t(n), (*C.double)(unsafe.Pointer(&sums[0])))
	return nil
}

// LaunchCPU runs kernel name of kernels.cu's CPU build with launch l and
// args, one 8-byte slot each, as cuLaunchKernel takes them on the GPU
// (train/cuda's Arg): a pointer as its address, an i32 or a float32's bits
// in the low 32 bits, an i64 as is. The pointers are host addresses that
// the caller keeps valid (pinned, or C memory) and large enough for the
// kernel; nothing here can check that.
func LaunchCPU(name string, l Launch, args []uint64) error {
	if err := check(l); err != nil {
		return fmt.Errorf("kernels: %s: %w", name, err)
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	want := int(C.cpu_kernel_nargs(cname))
	if want < 0 {
		return fmt.Errorf("kernels: no kernel %q in the CPU build's dispatch table (%d arguments given)", name, len(args))
	}
	if want != len(args) {
		return fmt.Errorf("kernels: kernel %s takes %d arguments, %d given", name, want, len(args))
	}
	if rc := C.cpu_launch(cname, C.int(l.Grid), C.int(l.Block), (*C.ulonglong)(unsafe.Pointer(fp(args))), C.int(len(args))); rc != 0 {
		return fmt.Errorf("kernels: cpu_launch %s with %d arguments: code %d", name, len(args), rc)
	}
	return nil
}

// dispatchTable returns cpu.c's dispatch table: each kernel's name and the
// text of its slots' unpacking ("P(0), P(1), L(2)").
func dispatchTable() map[string]string {
	t := map[string]string{}
	for i := range int(C.cpu_kernel_count()) {
		t[C.GoString(C.cpu_kernel_name(C.int(i)))] = C.GoString(C.cpu_kernel_args(C.int(i)))
	}
	return t
}

// BNTrain runs BatchNorm in training over x, or over ReLU(x) when b.ReLU
// (the ReLU applied as the values are read), as the backend launches it:
// bn_plane_sum, bn_stats, bn_apply, each planned for f (the planes' and
// the statistics' scratch allocated here).
func BNTrain(f Facts, b BN) error {
	sums, rows, chans, err := bnPlans(f, b.Flags(), b.N, b.C, b.HW)
	if err != nil {
		return err
	}
	nc := b.N * b.C * b.HW
	if err := check(rows, lenOf(b.X, b.X16), nc, lenOf(b.Y, b.Y16), nc, len(b.Gamma), b.C, len(b.Beta), b.C, len(b.BatchMean), b.C,
		len(b.BatchVar), b.C, len(b.RunningMean), b.C, len(b.RunningVar), b.C); err != nil {
		return err
	}
	if err := b.checkOut(); err != nil {
		return err
	}
	part, stat := make([]float64, 2*b.N*b.C), b.Stat
	if len(stat) < StatLen(b.C, b.NHWC) {
		stat = make([]float64, StatLen(b.C, b.NHWC))
	}
	n, c, hw, fl := C.int32_t(b.N), C.int32_t(b.C), C.int32_t(b.HW), C.int32_t(b.Flags())
	x, y, pp, sp := pick(b.X, b.X16), pick(b.Y, b.Y16), (*C.double)(fp(part)), (*C.double)(fp(stat))
	gm, bt := (*C.float)(fp(b.Gamma)), (*C.float)(fp(b.Beta))
	if b.NHWC {
		C.cpu_bn_nhwc_sum(C.int(sums.Grid), C.int(sums.Block), x, pp, n, c, hw, fl)
	} else {
		C.cpu_bn_plane_sum(C.int(sums.Grid), C.int(sums.Block), x, pp, n, c, hw, fl)
	}
	C.cpu_bn_stats(C.int(chans.Grid), C.int(chans.Block), x, pp, sp, (*C.float)(fp(b.BatchMean)), (*C.float)(fp(b.BatchVar)),
		(*C.float)(fp(b.RunningMean)), (*C.float)(fp(b.RunningVar)), n, c, hw, C.float(b.Eps), C.float(b.Momentum), fl)
	s, y16 := (*C.float)(fp(b.S)), (*C.uint16_t)(fp(b.Copy16))
	if b.OutNCHW {
		C.cpu_bn_tiles_apply(C.int(rows.Grid), C.int(rows.Block), x, (*C.float)(y), gm, bt, sp, s, y16, n, c, hw, fl)
	} else if b.NHWC {
		C.cpu_bn_nhwc_apply(C.int(rows.Grid), C.int(rows.Block), x, y, gm, bt, sp, s, y16, n, c, hw, fl)
	} else {
		C.cpu_bn_apply(C.int(rows.Grid), C.int(rows.Block), x, y, gm, bt, sp, s, y16, n, c, hw, fl)
	}
	return nil
}

// checkOut refuses outputs the kernels do not write: float32 channels-first
// y (OutNCHW) from other than channels-last x; a sum (S) into other than
// float32 y of x's size, or with the ReLU layer folded in; a 16-bit copy
// without a sum.
func (b BN) checkOut() error {
	nc := b.N * b.C * b.HW
	switch {
	case b.OutNCHW && (!b.NHWC || b.Y16 != nil):
		return fmt.Errorf("kernels: BatchNorm into float32 channels-first y (OutNCHW) from other than channels-last x")
	case b.S != nil && (b.Y16 != nil || b.ReLUOut || len(b.S) != nc):
		return fmt.Errorf("kernels: BatchNorm's sum (S, %d values) into other than float32 y of %d values, or with ReLUOut", len(b.S), nc)
	case b.Copy16 != nil && (b.S == nil || len(b.Copy16) != nc):
		return fmt.Errorf("kernels: BatchNorm's 16-bit copy (%d values) without a sum, or not of %d values", len(b.Copy16), nc)
	}
	return nil
}

// bnNHWCRuns is kernels.cu's bn_nhwc_runs (BNRuns's check).
func bnNHWCRuns(n, c, hw int) int {
	return int(C.cpu_bn_nhwc_runs(C.int32_t(n), C.int32_t(c), C.int32_t(hw)))
}

// pick is f16's address when it is not nil, else f32's.
func pick(f32 []float32, f16 []uint16) unsafe.Pointer {
	if f16 != nil {
		return unsafe.Pointer(fp(f16))
	}
	return unsafe.Pointer(fp(f32))
}

// lenOf is the length of the slice pick picks.
func lenOf(f32 []float32, f16 []uint16) int {
	if f16 != nil {
		return len(f16)
	}
	return len(f32)
}

// bnPlans are the launches of the BatchNorm kernels for flags fl over
// n×c×hw, as the backend plans them (BNLaunches): the sums, the
// element-wise passes, and a block per channel for the statistics.
func bnPlans(f Facts, fl int32, n, c, hw int) (sums, rows, chans Launch, err error) {
	k := BNLaunches(fl, n, c, hw)
	if sums, err = f.Plan(PerRow, int64(k.Sums), int64(k.SumSize)); err != nil {
		return
	}
	if rows, err = f.Plan(PerRow, int64(k.Rows), int64(k.RowSize)); err != nil {
		return
	}
	chans, err = f.Plan(PerRow, int64(c), int64(n))
	return
}

// BNEval runs BatchNorm with the running statistics (b's BatchMean,
// BatchVar and Momentum are not used) over x, or over ReLU(x) when
// b.ReLU, l a PerRow launch over the n·c planes (over BNRuns(n, c, hw)
// when b.NHWC).
func BNEval(l Launch, b BN) error {
	nc := b.N * b.C * b.HW
	if err := check(l, lenOf(b.X, b.X16), nc, lenOf(b.Y, b.Y16), nc, len(b.Gamma), b.C, len(b.Beta), b.C,
		len(b.RunningMean), b.C, len(b.RunningVar), b.C); err != nil {
		return err
	}
	if err := b.checkOut(); err != nil {
		return err
	}
	x, y, gm, bt := pick(b.X, b.X16), pick(b.Y, b.Y16), (*C.float)(fp(b.Gamma)), (*C.float)(fp(b.Beta))
	rm, rv := (*C.float)(fp(b.RunningMean)), (*C.float)(fp(b.RunningVar))
	s, y16 := (*C.float)(fp(b.S)), (*C.uint16_t)(fp(b.Copy16))
	n, c, hw, eps, fl := C.int32_t(b.N), C.int32_t(b.C), C.int32_t(b.HW), C.float(b.Eps), C.int32_t(b.Flags())
	if b.OutNCHW {
		C.cpu_bn_tiles_eval(C.int(l.Grid), C.int(l.Block), x, (*C.float)(y), gm, bt, rm, rv, s, y16, n, c, hw, eps, fl)
	} else if b.NHWC {
		C.cpu_bn_nhwc_eval(C.int(l.Grid), C.int(l.Block), x, y, gm, bt, rm, rv, s, y16, n, c, hw, eps, fl)
	} else {
		C.cpu_bn_eval(C.int(l.Grid), C.int(l.Block), x, y, gm, bt, rm, rv, s, y16, n, c, hw, eps, fl)
	}
	return nil
}

// BNBwd runs BatchNorm's backward (and the ReLU's before it when ReLUIn)
// as the backend launches it: bn_bwd_sum, bn_bwd_stats, bn_bwd_apply,
// each planned for f.
func BNBwd(f Facts, b BNGrad) error {
	sums, rows, chans, err := bnPlans(f, b.Flags(), b.N, b.C, b.HW)
	if err != nil {
		return err
	}
	nc := b.N * b.C * b.HW
	if b.X16 != nil && b.DX16 == nil {
		return fmt.Errorf("kernels: BatchNorm backward of a 16-bit x without a 16-bit dx")
	}
	if b.ReLUOut && (len(b.Stat) < 2*b.C || len(b.Beta) < b.C) {
		return fmt.Errorf("kernels: BatchNorm backward through its ReLU without the forward's statistics and shift")
	}
	if b.OutNCHW && (!b.NHWC || b.DY16 != nil) {
		return fmt.Errorf("kernels: BatchNorm backward from float32 channels-first dy (OutNCHW) to other than channels-last dx")
	}
	if b.NHWC && len(b.Stat) < StatLen(b.C, true) {
		return fmt.Errorf("kernels: channels-last BatchNorm backward without the forward's %d statistics", StatLen(b.C, true))
	}
	if err := check(rows, lenOf(b.DY, b.DY16), nc, lenOf(b.X, b.X16), nc, lenOf(b.DX, b.DX16), nc, len(b.Gamma), b.C, len(b.BatchMean), b.C,
		len(b.BatchVar), b.C, len(b.DGamma), b.C, len(b.DBeta), b.C); err != nil {
		return err
	}
	part, stat := make([]float64, 2*b.N*b.C), make([]float64, 2*b.C)
	n, c, hw := C.int32_t(b.N), C.int32_t(b.C), C.int32_t(b.HW)
	fl := C.int32_t(b.Flags())
	bm, bv := (*C.float)(fp(b.BatchMean)), (*C.float)(fp(b.BatchVar))
	gm, bt, fs := (*C.float)(fp(b.Gamma)), (*C.float)(fp(b.Beta)), (*C.double)(fp(b.Stat))
	dy, x, dx := pick(b.DY, b.DY16), pick(b.X, b.X16), pick(b.DX, b.DX16)
	pp, sp := (*C.double)(fp(part)), (*C.double)(fp(stat))
	switch {
	case b.OutNCHW:
		C.cpu_bn_tiles_bwd_sum(C.int(sums.Grid), C.int(sums.Block), (*C.float)(dy), x, gm, bt, fs, bm, pp, n, c, hw, fl)
	case b.NHWC:
		C.cpu_bn_nhwc_bwd_sum(C.int(sums.Grid), C.int(sums.Block), dy, x, gm, bt, fs, bm, pp, n, c, hw, fl)
	default:
		C.cpu_bn_bwd_sum(C.int(sums.Grid), C.int(sums.Block), dy, x, gm, bt, fs, bm, bv, pp, n, c, hw, C.float(b.Eps), fl)
	}
	C.cpu_bn_bwd_stats(C.int(chans.Grid), C.int(chans.Block), pp, sp, (*C.float)(fp(b.DGamma)), (*C.float)(fp(b.DBeta)), n, c, hw)
	switch {
	case b.OutNCHW:
		C.cpu_bn_tiles_bwd_apply(C.int(rows.Grid), C.int(rows.Block), (*C.float)(dy), x, gm, bt, fs, bm, sp, dx, n, c, hw, fl)
	case b.NHWC:
		C.cpu_bn_nhwc_bwd_apply(C.int(rows.Grid), C.int(rows.Block), dy, x, gm, bt, fs, bm, sp, dx, n, c, hw, fl)
	default:
		C.cpu_bn_bwd_apply(C.int(rows.Grid), C.int(rows.Block), dy, x, gm, bt, fs, bm, bv, sp, dx, n, c, hw, C.float(b.Eps), fl)
	}
	return nil
}

// ReLUFwd writes y = max(x, 0) (a NaN stays NaN).
func ReLUFwd(l Launch, x, y []float32) error {
	if err := check(l, len(y), len(x)); err != nil {
		return err
	}
	C.cpu_relu_fwd(C.int(l.Grid), C.int(l.Block), (*C.float)(fp(x)), (*C.float)(fp(y)), C.int64_t(len(x)))
	return nil
}

// ReLUBwd writes dx = dy where y > 0, else 0.
func ReLUBwd(l Launch, dy, y, dx []float32) error {
	if err := check(l, len(y), len(dy), len(dx), len(dy)); err != nil {
		return err
	}
	C.cpu_relu_bwd(C.int(l.Grid), C.int(l.Block), (*C.float)(fp(dy)), (*C.float)(fp(y)), (*C.float)(fp(dx)), C.int64_t(len(dy)))
	return nil
}

// Add writes y = a + b (y may be a).
func Add(l Launch, a, b, y []float32) error {
	if err := check(l, len(b), len(a), len(y), len(a)); err != nil {
		return err
	}
	C.cpu_add(C.int(l.Grid), C.int(l.Block), (*C.float)(fp(a)), (*C.float)(fp(b)), (*C.float)(fp(y)), C.int64_t(len(a)))
	return nil
}

// AddReLUBwd writes dx = a + b where y > 0, else 0 (dx may be a or b).
func AddReLUBwd(l Launch, a, b, y, dx []float32) error {
	if err := check(l, len(b), len(a), len(y), len(a), len(dx), len(a)); err != nil {
		return err
	}
	C.cpu_add_relu_bwd(C.int(l.Grid), C.int(l.Block), (*C.float)(fp(a)), (*C.float)(fp(b)), (*C.float)(fp(y)), (*C.float)(fp(dx)),
		C.int64_t(len(a)))
	return nil
}

// AddReLUBwdLow writes s.DX = s.A + s.B where s.Y > 0, else 0, the 16-bit
// operands widened as they are read, planned for f as the backend
// launches it: element-wise, or channels-last over CastTiles tiles.
func AddReLUBwdLow(f Facts, s SumGrad) error {
	n := s.N * s.C * s.HW
	if s.A16 == nil && s.B16 == nil {
		return fmt.Errorf("kernels: a residual gradient sum with no 16-bit operand")
	}
	l, err := f.Plan(Elementwise, int64(n), 0)
	if s.NHWC {
		l, err = f.Plan(PerRow, int64(CastTiles(s.N, s.C, s.HW)), TileValues)
	}
	if err != nil {
		return err
	}
	if err := check(l, lenOf(s.A, s.A16), n, lenOf(s.B, s.B16), n, len(s.Y), n, len(s.DX), n); err != nil {
		return err
	}
	a, b, y, dx := pick(s.A, s.A16), pick(s.B, s.B16), (*C.float)(fp(s.Y)), (*C.float)(fp(s.DX))
	if s.NHWC {
		C.cpu_add_relu_bwd_tiles(C.int(l.Grid), C.int(l.Block), a, b, y, dx, C.int32_t(s.N), C.int32_t(s.C), C.int32_t(s.HW), C.int32_t(s.Flags()))
	} else {
		C.cpu_add_relu_bwd_low(C.int(l.Grid), C.int(l.Block), a, b, y, dx, C.int64_t(n), C.int32_t(s.Flags()))
	}
	return nil
}

// AddReLULow writes y = ReLU(a + b) and y16 = y rounded into f's 16-bit
// format, channels-last when nhwc (n×c×hw values), planned for facts as
// the backend launches it.
func AddReLULow(facts Facts, a, b, y []float32, y16 []uint16, f Format, nhwc bool, n, c, hw int) error {
	size := n * c * hw
	l, err := facts.Plan(Elementwise, int64(size), 0)
	if nhwc {
		l, err = facts.Plan(PerRow, int64(CastTiles(n, c, hw)), TileValues)
	}
	if err != nil {
		return err
	}
	if err := check(l, len(a), size, len(b), size, len(y), size, len(y16), size); err != nil {
		return err
	}
	fl := C.int32_t(f.SumFlag())
	pa, pb, py, p16 := (*C.float)(fp(a)), (*C.float)(fp(b)), (*C.float)(fp(y)), (*C.uint16_t)(fp(y16))
	if nhwc {
		C.cpu_add_relu_tiles(C.int(l.Grid), C.int(l.Block), pa, pb, py, p16, C.int32_t(n), C.int32_t(c), C.int32_t(hw), fl)
	} else {
		C.cpu_add_relu_low(C.int(l.Grid), C.int(l.Block), pa, pb, py, p16, C.int64_t(size), fl)
	}
	return nil
}

// AddReLU writes y = ReLU(a + b) (y may be a or b).
func AddReLU(l Launch, a, b, y []float32) error {
	if err := check(l, len(b), len(a), len(y), len(a)); err != nil {
		return err
	}
	C.cpu_add_relu(C.int(l.Grid), C.int(l.Block), (*C.float)(fp(a)), (*C.float)(fp(b)), (*C.float)(fp(y)), C.int64_t(len(a)))
	return nil
}

// BiasAct adds bias[(i/hw)%c] to y (unless bias is nil), then applies the
// ReLU when relu, in place.
func BiasAct(l Launch, y, bias []float32, c, hw int, relu bool) error {
	if c < 1 || hw < 1 {
		return fmt.Errorf("kernels: bias_act over %d channels of %d, want both ≥ 1", c, hw)
	}
	if bias != nil {
		if err := check(l, len(bias), c); err != nil {
			return err
		}
	} else if err := check(l); err != nil {
		return err
	}
	C.cpu_bias_act(C.int(l.Grid), C.int(l.Block), (*C.float)(fp(y)), (*C.float)(fp(bias)), C.int64_t(len(y)),
		C.int32_t(c), C.int32_t(hw), b2i(relu))
	return nil
}

// BiasGrad writes db[ch] = the sum of dy (n×c×hw) over n and hw.
func BiasGrad(l Launch, dy, db []float32, n, c, hw int) error {
	if err := check(l, len(dy), n*c*hw, len(db), c); err != nil {
		return err
	}
	C.cpu_bias_grad(C.int(l.Grid), C.int(l.Block), (*C.float)(fp(dy)), (*C.float)(fp(db)), C.int32_t(n), C.int32_t(c), C.int32_t(hw))
	return nil
}

func (p Pool) dims() (*C.int32_t, error) {
	for _, v := range []int{p.N, p.C, p.H, p.W, p.OH, p.OW, p.KH, p.KW, p.SH, p.SW} {
		if v < 1 {
			return nil, fmt.Errorf("kernels: pool %+v: sizes, windows and strides must be ≥ 1", p)
		}
	}
	if p.PH < 0 || p.PW < 0 {
		return nil, fmt.Errorf("kernels: pool %+v: negative padding", p)
	}
	d := (*[13]C.int32_t)(C.malloc(13 * 4))
	for i, v := range []int{p.N, p.C, p.H, p.W, p.OH, p.OW, p.KH, p.KW, p.SH, p.SW, p.PH, p.PW, int(b2i(p.ExcludePad))} {
		d[i] = C.int32_t(v)
	}
	return &d[0], nil
}

// MaxPoolFwd writes each window's maximum to y and its index in the
// input's plane to arg.
func MaxPoolFwd(l Launch, x, y []float32, arg []int32, p Pool) error {
	if err := check(l, len(x), p.in(), len(y), p.out(), len(arg), p.out()); err != nil {
		return err
	}
	d, err := p.dims()
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(d))
	C.cpu_maxpool_fwd(C.int(l.Grid), C.int(l.Block), (*C.float)(fp(x)), (*C.float)(fp(y)), (*C.int32_t)(fp(arg)), d)
	return nil
}

// MaxPoolBwd writes dx from dy and MaxPoolFwd's arg (a gather).
func MaxPoolBwd(l Launch, dy []float32, arg []int32, dx []float32, p Pool) error {
	if err := check(l, len(dy), p.out(), len(arg), p.out(), len(dx), p.in()); err != nil {
		return err
	}
	d, err := p.dims()
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(d))
	C.cpu_maxpool_bwd(C.int(l.Grid), C.int(l.Block), (*C.float)(fp(dy)), (*C.int32_t)(fp(arg)), (*C.float)(fp(dx)), d)
	return nil
}

// AvgPoolFwd writes each window's average to y.
func AvgPoolFwd(l Launch, x, y []float32, p Pool) error {
	if err := check(l, len(x), p.in(), len(y), p.out()); err != nil {
		return err
	}
	d, err := p.dims()
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(d))
	C.cpu_avgpool_fwd(C.int(l.Grid), C.int(l.Block), (*C.float)(fp(x)), (*C.float)(fp(y)), d)
	return nil
}

// AvgPoolBwd writes dx from dy (a gather).
func AvgPoolBwd(l Launch, dy, dx []float32, p Pool) error {
	if err := check(l, len(dy), p.out(), len(dx), p.in()); err != nil {
		return err
	}
	d, err := p.dims()
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(d))
	C.cpu_avgpool_bwd(C.int(l.Grid), C.int(l.Block), (*C.float)(fp(dy)), (*C.float)(fp(dx)), d)
	return nil
}

// EMAUpdate folds v into the average avg with decay (first: copies v).
func EMAUpdate(l Launch, avg, v []float32, decay float32, first bool) error {
	if err := check(l, len(v), len(avg)); err != nil {
		return err
	}
	C.cpu_ema_update(C.int(l.Grid), C.int(l.Block), (*C.float)(fp(avg)), (*C.float)(fp(v)), C.int64_t(len(avg)),
		C.float(decay), b2i(first))
	return nil
}

// SwapF32 exchanges a and b.
func SwapF32(l Launch, a, b []float32) error {
	if err := check(l, len(b), len(a)); err != nil {
		return err
	}
	C.cpu_swap_f32(C.int(l.Grid), C.int(l.Block), (*C.float)(fp(a)), (*C.float)(fp(b)), C.int64_t(len(a)))
	return nil
}

// CopyF32 copies src to dst.
func CopyF32(l Launch, src, dst []float32) error {
	if err := check(l, len(dst), len(src)); err != nil {
		return err
	}
	C.cpu_copy_f32(C.int(l.Grid), C.int(l.Block), (*C.float)(fp(src)), (*C.float)(fp(dst)), C.int64_t(len(src)))
	return nil
}

// FillF32 sets every element of v to value.
func FillF32(l Launch, v []float32, value float32) error {
	if err := check(l); err != nil {
		return err
	}
	C.cpu_fill_f32(C.int(l.Grid), C.int(l.Block), (*C.float)(fp(v)), C.int64_t(len(v)), C.float(value))
	return nil
}
