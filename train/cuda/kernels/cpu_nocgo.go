//go:build !cgo

package kernels

// Without cgo there is no CPU build of kernels.cu: every function returns
// ErrNoCPU (the NVRTC source and the plans need no cgo).

func CastF32F16(Launch, []float32, []uint16) error  { return ErrNoCPU }
func CastF16F32(Launch, []uint16, []float32) error  { return ErrNoCPU }
func CastF32BF16(Launch, []float32, []uint16) error { return ErrNoCPU }
func CastBF16F32(Launch, []uint16, []float32) error { return ErrNoCPU }
func NormalizeU8(Launch, []uint8, []float32, []float32, []float32, int, int, int, int, NormMode) error {
	return ErrNoCPU
}
func SGD(Launch, []float32, []float32, []float32, SGDArgs) error { return ErrNoCPU }
func AMPUnscale(Launch, []float32, *float32, float32) error      { return ErrNoCPU }
func CELoss(Launch, []float32, []int32, []float32, []float32, int, int, float32, float32) error {
	return ErrNoCPU
}
func CESums(Launch, []float32, int, *[3]float64) error { return ErrNoCPU }

func LaunchCPU(string, Launch, []uint64) error { return ErrNoCPU }

// HasCPUBuild reports whether this build has kernels.cu's CPU build (cgo).
const HasCPUBuild = false

// SetSchedule changes nothing without the CPU build.
func SetSchedule(Schedule) Schedule { return Forward }

func dispatchTable() map[string]string { return nil }

func BNTrain(Facts, BN) error                               { return ErrNoCPU }
func BNEval(Launch, BN) error                               { return ErrNoCPU }
func BNBwd(Facts, BNGrad) error                             { return ErrNoCPU }
func ReLUFwd(Launch, []float32, []float32) error            { return ErrNoCPU }
func ReLUBwd(Launch, []float32, []float32, []float32) error { return ErrNoCPU }
func Add(Launch, []float32, []float32, []float32) error     { return ErrNoCPU }
func AddReLU(Launch, []float32, []float32, []float32) error { return ErrNoCPU }
func AddReLUBwdLow(Facts, SumGrad) error                    { return ErrNoCPU }
func AddReLULow(Facts, []float32, []float32, []float32, []uint16, Format, bool, int, int, int) error {
	return ErrNoCPU
}
func AddReLUBwd(Launch, []float32, []float32, []float32, []float32) error { return ErrNoCPU }
func BiasAct(Launch, []float32, []float32, int, int, bool) error          { return ErrNoCPU }
func BiasGrad(Launch, []float32, []float32, int, int, int) error          { return ErrNoCPU }
func MaxPoolFwd(Launch, []float32, []float32, []int32, Pool) error        { return ErrNoCPU }
func MaxPoolBwd(Launch, []float32, []int32, []float32, Pool) error        { return ErrNoCPU }
func AvgPoolFwd(Launch, []float32, []float32, Pool) error                 { return ErrNoCPU }
func AvgPoolBwd(Launch, []float32, []float32, Pool) error                 { return ErrNoCPU }
func EMAUpdate(Launch, []float32, []float32, float32, bool) error         { return ErrNoCPU }
func SwapF32(Launch, []float32, []float32) error                          { return ErrNoCPU }
func CopyF32(Launch, []float32, []float32) error                          { return ErrNoCPU }
func FillF32(Launch, []float32, float32) error                            { return ErrNoCPU }

// bnNHWCRuns is kernels.cu's bn_nhwc_runs in the CPU build; none here.
func bnNHWCRuns(int, int, int) int { return -1 }

func raceKernel(int, Launch, []float32, []float32, int, bool) error { return ErrNoCPU }
