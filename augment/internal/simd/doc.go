// Package simd holds augment's resize kernels written for SIMD units: the
// same fixed-point arithmetic as augment's Go kernels, reordered so that it
// runs several samples per instruction, and so the same bytes. It also
// holds the bilinear warp of RGB rows (warp.c, AVX2 only): eight output
// pixels at a time, each lane doing the Go kernel's float32 operations in
// its order (no FMA: contraction is off and the target has none), the four
// taps fetched by masked gathers; pixels with a tap outside the image are
// handed back to the caller. The same file does PIL's bilinear warp of RGB
// rows (augment's WarpPILBilinear) the same way, its lanes float64 as
// PIL's Geometry.c computes: eight pixels at a time in two vectors of
// four, each doing the Go kernel's double operations in its order;
// positions outside the picture take the fill there, and pixels on the
// border (PIL clamps their taps) go back to the caller.
//
// Horizontal pass: for each output sample group the source bytes of up to
// four taps (one channel: eight) are loaded at once, spread into 16-bit
// (tap pair, channel) lanes with pshufb and multiplied with pairs of
// weights by pmaddwd, whose 32-bit lanes then hold one channel's sum each.
// Weights that do not fit int16 (the triangle filter's 22-bit ones) are
// split as lo + hi<<15 and the two sums joined in 32 bits; every sum is the
// one the Go kernel forms, modulo 2^32 as Go's int32 wraps.
//
// One channel with at most four taps (a plane under the area filter): four
// outputs per step, their source bytes gathered into one vector, pmaddwd
// and phaddd.
//
// Vertical pass: taps outer and row samples inner, into a block of 32-bit
// accumulators, which the C compiler vectorises; for the area filter's
// 16-bit intermediate, whose weights fit int16, pairs of rows are
// interleaved and multiplied by pmaddwd over all of an output row's taps,
// 16 samples at a time in registers.
//
// The kernels are C (resize.c, kern.h) compiled once for SSSE3 and once for
// AVX2 and chosen at run time from CPUID; neither is needed to build. Resize
// reports false, having written nothing to the destination, when it cannot
// do a job: without cgo (simd_nocgo.go), on a CPU without SSSE3 or not x86,
// or for weights or shifts outside the ranges above. The caller then runs
// its Go kernels, which give the same bytes.
//
// C only reads and writes the caller's buffers during a call and keeps no
// pointer. One call does a whole image, because a cgo call costs about as
// much as resampling a hundred samples.
package simd
