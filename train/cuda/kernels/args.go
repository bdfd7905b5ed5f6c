package kernels

// SGDArgs are the hyper-parameters of one SGD step.
type SGDArgs struct {
	LR, Momentum, WeightDecay float32
	Nesterov                  bool
	First                     bool // the first step: the velocity is the gradient
}

// BN are the tensors of ReLU→BatchNorm: x and y NCHW; the rest per channel.
type BN struct {
	X, Y, Gamma, Beta, BatchMean, BatchVar, RunningMean, RunningVar []float32
	N, C, HW                                                        int
	Eps, Momentum                                                   float32
}
