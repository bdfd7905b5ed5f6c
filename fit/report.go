package fit

import (
	"fmt"
	"io"
	"strings"

	"github.com/faster-training/faster/loader"
	"github.com/faster-training/faster/train"
)

// WriteEpoch writes one epoch's figures as a line for a person (what
// `faster train` prints after each epoch without --json); epochs is the
// run's count.
func WriteEpoch(w io.Writer, e EpochSummary, epochs int) {
	fmt.Fprintf(w, "epoch %d/%d: train loss %.4f acc %.2f%%, test loss %.4f acc %.2f%% top-5 %.2f%%, %d images in %.1f s (%.1f images/s)\n",
		e.Epoch, epochs, e.TrainLoss, 100*e.TrainAcc, e.TestLoss, 100*e.TestAccuracy, 100*e.TestTop5, e.Images, e.Seconds, e.ImagesPerSec)
}

// WriteText writes what the run of cfg did, as lines for a person (what
// `faster train` prints at the end without --json).
func (sum *Summary) WriteText(w io.Writer, cfg Config) {
	if sum.AlreadyDone {
		sum.writeFixRes(w)
		fmt.Fprintf(w, "already trained %d epoch(s) (%s): test loss %.4f acc %.2f%% top-5 %.2f%% on %d images\n",
			sum.Epochs, cfg.Checkpoint.Path, sum.TestLoss, 100*sum.TestAccuracy, 100*sum.TestTop5, sum.TestImages)
		return
	}
	if sum.SecondsToTarget != nil {
		acc := 0.0
		for _, p := range sum.Curve {
			if p.Step == sum.StepsToTarget {
				acc = p.TestAccuracy
			}
		}
		fmt.Fprintf(w, "reached test accuracy %.2f%% (target %.2f%%) after %d steps, %.1f s of training (evaluation excluded)\n",
			100*acc, 100*cfg.Eval.TargetAccuracy, sum.StepsToTarget, *sum.SecondsToTarget)
	}
	sum.writeFixRes(w)
	WriteTuning(w, sum.Autotune)
	sum.Profile.write(w)
	if g := sum.GraphSteps; g != nil {
		fmt.Fprintf(w, "CUDA graph: %d steps replayed, %d captured, %d eager\n", g.Replayed, g.Captured, g.Eager)
		switch {
		case g.GaveUp:
			fmt.Fprintf(w, "the device refused to capture the step %d times, so the steps since ran eagerly: %s\n", g.Refusals, g.Refused)
		case g.Refusals > 0:
			fmt.Fprintf(w, "the device refused %d capture(s), a step eagerly each, then captured the step: %s\n", g.Refusals, g.Refused)
		}
	}
	on := sum.Backend
	if d := sum.Device; d != "" && d != "cpu" {
		on += " on " + d
	}
	if d := sum.DecodeDevice; d != "" && d != "cpu" {
		on += fmt.Sprintf(", images decoded on %s (%d on the cpu", d, sum.DecodeFallbacks)
		if sum.DecodeShared > 0 {
			on += fmt.Sprintf(", %d more as its share", sum.DecodeShared)
		}
		on += ")"
	}
	if sum.InputLayout == string(loader.U8HWC) {
		on += ", batches as bytes normalised there"
	}
	fmt.Fprintf(w, "trained %s on %s (%s, %d threads per device, batch %d, %s%s): %d images in %.1f s, %.1f images/s; test accuracy %.2f%%\n",
		sum.Model, on, sum.describeStrategy(), sum.Threads, sum.Batch, sum.Precision, sum.nativeNote(), sum.Images, sum.Seconds, sum.ImagesPerSec, 100*sum.TestAccuracy)
}

// write writes a profiled epoch: the step's device time, busy and idle,
// and its ten largest ops (nothing without a profile).
func (p *ProfileSummary) write(w io.Writer) {
	if p == nil {
		return
	}
	fmt.Fprintf(w, "profile of epoch %d (%d eager steps, %.0f calls a step): device busy %.3f ms and idle %.3f ms a step, %.3f ms of training a step with the events\n",
		p.Epoch, p.Steps, p.CallsPer, p.BusyMs, p.IdleMs, p.WallMsStep)
	n := float64(max(p.Steps, 1))
	for _, r := range p.Rows[:min(10, len(p.Rows))] {
		fmt.Fprintf(w, "  %8.3f ms %5.1f%%  %4.0f×  %s\n", r.Ms/n, 100*r.Ms/n/max(p.BusyMs, 1e-9), float64(r.Calls)/n, r.Op)
	}
}

// writeFixRes writes the FixRes adjustment, if the run made one.
func (sum *Summary) writeFixRes(w io.Writer) {
	fs := sum.FixResBN
	if fs == nil {
		return
	}
	fmt.Fprintf(w, "BatchNorm statistics recomputed at %d×%d from %d batches (%d images, %.1f s): test loss %.4f → %.4f, acc %.2f%% → %.2f%%\n",
		fs.Resolution, fs.Resolution, fs.Batches, fs.Images, fs.Seconds, float64(fs.TestLossBefore), sum.TestLoss, 100*fs.TestAccuracyBefore, 100*sum.TestAccuracy)
}

// WriteTuning writes the autotuner's choices, one line per op.
func WriteTuning(w io.Writer, choices []train.TuneChoice) {
	if len(choices) == 0 {
		return
	}
	cached := 0
	for _, c := range choices {
		if c.Cached {
			cached++
		}
	}
	fmt.Fprintf(w, "autotune: %d choices", len(choices))
	if cached > 0 {
		fmt.Fprintf(w, ", %d of them from the tune cache (timed by an earlier run on this machine)", cached)
	}
	fmt.Fprintln(w)
	for _, c := range choices {
		var alts []string
		for _, k := range c.Candidates {
			if k.Err != "" {
				alts = append(alts, k.Name+" (unavailable)")
			} else {
				alts = append(alts, fmt.Sprintf("%s %.2f ms", k.Name, 1e3*k.Seconds))
			}
		}
		fmt.Fprintf(w, "  %s: %s  [%s]\n", c.Op, c.Chosen, strings.Join(alts, ", "))
	}
}

// describeStrategy names the run's parallelism for the summary line.
func (sum *Summary) describeStrategy() string {
	switch sum.Strategy {
	case "dp":
		return fmt.Sprintf("dp over %d devices", sum.Devices)
	case "ddp":
		return fmt.Sprintf("ddp rank 0 of %d", sum.WorldSize)
	}
	return "single device"
}

// nativeNote says whether reduced precision ran on native instructions.
func (sum *Summary) nativeNote() string {
	if sum.Precision == "fp32" {
		return ""
	}
	if sum.NativeAMP {
		return " native"
	}
	return " emulated: this CPU has no bf16/fp16 arithmetic"
}
