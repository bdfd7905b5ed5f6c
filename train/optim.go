package train

import "math"

// SGD is stochastic gradient descent with momentum and weight decay, with
// PyTorch's semantics (torch.optim.SGD, dampening 0):
//
//	g = grad + WeightDecay·w
//	v = Momentum·v + g   (v = g on the first step)
//	w = w − lr·v          (Nesterov: w = w − lr·(g + Momentum·v))
type SGD struct {
	Momentum    float32
	WeightDecay float32
	// Nesterov uses Nesterov momentum (torch.optim.SGD(nesterov=True)).
	Nesterov bool
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
	if o.Nesterov {
		// g + Momentum·v, with g recomputed from the weights before the
		// update (they change only below).
		for i, p := range params {
			for j, v := range o.Velocity[i] {
				g := p.Grad[j] + o.WeightDecay*p.Value[j]
				p.Value[j] -= lr * (g + o.Momentum*v)
			}
		}
		return
	}
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

// WarmupStep is the study's ImageNet schedule: the rate rises linearly to
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

// OneCycle is torch.optim.lr_scheduler.OneCycleLR with its defaults for
// the shape (anneal_strategy "cos", three_phase false) and
// cycle_momentum=False (the momentum stays the optimiser's): over
// TotalSteps steps the rate rises from Max/DivFactor to Max along half a
// cosine in the first PctStart of the steps (the warm-up), then falls to
// Max/DivFactor/FinalDivFactor along another. Step k (from 0) trains at
// torch's rate for step_num k: the trainer asks for the rate of a step
// at its end, at epoch (k+1)/StepsPerEpoch, which LR maps back to k.
type OneCycle struct {
	Max            float64
	TotalSteps     int
	StepsPerEpoch  int
	PctStart       float64 // torch's default 0.3
	DivFactor      float64 // 25
	FinalDivFactor float64 // 1e4
}

// LR implements Schedule.
func (s OneCycle) LR(epoch float64) float64 {
	return s.At(int(math.Round(epoch*float64(s.StepsPerEpoch))) - 1)
}

// At is the rate of step k (from 0; steps past the end train at the
// final rate, where torch raises an error).
func (s OneCycle) At(k int) float64 {
	k = max(0, min(k, s.TotalSteps-1))
	initial := s.Max / s.DivFactor
	final := initial / s.FinalDivFactor
	cos := func(start, end, pct float64) float64 { return end + (start-end)/2*(math.Cos(math.Pi*pct)+1) }
	warmEnd := s.PctStart*float64(s.TotalSteps) - 1
	end := float64(s.TotalSteps - 1)
	switch {
	case float64(k) <= warmEnd && warmEnd > 0:
		return cos(initial, s.Max, float64(k)/warmEnd)
	case float64(k) <= warmEnd || end <= warmEnd: // a warm-up of at most one step (torch divides by zero)
		return s.Max
	}
	return cos(s.Max, final, (float64(k)-warmEnd)/(end-warmEnd))
}
