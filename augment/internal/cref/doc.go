// Package cref is the C build of augment's resize kernels: the same
// fixed-point arithmetic, loop for loop, compiled by the C compiler with
// -O3. It exists to measure the Go kernels against C in
// the same run (augment's BenchmarkKernelVsC) and to check that both give
// the same bytes; nothing in the library calls it. Without cgo the
// package is empty.
package cref
