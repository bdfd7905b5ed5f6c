// Package kernels holds the GPU decode's own kernels: one CUDA C source,
// resize.cu, that NVRTC compiles for the device at run time and gcc
// compiles as plain C for the CPU, so that every byte they write is
// tested on machines without a GPU; and the host's side of them (Plan:
// Pillow's weight tables and the batch's descriptors, computed as package
// augment computes them, so that the kernels give augment's bytes).
//
// The kernels: resize_h (the horizontal pass over the rows a batch's
// images need), resize_v_u8 and resize_v_f32 (the vertical pass into
// uint8 HWC rows, or float32 CHW rows normalised through NormLUT).
// It follows train/cuda/kernels' pattern (one source, two preludes); it
// has its own preludes because its grid is 2-D (y: the batch's image).
//
// The CPU build needs cgo; without it RunCPU returns ErrNoCPU. Everything
// here is safe for concurrent use.
package kernels

import (
	_ "embed"
	"errors"
	"regexp"
)

// Source is resize.cu, the kernels' bodies (without a prelude).
//
//go:embed resize.cu
var Source string

//go:embed prelude_gpu.h
var gpuPrelude string

// GPUSource is what NVRTC compiles: the GPU prelude, then resize.cu (line
// numbers in NVRTC's log are resize.cu's).
func GPUSource() string { return gpuPrelude + "#line 1 \"resize.cu\"\n" + Source }

// Names lists the kernels of resize.cu (a test checks it against the source).
var Names = []string{"resize_h", "resize_v_u8", "resize_v_f32"}

// ErrNoCPU is RunCPU's error in a build without cgo.
var ErrNoCPU = errors.New("nvjpeg/kernels: the CPU build of resize.cu needs cgo")

var kernelDef = regexp.MustCompile(`(?m)^KERNEL (\w+)\(`)

func defined() []string {
	var names []string
	for _, m := range kernelDef.FindAllStringSubmatch(Source, -1) {
		names = append(names, m[1])
	}
	return names
}

// Block is the threads per block of every launch.
const Block = 256

// Launch is GX blocks of Block threads per image, for GY images: a 1-D
// grid of GX*GY blocks (every kernel's first argument is GX).
type Launch struct{ GX, GY int }

// Launches are the grids of the horizontal and vertical passes of b.
func (b *Batch) Launches() (h, v Launch) {
	n := len(b.Desc) / NDesc
	most := int64(0)
	for i := range n {
		most = max(most, b.Desc[i*NDesc+3])
	}
	grid := func(elems int64) int { return int(min(max((elems+Block-1)/Block, 1), 64)) }
	return Launch{grid(most * int64(b.OutW*b.Ch)), n}, Launch{grid(int64(b.OutW * b.OutH * b.Ch)), n}
}
