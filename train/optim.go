package train

import "math"

// SGD is stochastic gradient descent with momentum and weight decay, with
// PyTorch's semantics (torch.optim.SGD, dampening 0, not Nesterov):
//
//	g = grad + WeightDecay·w
//	v = Momentum·v + g   (v = g on the first step)
//	w = w − lr·v
type SGD struct {
	Momentum    float32
	WeightDecay float32
	// Velocity holds the momentum buffers, by parameter, once Step ran.
	Velocity [][]float32
}

// Step updates params with learning rate lr.
func (o *SGD) Step(params []*Param, lr float64) {
	if o.Momentum != 0 && o.Velocity == nil {
		o.Velocity = make([][]float32, len(params))
		for i, p := range params {
			o.Velocity[i] = make([]float32, len(p.Value))
		}
		for i, p := range params {
			v := o.Velocity[i]
			for j, g := range p.Grad {
				v[j] = g + o.WeightDecay*p.Value[j]
			}
		}
		o.apply(params, float32(lr))
		return
	}
	if o.Momentum == 0 {
		for _, p := range params {
			for j, g := range p.Grad {
				p.Value[j] -= float32(lr) * (g + o.WeightDecay*p.Value[j])
			}
		}
		return
	}
	for i, p := range params {
		v := o.Velocity[i]
		for j, g := range p.Grad {
			v[j] = o.Momentum*v[j] + g + o.WeightDecay*p.Value[j]
		}
	}
	o.apply(params, float32(lr))
}

func (o *SGD) apply(params []*Param, lr float32) {
	for i, p := range params {
		for j, v := range o.Velocity[i] {
			p.Value[j] -= lr * v
		}
	}
}

// Schedule gives the learning rate at a point of training measured in
// epochs (fractional within an epoch).
type Schedule interface {
	LR(epoch float64) float64
}

// Constant is a fixed learning rate.
type Constant float64

func (c Constant) LR(float64) float64 { return float64(c) }

// WarmupStep is the seed's ImageNet schedule: the rate rises linearly to
// Base over the first WarmupEpochs (Base·epoch/WarmupEpochs; the trainer
// asks at the end of each step, so the first step is not at rate 0), then
// is multiplied by Gamma every StepEpochs epochs (StepEpochs 0: never).
type WarmupStep struct {
	Base         float64
	WarmupEpochs float64
	StepEpochs   float64
	Gamma        float64
}

func (s WarmupStep) LR(epoch float64) float64 {
	if s.WarmupEpochs > 0 && epoch < s.WarmupEpochs {
		return s.Base * epoch / s.WarmupEpochs
	}
	if s.StepEpochs <= 0 {
		return s.Base
	}
	return s.Base * math.Pow(s.Gamma, math.Floor(epoch/s.StepEpochs))
}
