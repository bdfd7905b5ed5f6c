// Package kernels holds the cuda backend's own kernels: one CUDA C source,
// kernels.cu, that NVRTC compiles for the device at run time and that gcc
// compiles as plain C for the CPU, so that every kernel's arithmetic is
// tested on machines without a GPU (the CPU build is the GPU's twin in the
// device check too), and the launch geometry of each.
//
// The kernels: casts fp32↔fp16 and fp32↔bf16 (round to nearest even), the
// normalisation of uint8 HWC batches to float NCHW, fused SGD (momentum,
// weight decay, Nesterov: torch.optim.SGD) over one flat buffer of
// parameters, the GradScaler's unscale and finite check (torch's
// _amp_foreach_non_finite_check_and_unscale_), softmax cross-entropy with
// label smoothing (gradient and per-row loss, top-1, top-5, then their
// per-batch sums in double), and BatchNorm in training (after a ReLU in
// ThinNet's order, or not), updating the running statistics, reduced in
// two levels (a block per plane, then a block per channel) so that a
// launch fills the device whatever the channel count. Around the
// convolutions and matrix products of cuDNN and cuBLAS, as the reference
// backend computes them: ReLU forward and backward, add, bias and fused
// ReLU in place, the bias gradient (per channel, in double), BatchNorm in
// evaluation, and its backward (with the ReLU before it in the same pass
// when the forward read ReLU(x)), max pooling (the
// argmax kept) and average pooling (both divisor rules), their backward
// as gathers over the inputs (deterministic, no atomics), and the EMA
// update, swap, copy and fill of flat weight buffers.
//
// Each kernel runs on the CPU by a typed function (ReLUFwd, BNBwd, ...) or
// by name with the GPU's 8-byte argument slots (LaunchCPU: cpu.c's
// dispatch table, checked against kernels.cu's signatures).
//
// What the two compilers share is a subset described at the top of
// kernels.cu; prelude_gpu.h and prelude_cpu.h give its macros their two
// meanings. Both compile without contraction of a*b+c (NVRTC --fmad=false,
// gcc -ffp-contract=off): an element-wise kernel is then bit-identical on
// the two, and a reduction differs only where expf and logf do (CUDA's are
// within 2 ulp).
//
// The CPU build needs cgo; without it the CPU functions return ErrNoCPU.
// Everything here is safe for concurrent use (the CPU build keeps its
// launch state per thread).
package kernels

import (
	_ "embed"
	"errors"
	"regexp"
)

// Source is kernels.cu, the kernels' bodies (without a prelude).
//
//go:embed kernels.cu
var Source string

//go:embed prelude_gpu.h
var gpuPrelude string

// GPUSource is what NVRTC compiles: the GPU prelude, then kernels.cu (line
// numbers in NVRTC's log are kernels.cu's).
func GPUSource() string { return gpuPrelude + "#line 1 \"kernels.cu\"\n" + Source }

// Tile is the side of the channels_last casts' tiles, kernels.cu's TILE
// (a test checks the two agree): a tile moves Tile channels × Tile
// positions of one image.
const Tile = 32

// TileValues is the values of one tile: a PerRow launch of the casts is
// planned with rows = CastTiles(n, c, hw) and cols = TileValues.
const TileValues = Tile * Tile

// CastTiles is the number of tiles the channels_last casts move n images
// of c channels × hw positions in (kernels.cu's cast_tiles).
func CastTiles(n, c, hw int) int { return n * ((c + Tile - 1) / Tile) * ((hw + Tile - 1) / Tile) }

// BNLanes is how many channels a block of the channels-last BatchNorm
// sums takes (kernels.cu's BN_LANES), one a thread of each BNLanes.
const BNLanes = 32

// BNGroups is the rows of a channels-last BatchNorm sum (bn_nhwc_sum,
// bn_nhwc_bwd_sum): an image's channels BNLanes at a time.
func BNGroups(n, c int) int { return n * ((c + BNLanes - 1) / BNLanes) }

// BNRuns is the rows of a channels-last BatchNorm element-wise pass
// (bn_nhwc_apply, bn_nhwc_eval, bn_nhwc_bwd_apply): runs of whole
// positions of about TileValues values (kernels.cu's bn_nhwc_runs).
func BNRuns(n, c, hw int) int {
	run := (TileValues + c - 1) / c
	return (n*hw + run - 1) / run
}

// BNKernels are the BatchNorm kernels for a set of flags and their
// PerRow launches: the sums' (forward and backward) and the element-wise
// passes' rows and row sizes.
type BNKernels struct {
	Sum, Apply, Eval, BwdSum, BwdApply string
	Sums, SumSize, Rows, RowSize       int
}

// BNLaunches are the kernels for flags fl over n×c×hw: channels-first,
// over the n·c planes; channels-last in and out (BNNHWC with BNY16),
// BNGroups and BNRuns; channels-last in and float32 channels-first out
// (BNNHWC alone: the bn_tiles kernels), BNGroups and CastTiles.
func BNLaunches(fl int32, n, c, hw int) BNKernels {
	switch {
	case fl&BNNHWC != 0 && fl&BNY16 != 0:
		return BNKernels{"bn_nhwc_sum", "bn_nhwc_apply", "bn_nhwc_eval", "bn_nhwc_bwd_sum", "bn_nhwc_bwd_apply",
			BNGroups(n, c), BNLanes * hw, BNRuns(n, c, hw), TileValues}
	case fl&BNNHWC != 0:
		return BNKernels{"bn_nhwc_sum", "bn_tiles_apply", "bn_tiles_eval", "bn_tiles_bwd_sum", "bn_tiles_bwd_apply",
			BNGroups(n, c), BNLanes * hw, CastTiles(n, c, hw), TileValues}
	}
	return BNKernels{"bn_plane_sum", "bn_apply", "bn_eval", "bn_bwd_sum", "bn_bwd_apply", n * c, hw, n * c, hw}
}

