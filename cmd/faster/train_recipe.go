package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/faster-training/faster/train"
)

// The fast recipe (`faster train --recipe fast`) and its parts, each its
// own flag: one-cycle learning rate with warm-up, label smoothing,
// Nesterov momentum, progressive resizing, an EMA of the weights for
// evaluation and flip test-time augmentation.

// fastRecipe is what --recipe fast sets, flag by flag, where the command
// line does not set the flag itself. resolution-schedule is filled from
// the data and --epochs (progressiveSchedule).
var fastRecipe = []struct{ flag, value string }{
	{"schedule", "onecycle"},
	{"lr", "0.2"},
	{"weight-decay", "5e-4"},
	{"label-smoothing", "0.1"},
	{"nesterov", "true"},
	{"ema", "0.99"},
	{"ema-warmup", "true"},
	{"tta", "flip"},
	{"resolution-schedule", "auto"},
}

func addRecipeFlags(f *pflag.FlagSet, o *trainOptions) {
	f.StringVar(&o.recipe, "recipe", "", `"fast": `+recipeText()+` (flags given explicitly win)`)
	f.StringVar(&o.schedule, "schedule", "", "learning-rate schedule: constant, step (--warmup, --step-epochs, --gamma) or onecycle (torch's OneCycleLR: --lr is the peak; default: step when --warmup or --step-epochs is set, else constant)")
	f.Float64Var(&o.pctStart, "pct-start", 0.3, "onecycle: fraction of the steps spent warming up")
	f.Float64Var(&o.divFactor, "div-factor", 25, "onecycle: the first rate is --lr / this")
	f.Float64Var(&o.finalDivFactor, "final-div-factor", 1e4, "onecycle: the last rate is the first / this")
	f.Float64Var(&o.labelSmoothing, "label-smoothing", 0, "label smoothing ε of the loss (nn.CrossEntropyLoss(label_smoothing=ε))")
	f.BoolVar(&o.nesterov, "nesterov", false, "Nesterov momentum (torch.optim.SGD(nesterov=True))")
	f.Float64Var(&o.ema, "ema", 0, "evaluate an exponential moving average of the weights and BatchNorm statistics with this decay per step (AveragedModel(use_buffers=True)); 0: off")
	f.BoolVar(&o.emaWarmup, "ema-warmup", false, "with --ema: decay update n+1 by min(decay, (1+n)/(10+n)), as TensorFlow's ExponentialMovingAverage(num_updates), so the average forgets the untrained start")
	f.StringVar(&o.tta, "tta", "none", "test-time augmentation: none or flip (mean of the logits of each image and its mirror)")
	f.StringVar(&o.resSchedule, "resolution-schedule", "", "progressive resizing: training resolution per epoch, e.g. 20,24,28 (the last for the remaining epochs; the test split stays at full resolution); auto: from 70% of full up to full at the last epoch. IDX images are resized with antialiased bilinear filtering")
	f.IntVar(&o.evalEvery, "eval-every", 0, "also evaluate on the test split every N steps (0: after each epoch only); the curve goes into --json")
	f.Float64Var(&o.targetAccuracy, "target-accuracy", 0, "stop once a test evaluation reaches this top-1 accuracy (a fraction, e.g. 0.92) and report the training seconds it took")
}

func recipeText() string {
	var s []string
	for _, r := range fastRecipe {
		s = append(s, "--"+r.flag+" "+r.value)
	}
	return strings.Join(s, " ")
}

