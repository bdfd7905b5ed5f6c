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
// 16-bit format (Format.BNFlag); x and dx 16-bit; y and dy 16-bit; write
// ReLU(y) and mask dy so; every tensor of activations channels-last;
// write ReLU(y + s), a residual block's sum (BN.S); and that output
// rounded into a 16-bit copy (BN.Copy16).
const (
	BNReLU    = 1
	BNF16     = 2
	BNBF16    = 4
	BNX16     = 8
	BNY16     = 16
	BNReLUOut = 32
	BNNHWC    = 64
	BNAdd     = 128
	BNCopy16  = 256
)

// The residual gradient sum's flags (kernels.cu's SUM_*: add_relu_bwd_low,
// add_relu_bwd_tiles): a 16-bit, b 16-bit, bf16 (else fp16), the 16-bit
// operands channels-last.
const (
	SumA16  = 1
	SumB16  = 2
	SumBF16 = 4
	SumNHWC = 8
)

// SumGrad are the operands of a residual block's gradient sum through
// the ReLU before it with 16-bit ones (add_relu_bwd_low, _tiles): a is A16
// when that is not nil, else A; b so; both 16-bit ones in Format,
// channels-last (N×HW×C) when NHWC; Y (the ReLU's output) and DX float32
// N×C×HW, as an operand given in float32.
type SumGrad struct {
	A, B, Y, DX []float32
	A16, B16    []uint16
	Format      Format
	NHWC        bool
	N, C, HW    int
}

// Flags are the sum's kernel flags for s.
func (s SumGrad) Flags() int32 {
	return when(s.A16 != nil, SumA16) | when(s.B16 != nil, SumB16) | when(s.NHWC, SumNHWC) | s.Format.SumFlag()
}

// SumFlag is f's format flag for the residual gradient sum: SumBF16 or 0.
func (f Format) SumFlag() int32 { return when(f == BFloat16, SumBF16) }

// BNFlag is f's flag for the BatchNorm kernels: BNF16, BNBF16, or 0.
func (f Format) BNFlag() int32 {
	switch f {
	case Float16:
		return BNF16
	case BFloat16:
		return BNBF16
	}
	return 0
}

// when is flag if on, else 0.
func when(on bool, flag int32) int32 {
	if on {
		return flag
	}
	return 0
}

// BN are the tensors of BatchNorm (of ReLU(x) when ReLU): x and y NCHW;
// the rest per channel. x is X16 when that is not nil, y is written into
// Y16 when that is not nil, both in Format. Stat, when not nil, receives
// the training forward's 2·c statistics (the means, then the inverse
// standard deviations, in double) for BNGrad.Stat.
type BN struct {
	X, Y, Gamma, Beta, BatchMean, BatchVar, RunningMean, RunningVar []float32
	X16, Y16                                                        []uint16
	Stat                                                            []float64
	Format                                                          Format
	N, C, HW                                                        int
	Eps, Momentum                                                   float32
	ReLU                                                            bool // read ReLU(x): the convolution's ReLU before it
	ReLUOut                                                         bool // write ReLU(y): the ReLU layer after it
	// NHWC: x and y are N×H×W×C (the channels-last convolutions' 16-bit
	// operands); Stat then receives 5·c doubles, the backward's 1/σ at 4·c.
	NHWC bool
	// S, when not nil: y = ReLU(BatchNorm(x) + S), float32, S float32 in
	// y's layout (a residual block's sum and ReLU folded into its main
	// path's last BatchNorm: add_relu's bits). Copy16, when not nil (with
	// S): y rounded into it in Format, channels-first, or channels-last
	// with OutNCHW (the next block's convolutions' operand: add_relu_low's
	// and add_relu_tiles's bits).
	S      []float32
	Copy16 []uint16
	// OutNCHW (with NHWC): y is float32 N×C×H×W, the layout changed in
	// the BatchNorm's passes (bn_tiles_apply, bn_tiles_eval).
	OutNCHW bool
}

// Flags are the BatchNorm kernels' flags for b.
func (b BN) Flags() int32 {
	return when(b.ReLU, BNReLU) | when(b.ReLUOut, BNReLUOut) | when(b.X16 != nil, BNX16) | when(b.Y16 != nil, BNY16) |
		when(b.NHWC, BNNHWC) | when(b.S != nil, BNAdd) | when(b.Copy16 != nil, BNCopy16) | b.Format.BNFlag()
}

// StatLen is the doubles of BN.Stat (and BNGrad.Stat): 2·c, 5·c when
// nhwc.
func StatLen(c int, nhwc bool) int {
	if nhwc {
		return 5 * c
	}
	return 2 * c
}

// BNGrad are the tensors of BatchNorm's backward (bn_bwd_sum, bn_bwd_stats,
// bn_bwd_apply): DY, X, DX NCHW
// (X the forward's input: before the ReLU when ReLUIn); the rest per
// channel, BatchMean and BatchVar as the forward wrote them. When X16 is
// not nil, x is X16 and dx is written, rounded, into DX16; when DY16 is
// not nil, dy is DY16; both in Format. With ReLUOut dy is the gradient
// of ReLU(y), masked where the forward's y (computed again from Gamma,
// Beta and the forward's Stat) is not > 0.
type BNGrad struct {
	DY, X, Gamma, Beta, BatchMean, BatchVar, DX, DGamma, DBeta []float32
	X16, DX16, DY16                                            []uint16
	Stat                                                       []float64
	Format                                                     Format
	N, C, HW                                                   int
	Eps                                                        float32
	ReLUIn                                                     bool // the forward read ReLU(x): backward through the ReLU too
	ReLUOut                                                    bool // the forward wrote ReLU(y)
	NHWC                                                       bool // DY, X, DX N×H×W×C; Stat the forward's 5·c (BN.NHWC)
	OutNCHW                                                    bool // with NHWC: DY float32 N×C×H×W (BN.OutNCHW)
}

// Flags are the BatchNorm kernels' flags for b.
func (b BNGrad) Flags() int32 {
	return when(b.ReLUIn, BNReLU) | when(b.ReLUOut, BNReLUOut) | when(b.X16 != nil, BNX16) | when(b.DY16 != nil, BNY16) |
		when(b.NHWC, BNNHWC) | b.Format.BNFlag()
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
