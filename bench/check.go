package bench

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/faster-training/faster/fit"
	"github.com/faster-training/faster/loader"
)

// UsageError is a benchmark's configuration given wrongly, worded by the
// flags of `faster bench` that set its fields (the CLI's exit status 2).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, a ...any) error { return &UsageError{fmt.Sprintf(format, a...)} }

// Check reports the first thing wrong with c as `faster bench train` was
// given it, a *UsageError, or the error of looking at its data. Threads
// is checked as given (not negative); CheckTTA checks the time-to-accuracy
// settings once the threads are known.
func (c TrainConfig) Check() error {
	if c.Epochs < 1 || c.Batch < 1 || c.Limit < 0 || c.TestLimit < 0 || c.Threads < 0 || c.Devices < 1 {
		return usagef("--epochs, --batch and --devices must be positive; --limit, --test-limit, --threads not negative")
	}
	if c.Repeats < 1 || c.Repeats > 1000 {
		return usagef("--repeats %d: want 1 to 1000", c.Repeats)
	}
	if math.IsNaN(c.LR) || math.IsInf(c.LR, 0) || c.LR <= 0 {
		return usagef("--lr %g: must be a positive finite number", c.LR)
	}
	for _, s := range c.Strategies {
		if !slices.Contains(Strategies, s) {
			return usagef("--strategies: %q is not single, dp or ddp", s)
		}
	}
	for _, v := range c.Variants {
		if !slices.Contains(Variants, v) {
			return usagef("--variants: %q is not one of %s", v, strings.Join(Variants, ", "))
		}
	}
	if _, err := fit.ParseDevice(c.Device); err != nil {
		return usagef("--device %v", err)
	}
	if d := c.AMPDtype; d != "" && d != "bf16" && d != "fp16" {
		return usagef("--amp-dtype %q: want bf16 or fp16", d)
	}
	_, err := os.Stat(c.Data)
	return err
}

// CheckTTA reports the first thing wrong with c's time-to-accuracy
// settings (none when TargetAccuracy is 0), a *UsageError; threads are the
// threads in all.
func (c TrainConfig) CheckTTA(threads int) error {
	if c.TargetAccuracy == 0 {
		return nil
	}
	if c.TargetAccuracy <= 0 || c.TargetAccuracy > 1 || math.IsNaN(c.TargetAccuracy) {
		return usagef("--target-accuracy %g: want a fraction in (0, 1], e.g. 0.9", c.TargetAccuracy)
	}
	if c.EvalEvery < 1 || c.Rounds < 1 {
		return usagef("--eval-every and --rounds must be positive")
	}
	if c.OursDDP < 0 || c.OursDDP > threads || (c.OursDDP > 0 && threads%c.OursDDP != 0) {
		return usagef("--ours-ddp %d: want a number of processes that divides --threads %d", c.OursDDP, threads)
	}
	if c.RecipeAblation && c.Recipe != "fast" {
		return usagef("--recipe-ablation takes the parts out of --recipe fast")
	}
	if !c.NoPeer {
		if _, err := os.Stat(c.Peer); err != nil {
			return usagef("--peer %s: %v (run from the repository root, or give its path)", c.Peer, err)
		}
	}
	return nil
}

// Check reports the first thing wrong with c's run as `faster bench load`
// was given it (its epochs, steps and consumer rate), a *UsageError; the
// loader's own settings are the loader's Spec's to check.
func (c LoadConfig) Check() error {
	switch {
	case c.Epochs < 1:
		return usagef("--epochs %d: must be at least 1", c.Epochs)
	case c.Steps < 0:
		return usagef("--steps %d: must not be negative", c.Steps)
	case !(c.ConsumerRate >= 0) || math.IsInf(c.ConsumerRate, 0):
		return usagef("--consumer-rate %g: want a finite rate >= 0", c.ConsumerRate)
	}
	return nil
}

// ReadResume reads the saved states of paths, one per rank of the earlier
// run (`faster bench load --resume-from`), merged into the position to
// resume from (nil for none).
func ReadResume(paths []string) (*loader.State, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	var states []loader.State
	for _, p := range paths {
		s, err := loader.LoadState(p)
		if err != nil {
			return nil, err
		}
		states = append(states, s)
	}
	s, err := loader.MergeStates(states...)
	if err != nil {
		return nil, fmt.Errorf("--resume-from %s: %w", strings.Join(paths, ", "), err)
	}
	return &s, nil
}
