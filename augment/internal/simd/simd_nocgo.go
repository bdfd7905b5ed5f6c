//go:build !cgo

package simd

// Resize reports false: without cgo there are no SIMD kernels, and the
// caller runs its Go kernels, which give the same bytes.
func Resize(j *Job) bool {
	_ = j.valid
	return false
}

// SetLevel does nothing: there are no kernels to limit.
func SetLevel(level int) {}

// WarpBilinear3 reports false: without cgo the caller runs its Go kernel.
func WarpBilinear3(out, src []byte, colX, colY []float32, rowX, rowY, cx, cy, sw, sh float32, w, h int, fill *[3]float32, slow []int32) (nslow int, ok bool) {
	return 0, false
}

// WarpPILBilinear3 reports false: without cgo the caller runs its Go kernel.
func WarpPILBilinear3(out, src []byte, a0, a2, a3, a5, rowX, rowY float64, w, h int, fill *[3]byte, slow []int32) (nslow int, ok bool) {
	return 0, false
}
