package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/faster-training/faster/bench"
	"github.com/faster-training/faster/fit"
	"github.com/faster-training/faster/internal/atomicfile"
)

// Time to accuracy (`faster bench train --target-accuracy A`): ours and
// the PyTorch peer train the same model with the same recipe and
// hyper-parameters, evaluating on the test split every --eval-every steps
// outside the training clock, and report the training seconds until the
// test accuracy first reaches A.

// ttaRun is one training run of the time-to-accuracy benchmark.
type ttaRun struct {
	Engine  string `json:"engine"`  // faster or pytorch
	Backend string `json:"backend"` // onednn, pytorch-1.13...
	Round   int    `json:"round"`
	// Variant is "recipe" or the recipe without one part ("no-ema", ...).
	Variant         string           `json:"variant"`
	Winograd        bool             `json:"winograd,omitempty"`  // ours ran with --winograd
	Processes       int              `json:"processes,omitempty"` // ours: DDP ranks (--ours-ddp)
	SecondsToTarget *float64         `json:"seconds_to_target"`   // null: not reached
	StepsToTarget   int              `json:"steps_to_target,omitempty"`
	BestAccuracy    float64          `json:"best_accuracy"`
	FinalAccuracy   float64          `json:"final_accuracy"`
	Seconds         float64          `json:"seconds"` // training seconds run
	EvalSeconds     float64          `json:"eval_seconds"`
	ImagesPerSec    float64          `json:"images_per_sec"`
	Curve           []fit.CurvePoint `json:"curve"`
}

type ttaSummary struct {
	Model     string  `json:"model"`
	Filters   []int   `json:"filters,omitempty"`
	Data      string  `json:"data"`
	Target    float64 `json:"target_accuracy"`
	EvalEvery int     `json:"eval_every"`
	Batch     int     `json:"batch"`
	Epochs    int     `json:"epochs"`
	Threads   int     `json:"threads"`
	Recipe    string  `json:"recipe,omitempty"`
	// SameStart: the peer began from ours' starting weights and took the
	// training images in ours' order (--same-start).
	SameStart bool     `json:"same_start"`
	Args      []string `json:"args"` // the training flags both engines got
	// OursArgs are the flags only ours got: how it computes, not what
	// (--backend, --winograd=false, --ours-ddp's).
	OursArgs []string `json:"ours_args,omitempty"`
	Runs     []ttaRun `json:"runs"`
	// Ratio is PyTorch's seconds to the target over ours, summed over the
	// rounds of the recipe (0 when either never reached it).
	Ratio float64 `json:"ratio"`
}

// ablations are the fast recipe less one part, each as flags that turn it
// off.
var ablations = []struct{ name, flag string }{
	{"no-onecycle", "--schedule=constant"}, {"no-label-smoothing", "--label-smoothing=0"}, {"no-nesterov", "--nesterov=false"},
	{"no-progressive", "--resolution-schedule="}, {"no-ema", "--ema=0"}, {"no-tta", "--tta=none"},
}

