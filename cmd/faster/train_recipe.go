package main

import (
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/faster-training/faster/fit"
)

// The fast recipe (`faster train --recipe fast`) is fit.FastRecipe, a
// typed value: each of its settings is a field, which the flag of that
// field given on the command line overrides.

func addRecipeFlags(f *pflag.FlagSet, o *trainOptions) {
	c, d := &o.cfg, fit.DefaultConfig()
	f.StringVar(&c.Recipe, "recipe", "", `"fast": `+recipeText()+` (flags given explicitly win)`)
	f.StringVar(&c.Optim.Schedule, "schedule", "", "learning-rate schedule: constant, step (--warmup, --step-epochs, --gamma) or onecycle (torch's OneCycleLR: --lr is the peak; default: step when --warmup or --step-epochs is set, else constant)")
	f.Float64Var(&c.Optim.PctStart, "pct-start", d.Optim.PctStart, "onecycle: fraction of the steps spent warming up")
	f.Float64Var(&c.Optim.DivFactor, "div-factor", d.Optim.DivFactor, "onecycle: the first rate is --lr / this")
	f.Float64Var(&c.Optim.FinalDivFactor, "final-div-factor", d.Optim.FinalDivFactor, "onecycle: the last rate is the first / this")
	f.Float64Var(&c.Optim.LabelSmoothing, "label-smoothing", 0, "label smoothing ε of the loss (nn.CrossEntropyLoss(label_smoothing=ε))")
	f.BoolVar(&c.Optim.Nesterov, "nesterov", false, "Nesterov momentum (torch.optim.SGD(nesterov=True))")
	f.Float64Var(&c.Optim.EMA, "ema", 0, "evaluate an exponential moving average of the weights and BatchNorm statistics with this decay per step (AveragedModel(use_buffers=True)); 0: off")
	f.BoolVar(&c.Optim.EMAWarmup, "ema-warmup", false, "with --ema: decay update n+1 by min(decay, (1+n)/(10+n)), as TensorFlow's ExponentialMovingAverage(num_updates), so the average forgets the untrained start")
	f.StringVar(&c.Eval.TTA, "tta", d.Eval.TTA, "test-time augmentation: none or flip (mean of the logits of each image and its mirror)")
	f.StringVar(&o.resSchedule, "resolution-schedule", "", "progressive resizing: training resolution per epoch, e.g. 20,24,28 (the last for the remaining epochs; the test split stays at full resolution); auto: from 70% of full up to full at the last epoch. IDX images are resized with antialiased bilinear filtering")
	f.IntVar(&c.Eval.Every, "eval-every", 0, "also evaluate on the test split every N steps (0: after each epoch only); the curve goes into --json")
	f.Float64Var(&c.Eval.TargetAccuracy, "target-accuracy", 0, "stop once a test evaluation reaches this top-1 accuracy (a fraction, e.g. 0.92) and report the training seconds it took")
}

func recipeText() string {
	var s []string
	for _, r := range fit.FastRecipe {
		s = append(s, "--"+trainFlagOf(r.Field)+" "+r.Value)
	}
	return strings.Join(s, " ")
}

// applyRecipe sets --recipe's values on the fields whose flags were not
// given (over a --config file's: a file's "recipe" is the name its values
// came from, which it holds already).
func applyRecipe(f *pflag.FlagSet, o *trainOptions) error {
	if !f.Changed("recipe") {
		return nil
	}
	err := o.cfg.UseRecipe(o.cfg.Recipe, func(field string) bool { return f.Changed(trainFlagOf(field)) })
	if err != nil {
		return o.usageOf(err)
	}
	return nil
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