// applyRecipe sets the recipe's flags that were not given.
func applyRecipe(f *pflag.FlagSet, o *trainOptions) error {
	switch o.recipe {
	case "":
		return nil
	case "fast":
	default:
		return usagef("--recipe %q: want fast", o.recipe)
	}
	for _, r := range fastRecipe {
		if !f.Changed(r.flag) {
			if err := f.Set(r.flag, r.value); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkRecipe validates the recipe's flags.
func checkRecipe(o trainOptions) []string {
	var problems []string
	switch o.schedule {
	case "", "constant", "step", "onecycle":
	default:
		problems = append(problems, fmt.Sprintf("--schedule %q: want constant, step or onecycle", o.schedule))
	}
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	if bad(o.pctStart) || o.pctStart <= 0 || o.pctStart >= 1 {
		problems = append(problems, fmt.Sprintf("--pct-start %g: want a fraction in (0, 1)", o.pctStart))
	}
	if bad(o.divFactor) || o.divFactor <= 0 || bad(o.finalDivFactor) || o.finalDivFactor <= 0 {
		problems = append(problems, "--div-factor and --final-div-factor must be positive finite numbers")
	}
	if bad(o.labelSmoothing) || o.labelSmoothing < 0 || o.labelSmoothing > 1 {
		problems = append(problems, fmt.Sprintf("--label-smoothing %g: want a value in [0, 1]", o.labelSmoothing))
	}
	if o.nesterov && o.momentum <= 0 {
		problems = append(problems, "--nesterov needs a positive --momentum (as torch.optim.SGD)")
	}
	if bad(o.ema) || o.ema < 0 || o.ema >= 1 {
		problems = append(problems, fmt.Sprintf("--ema %g: want a decay in [0, 1)", o.ema))
	}
	if o.tta != "none" && o.tta != "flip" {
		problems = append(problems, fmt.Sprintf("--tta %q: want none or flip", o.tta))
	}
	if _, err := parseResSchedule(o.resSchedule); err != nil {
		problems = append(problems, err.Error())
	}
	if o.evalEvery < 0 {
		problems = append(problems, "--eval-every must not be negative")
	}
	if bad(o.targetAccuracy) || o.targetAccuracy < 0 || o.targetAccuracy > 1 {
		problems = append(problems, fmt.Sprintf("--target-accuracy %g: want a fraction in [0, 1], e.g. 0.92", o.targetAccuracy))
	}
	return problems
}

// parseResSchedule parses --resolution-schedule: nil for none, and
// []int{0} for auto (filled in by progressiveSchedule).
func parseResSchedule(s string) ([]int, error) {
	switch s {
	case "":
		return nil, nil
	case "auto":
		return []int{0}, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 8 || v > 4096 {
			return nil, usagef("--resolution-schedule %q: want sides between 8 and 4096, comma-separated, or auto", s)
		}
		out = append(out, v)
	}
	return out, nil
}

// progressiveSchedule is the automatic resolution schedule: from 70% of
// full (rounded to even) at the first epoch up to full at the last,
// linearly, each side rounded to even.
func progressiveSchedule(full, epochs int) []int {
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

// newSchedule builds the learning-rate schedule of o for an epoch of
// steps steps.
func newSchedule(o trainOptions, steps int) train.Schedule {
	switch {
	case o.schedule == "onecycle":
		return train.OneCycle{Max: o.lr, TotalSteps: o.epochs * steps, StepsPerEpoch: steps, PctStart: o.pctStart,
			DivFactor: o.divFactor, FinalDivFactor: o.finalDivFactor}
	case o.schedule == "step" || (o.schedule == "" && (o.warmup > 0 || o.stepEpochs > 0)):
		return train.WarmupStep{Base: o.lr, WarmupEpochs: o.warmup, StepEpochs: o.stepEpochs, Gamma: o.gamma}
	}
	return train.Constant(o.lr)
}

// scheduleName is the schedule newSchedule builds.
func scheduleName(o trainOptions) string {
	if o.schedule == "" {
		if o.warmup > 0 || o.stepEpochs > 0 {
			return "step"
		}
		return "constant"
	}
	return o.schedule
}

// minRate is the smallest learning rate a training step can use: the
// smallest normal float32 (the optimiser's rate is a float32; below it the
// rate is a subnormal or 0, and the step trains at rate 0).
const minRate = 0x1p-126

// checkSchedule refuses a learning-rate schedule that, over epochs of
// steps steps, leaves float32's normal range (a step training at rate 0,
// or at a rate that overflows), or that decays more often than once a
// step: a usage error naming the flag and the values it may take (before:
// --step-epochs 1e-300 trained the whole run at rate 0, exit 0). The
// rates of a schedule are monotone between the first step, the end of
// the warm-up and the last step, so the first and last steps' rates bound
// them all (and --lr, checked with the other flags, the rest).
func checkSchedule(o trainOptions, steps int) error {
	if steps < 1 {
		return nil
	}
	inRange := func(r float64) bool { return r >= minRate && r <= math.MaxFloat32 }
	span := fmt.Sprintf("%d epoch(s) of %d steps", o.epochs, steps)
	normal := fmt.Sprintf("[%.3g, %.3g]", minRate, math.MaxFloat32)
	if !inRange(o.lr) {
		return usagef("--lr %g: want a rate in %s (float32's normal range: below it a step trains at rate 0)", o.lr, normal)
	}
	switch sched := newSchedule(o, steps).(type) {
	case train.WarmupStep:
		if s := o.stepEpochs; s > 0 {
			if step := 1 / float64(steps); s < step {
				return usagef("--step-epochs %g: shorter than one step (%g epoch here, %d steps an epoch): want 0 (never) or at least %g", s, step, steps, step)
			}
			if last := sched.LR(float64(o.epochs)); !inRange(last) {
				// The most decays the rate stays in range for, and the
				// shortest period that decays no more over the run.
				bound := minRate
				if o.gamma > 1 {
					bound = math.MaxFloat32
				}
				d := math.Floor(math.Log(bound/o.lr) / math.Log(o.gamma))
				return usagef("--step-epochs %g with --gamma %g decays --lr %g %g times over %s, to %.3g (outside float32's normal range %s: training at rate 0 or overflowing): want 0 (never) or a period above %.4g epochs",
					s, o.gamma, o.lr, math.Floor(float64(o.epochs)/s), span, last, normal, float64(o.epochs)/(d+1))
			}
		}
		if w := o.warmup; w > 0 {
			if first := sched.LR(1 / float64(steps)); !inRange(first) {
				return usagef("--warmup %g: the first step's rate is %.3g, below %.3g (float32's smallest normal number: training at rate 0): want a warm-up of at most %.4g epochs",
					w, first, minRate, o.lr/float64(steps)/minRate)
			}
		}
	case train.OneCycle:
		first, final := o.lr/o.divFactor, o.lr/o.divFactor/o.finalDivFactor
		if !inRange(first) || !inRange(final) {
			return usagef("--div-factor %g and --final-div-factor %g: --lr %g starts at %.3g and ends at %.3g, outside float32's normal range %s (training at rate 0 or overflowing): want --lr/--div-factor and --lr/--div-factor/--final-div-factor in that range",
				o.divFactor, o.finalDivFactor, o.lr, first, final, normal)
		}
	}
	return nil
}
