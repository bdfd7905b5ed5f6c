package kernels

// SGDArgs are the hyper-parameters of one SGD step.
type SGDArgs struct {
	LR, Momentum, WeightDecay float32
	Nesterov                  bool
	First                     bool // the first step: the velocity is the gradient
}

// Format is a 16-bit format BatchNorm's tensors may be in: the values a
// convolution wrote, or will read, as they are (train.LowInputOp,
// train.LowOutputOp).
type Format uint8

const (
	Float32 Format = iota
	Float16
	BFloat16
)

// The BatchNorm kernels' flags (kernels.cu's BN_*): read ReLU(x); the
// 16-bit format; x and dx 16-bit; y and dy 16-bit.
const (
	BNReLU = 1
	BNF16  = 2
	BNBF16 = 4
	BNX16  = 8
	BNY16  = 16
)

// BNFlags are the flags of the BatchNorm kernels over ReLU(x) when relu,
// x (and dx) in f when x16, y (and dy) in f when y16.
func BNFlags(f Format, relu, x16, y16 bool) int32 {
	var fl int32
	if relu {
		fl |= BNReLU
	}
	if x16 {
		fl |= BNX16
	}
	if y16 {
		fl |= BNY16
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
// the rest per channel. x is X16 when that is not nil, y is written into
// Y16 when that is not nil, both in Format.
type BN struct {
	X, Y, Gamma, Beta, BatchMean, BatchVar, RunningMean, RunningVar []float32
	X16, Y16                                                        []uint16
	Format                                                          Format
	N, C, HW                                                        int
	Eps, Momentum                                                   float32
	ReLU                                                            bool // read ReLU(x): the convolution's ReLU before it
}

// BNGrad are the tensors of BatchNorm's backward (bn_bwd_sum, bn_bwd_stats,
// bn_bwd_apply): DY, X, DX NCHW
// (X the forward's input: before the ReLU when ReLUIn); the rest per
// channel, BatchMean and BatchVar as the forward wrote them. When X16 is
// not nil, x is X16 and dx is written, rounded, into DX16; when DY16 is
// not nil, dy is DY16; both in Format.
type BNGrad struct {
	DY, X, Gamma, BatchMean, BatchVar, DX, DGamma, DBeta []float32
	X16, DX16, DY16                                      []uint16
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
