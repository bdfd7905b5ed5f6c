package kernels

// SGDArgs are the hyper-parameters of one SGD step.
type SGDArgs struct {
	LR, Momentum, WeightDecay float32
	Nesterov                  bool
	First                     bool // the first step: the velocity is the gradient
}

// BN are the tensors of BatchNorm (of ReLU(x) when ReLU): x and y NCHW;
// the rest per channel.
type BN struct {
	X, Y, Gamma, Beta, BatchMean, BatchVar, RunningMean, RunningVar []float32
	N, C, HW                                                        int
	Eps, Momentum                                                   float32
	ReLU                                                            bool // read ReLU(x): the convolution's ReLU before it
}

// BNGrad are the tensors of BatchNorm's backward (bn_bwd_sum, bn_bwd_stats,
// bn_bwd_apply): DY, X, DX NCHW
// (X the forward's input: before the ReLU when ReLUIn); the rest per
// channel, BatchMean and BatchVar as the forward wrote them.
type BNGrad struct {
	DY, X, Gamma, BatchMean, BatchVar, DX, DGamma, DBeta []float32
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