func runTimeToAccuracy(ctx context.Context, o benchTrainOptions, threads int, stdout, stderr io.Writer) error {
	if err := o.checkTTA(threads); err != nil {
		return err
	}
	args := o.ttaArgs(threads)
	sum := ttaSummary{Model: "thinnet", Filters: o.filters, Data: o.data, Target: o.targetAccuracy, EvalEvery: o.evalEvery, Batch: o.batch,
		Epochs: o.epochs, Threads: threads, Recipe: o.recipe, Args: args}
	if o.backend != "" {
		sum.OursArgs = append(sum.OursArgs, "--backend", o.backend)
	}
	if !o.winograd {
		sum.OursArgs = append(sum.OursArgs, "--winograd=false")
	}
	if o.oursDDP > 0 {
		// The last --threads wins: each process gets its share.
		sum.OursArgs = append(sum.OursArgs, "--strategy", "ddp", "--nproc", strconv.Itoa(o.oursDDP), "--threads", strconv.Itoa(threads/o.oursDDP))
	}
	ours := func(round int, variant string, extra ...string) error {
		a := append([]string{"train"}, args...)
		a = append(a, "--json")
		a = append(a, sum.OursArgs...)
		a = append(a, extra...)
		fmt.Fprintf(stderr, "bench train: faster %s, round %d ...\n", variant, round)
		ts, err := runTrainChild(ctx, a, stderr)
		if err != nil {
			return fmt.Errorf("faster %s: %w", variant, err)
		}
		sum.Runs = append(sum.Runs, newTTARun("faster", ts.Backend, round, variant, ts.SecondsToTarget, ts.StepsToTarget, ts.Curve, ts.Seconds, ts.EvalSeconds, ts.ImagesPerSec))
		sum.Runs[len(sum.Runs)-1].Winograd = ts.Winograd
		if ts.WorldSize > 1 {
			sum.Runs[len(sum.Runs)-1].Processes = ts.WorldSize
		}
		report(stderr, sum.Runs[len(sum.Runs)-1])
		return nil
	}
	var peerArgs []string
	if o.sameStart && !o.noPeer {
		dir, err := os.MkdirTemp("", "faster-same-start-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if peerArgs, err = writeSameStart(dir, o); err != nil {
			return err
		}
		sum.SameStart = true
	}
	peer := func(round int, variant string, extra ...string) error {
		fmt.Fprintf(stderr, "bench train: pytorch %s, round %d ...\n", variant, round)
		a := append(append(slices.Clip(args), peerArgs...), extra...)
		ps, err := runPeer(ctx, o.python, o.peer, a, threads)
		if err != nil {
			return err
		}
		sum.Runs = append(sum.Runs, newTTARun("pytorch", ps.Backend, round, variant, ps.SecondsToTarget, ps.StepsToTarget, ps.Curve, ps.Seconds, ps.EvalSeconds, ps.ImagesPerSec))
		report(stderr, sum.Runs[len(sum.Runs)-1])
		return nil
	}
	// Alternate the order between rounds, to spread a shared machine's
	// noise; --no-peer runs ours alone in every round.
	entrants := []func(round int) error{func(r int) error { return ours(r, "recipe") }}
	if !o.noPeer {
		entrants = append(entrants, func(r int) error { return peer(r, "recipe") })
	}
	if err := bench.Rounds(o.rounds, len(entrants), func(r, i int) error { return entrants[i](r + 1) }); err != nil {
		return err
	}
	if o.recipeAblation {
		for _, a := range ablations {
			if err := ours(1, a.name, a.flag); err != nil {
				return err
			}
			if o.noPeer {
				continue
			}
			if err := peer(1, a.name, a.flag); err != nil {
				return err
			}
		}
	}
	var oursT, peerT float64
	oursOK, peerOK := true, true
	for _, r := range sum.Runs {
		if r.Variant != "recipe" {
			continue
		}
		t, ok := &oursT, &oursOK
		if r.Engine == "pytorch" {
			t, ok = &peerT, &peerOK
		}
		if r.SecondsToTarget == nil {
			*ok = false
		} else {
			*t += *r.SecondsToTarget
		}
	}
	if oursOK && peerOK && oursT > 0 && !o.noPeer {
		sum.Ratio = peerT / oursT
	}
	return writeTTA(sum, o, threads, stdout)
}

// checkTTA validates the time-to-accuracy mode's flags.
func (o benchTrainOptions) checkTTA(threads int) error {
	if o.targetAccuracy <= 0 || o.targetAccuracy > 1 || math.IsNaN(o.targetAccuracy) {
		return usagef("--target-accuracy %g: want a fraction in (0, 1], e.g. 0.9", o.targetAccuracy)
	}
	if o.evalEvery < 1 || o.rounds < 1 {
		return usagef("--eval-every and --rounds must be positive")
	}
	if o.oursDDP < 0 || o.oursDDP > threads || (o.oursDDP > 0 && threads%o.oursDDP != 0) {
		return usagef("--ours-ddp %d: want a number of processes that divides --threads %d", o.oursDDP, threads)
	}
	if o.recipeAblation && o.recipe != "fast" {
		return usagef("--recipe-ablation takes the parts out of --recipe fast")
	}
	if !o.noPeer {
		if _, err := os.Stat(o.peer); err != nil {
			return usagef("--peer %s: %v (run from the repository root, or give its path)", o.peer, err)
		}
	}
	return nil
}

// ttaArgs are the training flags ours and the peer share.
func (o benchTrainOptions) ttaArgs(threads int) []string {
	args := []string{"--data", o.data, "--epochs", strconv.Itoa(o.epochs), "--batch", strconv.Itoa(o.batch), "--threads", strconv.Itoa(threads),
		"--seed", strconv.FormatUint(o.seed, 10), "--eval-every", strconv.Itoa(o.evalEvery),
		"--target-accuracy", strconv.FormatFloat(o.targetAccuracy, 'g', -1, 64)}
	if o.lrSet || o.recipe == "" {
		args = append(args, "--lr", strconv.FormatFloat(o.lr, 'g', -1, 64))
	}
	if o.recipe != "" {
		args = append(args, "--recipe", o.recipe)
	}
	if o.limit > 0 {
		args = append(args, "--limit", strconv.Itoa(o.limit))
	}
	if o.testLimit > 0 {
		args = append(args, "--test-limit", strconv.Itoa(o.testLimit))
	}
	if len(o.filters) > 0 {
		args = append(args, "--filters", joinInts(o.filters))
	}
	return args
}

