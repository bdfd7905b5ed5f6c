//go:build !cgo

package kernels

// Without cgo there is no CPU build of kernels.cu: every function returns
// ErrNoCPU (the NVRTC source and the plans need no cgo).

func CastF32F16(Launch, []float32, []uint16) error  { return ErrNoCPU }
func CastF16F32(Launch, []uint16, []float32) error  { return ErrNoCPU }
func CastF32BF16(Launch, []float32, []uint16) error { return ErrNoCPU }
func CastBF16F32(Launch, []uint16, []float32) error { return ErrNoCPU }
func NormalizeU8(Launch, []uint8, []float32, []float32, []float32, int, int, int, int) error {
	return ErrNoCPU
}
func SGD(Launch, []float32, []float32, []float32, SGDArgs) error { return ErrNoCPU }
func AMPUnscale(Launch, []float32, *float32, float32) error      { return ErrNoCPU }
func CELoss(Launch, []float32, []int32, []float32, []float32, int, int, float32, float32) error {
	return ErrNoCPU
}
func CESums(Launch, []float32, int, *[3]float64) error { return ErrNoCPU }
func ReLUBNTrain(Launch, BN) error                     { return ErrNoCPU }

func LaunchCPU(string, Launch, []uint64) error { return ErrNoCPU }

func dispatchTable() map[string]string { return nil }
