package main

import (
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/faster-training/faster/fit"
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
	for _, r := range fastRecipe {
		s = append(s, "--"+r.flag+" "+r.value)
	}
	return strings.Join(s, " ")
}

// applyRecipe sets the recipe's flags that were not given.
func applyRecipe(f *pflag.FlagSet, o *trainOptions) error {
	switch o.cfg.Recipe {
	case "":
		return nil
	case "fast":
	default:
		return usagef("--recipe %q: want fast", o.cfg.Recipe)
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
