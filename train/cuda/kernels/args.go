package kernels

// SGDArgs are the hyper-parameters of one SGD step.
type SGDArgs struct {
	LR, Momentum, WeightDecay float32
	Nesterov                  bool
	First                     bool // the first step: the velocity is the gradient
}

// Format is the format of BatchNorm's input x and of its backward's dx:
// float32, or the 16-bit values a convolution wrote, read and written as
// they are (train.LowInputBatchNormOp).
type Format uint8

const (
	Float32 Format = iota
	Float16
	BFloat16
)

// The BatchNorm kernels' flags (kernels.cu's BN_*): read ReLU(x); x (and
// dx) binary16 or bfloat16.
const (
	BNReLU = 1
	BNF16  = 2
	BNBF16 = 4
)

// BNFlags are the flags of the BatchNorm kernels over x in format f, of
// ReLU(x) when relu.
func BNFlags(f Format, relu bool) int32 {
	var fl int32
	if relu {
		fl |= BNReLU
	}
	switch f {
	case Float16:
		fl |= BNF16
	case BFloat16:
		fl |= BNBF16
	}
	return fl
}

// BN are the tensors of BatchNorm (of ReLU(x) when ReLU): x and y NCHW;
// the rest per channel. x is X, or X16 when Format is 16-bit.
type BN struct {
	X, Y, Gamma, Beta, BatchMean, BatchVar, RunningMean, RunningVar []float32
	X16                                                             []uint16
	Format                                                          Format
	N, C, HW                                                        int
	Eps, Momentum                                                   float32
	ReLU                                                            bool // read ReLU(x): the convolution's ReLU before it
}

// BNGrad are the tensors of BatchNorm's backward (bn_bwd_sum, bn_bwd_stats,
// bn_bwd_apply): DY, X, DX NCHW
// (X the forward's input: before the ReLU when ReLUIn); the rest per
// channel, BatchMean and BatchVar as the forward wrote them. When Format
// is 16-bit, x is X16 and dx is written, rounded, into DX16.
type BNGrad struct {
	DY, X, Gamma, BatchMean, BatchVar, DX, DGamma, DBeta []float32
	X16, DX16                                            []uint16
	Format                                               Format
	N, C, HW                                             int
	Eps                                                  float32
	ReLUIn                                               bool // the forward read ReLU(x): backward through the ReLU too
}

// Pool are a pooling's dimensions: input N×C×H×W, output OH×OW, window
// KH×KW, stride SH×SW, padding PH×PW (train.PoolSpec; OH and OW as
// train.ConvOut gives them).
type Pool struct {
	N, C, H, W, OH, OW, KH, KW, SH, SW, PH, PW int
	ExcludePad                                 bool // average over the valid elements only
}

func (p Pool) in() int  { return p.N * p.C * p.H * p.W }
func (p Pool) out() int { return p.N * p.C * p.OH * p.OW }
