//go:build !cgo

package kernels

// RunCPU needs cgo (resize.cu built by gcc).
func RunCPU(b *Batch, src, u8 []byte, f32 []float32, lut []float32) error { return ErrNoCPU }

// SetReverse changes nothing without the CPU build.
func SetReverse(bool) bool { return false }
