package fit

import (
	"fmt"
	"math"

	"github.com/faster-training/faster/train"
)

// ProgressiveSchedule is the automatic resolution schedule: from 70% of
// full (rounded to even) at the first epoch up to full at the last,
// linearly, each side rounded to even.
func ProgressiveSchedule(full, epochs int) []int {
	if epochs <= 1 {
		return []int{full}
	}
	even := func(v float64) int { return 2 * int(math.Round(v/2)) }
	lo := even(0.7 * float64(full))
	out := make([]int, epochs)
	for i := range out {
		out[i] = min(full, even(float64(lo)+float64(full-lo)*float64(i)/float64(epochs-1)))
	}
	out[epochs-1] = full
	return out
}

// resolutionAt is epoch e's (0-based) training side under schedule s.
func resolutionAt(s []int, e, full int) int {
	if len(s) == 0 {
		return full
	}
	return s[min(e, len(s)-1)]
}

// newSchedule builds the learning-rate schedule of c for an epoch of
// steps steps.
func (c *Config) newSchedule(steps int) train.Schedule {
	o := c.Optim
	switch c.scheduleName() {
	case "onecycle":
		return train.OneCycle{Max: o.LR, TotalSteps: c.Epochs * steps, StepsPerEpoch: steps, PctStart: o.PctStart,
			DivFactor: o.DivFactor, FinalDivFactor: o.FinalDivFactor}
	case "step":
		return train.WarmupStep{Base: o.LR, WarmupEpochs: o.Warmup, StepEpochs: o.StepEpochs, Gamma: o.Gamma}
	}
	return train.Constant(o.LR)
}

// scheduleName is the schedule newSchedule builds.
func (c *Config) scheduleName() string {
	o := c.Optim
	if o.Schedule == "" {
		if o.Warmup > 0 || o.StepEpochs > 0 {
			return "step"
		}
		return "constant"
	}
	return o.Schedule
}

// minRate is the smallest learning rate a training step can use: the
// smallest normal float32 (the optimiser's rate is a float32; below it the
// rate is a subnormal or 0, and the step trains at rate 0).
const minRate = 0x1p-126

// checkSchedule refuses a learning-rate schedule that, over epochs of
// steps steps, leaves float32's normal range (a step training at rate 0,
// or at a rate that overflows), or that decays more often than once a
// step: a *ConfigError naming the flag and the values it may take
// (before: --step-epochs 1e-300 trained the whole run at rate 0, exit 0).
// The rates of a schedule are monotone between the first step, the end of
// the warm-up and the last step, so the first and last steps' rates bound
// them all (and the rate, checked with the other settings, the rest).
func (c *Config) checkSchedule(steps int) error {
	if steps < 1 {
		return nil
	}
	o := c.Optim
	inRange := func(r float64) bool { return r >= minRate && r <= math.MaxFloat32 }
	span := fmt.Sprintf("%d epoch(s) of %d steps", c.Epochs, steps)
	normal := fmt.Sprintf("[%.3g, %.3g]", minRate, math.MaxFloat32)
	if !inRange(o.LR) {
		return configErrorf("optim.lr", "%g: want a rate in %s (float32's normal range: below it a step trains at rate 0)", o.LR, normal)
	}
	switch sched := c.newSchedule(steps).(type) {
	case train.WarmupStep:
		if s := o.StepEpochs; s > 0 {
			if step := 1 / float64(steps); s < step {
				return configErrorf("optim.step_epochs", "%g: shorter than one step (%g epoch here, %d steps an epoch): want 0 (never) or at least %g", s, step, steps, step)
			}
			if last := sched.LR(float64(c.Epochs)); !inRange(last) {
				// The most decays the rate stays in range for, and the
				// shortest period that decays no more over the run.
				bound := minRate
				if o.Gamma > 1 {
					bound = math.MaxFloat32
				}
				d := math.Floor(math.Log(bound/o.LR) / math.Log(o.Gamma))
				return configErrorf("optim.step_epochs", "%g with optim.gamma %g decays optim.lr %g %g times over %s, to %.3g (outside float32's normal range %s: training at rate 0 or overflowing): want 0 (never) or a period above %.4g epochs",
					s, o.Gamma, o.LR, math.Floor(float64(c.Epochs)/s), span, last, normal, float64(c.Epochs)/(d+1))
			}
		}
		if w := o.Warmup; w > 0 {
			if first := sched.LR(1 / float64(steps)); !inRange(first) {
				return configErrorf("optim.warmup", "%g: the first step's rate is %.3g, below %.3g (float32's smallest normal number: training at rate 0): want a warm-up of at most %.4g epochs",
					w, first, minRate, o.LR/float64(steps)/minRate)
			}
		}
	case train.OneCycle:
		first, final := o.LR/o.DivFactor, o.LR/o.DivFactor/o.FinalDivFactor
		if !inRange(first) || !inRange(final) {
			return configErrorf("optim.div_factor", "%g and optim.final_div_factor %g: optim.lr %g starts at %.3g and ends at %.3g, outside float32's normal range %s (training at rate 0 or overflowing): want optim.lr/optim.div_factor and optim.lr/optim.div_factor/optim.final_div_factor in that range",
				o.DivFactor, o.FinalDivFactor, o.LR, first, final, normal)
		}
	}
	return nil
}