// MaxBlock is the largest block the kernels take (their SHARED arrays'
// size, kernels.cu's MAXB); a block is a power of two.
const MaxBlock = 256

// ErrNoCPU is returned by the CPU build's functions in a build without cgo.
var ErrNoCPU = errors.New("kernels: the CPU build of kernels.cu needs cgo")

// Shape says how a kernel's launch is planned.
type Shape int

const (
	Elementwise Shape = iota // grid-stride over n elements
	PerRow                   // one block per row of cols, rows striding over the grid
	PerChannel               // one block per channel of an NCHW tensor
	Single                   // one block reducing n values
)

// Kernel is one kernel of kernels.cu.
type Kernel struct {
	Name  string
	Shape Shape
}

// NormMode is normalize_u8's mode: its bits as kernels.cu defines them
// (a test reads them from the source).
type NormMode int32

const (
	NormCHW  NormMode = 1 // the bytes are planar, C×H×W an image
	NormDiv  NormMode = 2 // torchvision's arithmetic: (v/255 − mean)/std
	NormFlip NormMode = 4 // each image mirrored left to right
)

// Kernels lists every kernel of kernels.cu (a test checks the list against
// the source's KERNEL definitions).
var Kernels = []Kernel{
	{"cast_f32_f16", Elementwise},
	{"cast_f16_f32", Elementwise},
	{"cast_f32_bf16", Elementwise},
	{"cast_bf16_f32", Elementwise},
	{"cast_nchw_nhwc_f16", PerRow}, // rows: CastTiles tiles of TileValues
	{"cast_nhwc_nchw_f16", PerRow},
	{"cast_nchw_nhwc_bf16", PerRow},
	{"cast_nhwc_nchw_bf16", PerRow},
	{"normalize_u8", PerRow}, // rows: the n·c output planes
	{"sgd", Elementwise},
	{"amp_unscale", Elementwise},
	{"ce_loss", PerRow},
	{"ce_sums", Single},
	{"bn_plane_sum", PerRow}, // rows: the n·c planes
	{"bn_stats", PerRow},     // rows: the c channels, cols: their n planes
	{"bn_apply", PerRow},
	{"bn_eval", PerRow},
	{"bn_bwd_sum", PerRow},
	{"bn_bwd_stats", PerRow},
	{"bn_bwd_apply", PerRow},
	{"bn_nhwc_sum", PerRow},   // rows: BNGroups(n, c), cols: BNLanes·hw
	{"bn_nhwc_apply", PerRow}, // rows: BNRuns(n, c, hw), cols: TileValues
	{"bn_nhwc_eval", PerRow},
	{"bn_nhwc_bwd_sum", PerRow},
	{"bn_nhwc_bwd_apply", PerRow},
	{"bn_tiles_apply", PerRow}, // rows: CastTiles tiles of TileValues
	{"bn_tiles_eval", PerRow},
	{"bn_tiles_bwd_sum", PerRow}, // rows: BNGroups(n, c), cols: BNLanes·hw
	{"bn_tiles_bwd_apply", PerRow},
	{"relu_fwd", Elementwise},
	{"relu_bwd", Elementwise},
	{"add", Elementwise},
	{"add_relu", Elementwise},
	{"add_relu_bwd", Elementwise},
	{"add_relu_low", Elementwise},
	{"add_relu_tiles", PerRow}, // rows: CastTiles tiles of TileValues
	{"add_relu_bwd_low", Elementwise},
	{"add_relu_bwd_tiles", PerRow}, // rows: CastTiles tiles of TileValues
	{"bias_act", Elementwise},
	{"bias_grad", PerChannel},
	{"maxpool_fwd", PerRow}, // rows: the n·c planes of the outputs
	{"maxpool_bwd", PerRow}, // of the inputs (a gather)
	{"avgpool_fwd", PerRow},
	{"avgpool_bwd", PerRow},
	{"ema_update", Elementwise},
	{"swap_f32", Elementwise},
	{"copy_f32", Elementwise},
	{"fill_f32", Elementwise},
	{"sgd_lr", Elementwise},      // sgd with the rate in device memory (a captured step's)
	{"sgd_found", Elementwise},   // sgd_lr skipped on the device when the GradScaler's flag is set
	{"amp_update_scale", Single}, // the GradScaler's update on the device (torch's _amp_update_scale_)
}

var kernelDef = regexp.MustCompile(`(?m)^KERNEL (\w+)\(`)

// Names returns the names of the kernels kernels.cu defines (its KERNEL
// definitions), in the source's order.
func Names() []string { return defined() }

// defined returns the kernels kernels.cu defines, in order.
func defined() []string {
	var names []string
	for _, m := range kernelDef.FindAllStringSubmatch(Source, -1) {
		names = append(names, m[1])
	}
	return names
}