// writeTTA writes the summary: --curve's file, --plot's chart, and the
// table (or --json).
func writeTTA(sum ttaSummary, o benchTrainOptions, threads int, stdout io.Writer) error {
	out, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	if o.curve != "" {
		if err := atomicfile.WriteFile(o.curve, append(out, '\n'), 0o644); err != nil {
			return err
		}
	}
	if o.plot != "" {
		var series []bench.Series
		for _, r := range sum.Runs {
			s := bench.Series{Label: fmt.Sprintf("%s %s #%d", r.Engine, r.Variant, r.Round)}
			for _, p := range r.Curve {
				s.X, s.Y = append(s.X, p.Seconds), append(s.Y, 100*p.TestAccuracy)
			}
			series = append(series, s)
		}
		title := fmt.Sprintf("ThinNet test accuracy vs training seconds (evaluation excluded), batch %d, %d threads", o.batch, threads)
		if err := bench.PlotLines(o.plot, title, "training seconds", "test top-1 %", series, 100*o.targetAccuracy); err != nil {
			return err
		}
	}
	if o.json {
		_, err := stdout.Write(append(out, '\n'))
		return err
	}
	return printTTATable(stdout, sum)
}

func newTTARun(engine, backend string, round int, variant string, toTarget *float64, steps int, curve []fit.CurvePoint, seconds, evalSeconds, ips float64) ttaRun {
	r := ttaRun{Engine: engine, Backend: backend, Round: round, Variant: variant, SecondsToTarget: toTarget, StepsToTarget: steps,
		Seconds: seconds, EvalSeconds: evalSeconds, ImagesPerSec: ips, Curve: curve}
	for _, p := range curve {
		r.BestAccuracy = max(r.BestAccuracy, p.TestAccuracy)
		r.FinalAccuracy = p.TestAccuracy
	}
	return r
}

func report(w io.Writer, r ttaRun) {
	fmt.Fprintf(w, "bench train: %s %s round %d: %s, best %.2f%%, %.1f training s, %.1f images/s\n",
		r.Engine, r.Variant, r.Round, toTargetText(r), 100*r.BestAccuracy, r.Seconds, r.ImagesPerSec)
}

func toTargetText(r ttaRun) string {
	if r.SecondsToTarget == nil {
		return "target not reached"
	}
	return fmt.Sprintf("%.1f s to target (%d steps)", *r.SecondsToTarget, r.StepsToTarget)
}

func printTTATable(w io.Writer, sum ttaSummary) error {
	fmt.Fprintf(w, "Time to %.2f%% test accuracy: ThinNet on %s, batch %d, up to %d epoch(s), %d threads, recipe %q; "+
		"evaluated every %d steps on the test split, evaluation time excluded\n\n", 100*sum.Target, sum.Data, sum.Batch, sum.Epochs, sum.Threads, sum.Recipe, sum.EvalEvery)
	if len(sum.OursArgs) > 0 {
		fmt.Fprintf(w, "ours also with %s\n\n", strings.Join(sum.OursArgs, " "))
	}
	var rows [][]string
	for _, r := range sum.Runs {
		to := "not reached"
		if r.SecondsToTarget != nil {
			to = fmt.Sprintf("%.1f s (%d steps)", *r.SecondsToTarget, r.StepsToTarget)
		}
		engine := r.Engine + " (" + r.Backend + ")"
		if r.Processes > 1 {
			engine = fmt.Sprintf("%s (%s, DDP ×%d)", r.Engine, r.Backend, r.Processes)
		}
		rows = append(rows, []string{engine, r.Variant, strconv.Itoa(r.Round), to,
			fmt.Sprintf("%.2f%%", 100*r.BestAccuracy), fmt.Sprintf("%.1f", r.ImagesPerSec)})
	}
	if err := bench.Table(w, []string{"engine", "variant", "round", "seconds to target", "best accuracy", "images/s"}, rows); err != nil {
		return err
	}
	if sum.Ratio > 0 {
		fmt.Fprintf(w, "\nfaster is %.2f× as fast as PyTorch to %.2f%% (seconds to target, summed over the rounds)\n", sum.Ratio, 100*sum.Target)
	}
	return nil
}

// runPeer runs the PyTorch peer script with the same training flags.
func runPeer(ctx context.Context, python, script string, args []string, threads int) (fit.Summary, error) {
	s, err := bench.RunSummary(ctx, python, append([]string{script}, args...), append(os.Environ(), "OMP_NUM_THREADS="+strconv.Itoa(threads)))
	if err != nil && ctx.Err() == nil {
		err = fmt.Errorf("pytorch peer (%s %s): %w", python, script, err)
	}
	return s, err
}

func joinInts(v []int) string {
	var s []string
	for _, x := range v {
		s = append(s, strconv.Itoa(x))
	}
	return strings.Join(s, ",")
}
