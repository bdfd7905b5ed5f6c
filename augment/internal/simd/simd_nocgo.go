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
