package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/faster-training/faster/fit"
	"github.com/faster-training/faster/internal/atomicfile"
)

// Time to accuracy (`faster bench train --target-accuracy A`): ours and
// the PyTorch peer train the same model with the same recipe and
// hyper-parameters, evaluating on the test split every EvalEvery steps
// outside the training clock, and report the training seconds until the
// test accuracy first reaches A.

// TTARun is one training run of the time-to-accuracy benchmark.
type TTARun struct {
	Engine  string `json:"engine"`  // faster or pytorch
	Backend string `json:"backend"` // onednn, pytorch-1.13...
	Round   int    `json:"round"`
	// Variant is "recipe" or the recipe without one part ("no-ema", ...).
	Variant         string           `json:"variant"`
	Winograd        bool             `json:"winograd,omitempty"`  // ours ran with Winograd convolutions
	Processes       int              `json:"processes,omitempty"` // ours: DDP ranks (OursDDP)
	SecondsToTarget *float64         `json:"seconds_to_target"`   // null: not reached
	StepsToTarget   int              `json:"steps_to_target,omitempty"`
	BestAccuracy    float64          `json:"best_accuracy"`
	FinalAccuracy   float64          `json:"final_accuracy"`
	Seconds         float64          `json:"seconds"` // training seconds run
	EvalSeconds     float64          `json:"eval_seconds"`
	ImagesPerSec    float64          `json:"images_per_sec"`
	Curve           []fit.CurvePoint `json:"curve"`
}

// TTASummary is the time-to-accuracy result (`faster bench train
// --target-accuracy A --json`).
type TTASummary struct {
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
	// training images in ours' order.
	SameStart bool     `json:"same_start"`
	Args      []string `json:"args"` // the training flags both engines got
	// OursArgs are the flags only ours got: how it computes, not what
	// (its backend, Winograd off, DDP).
	OursArgs []string `json:"ours_args,omitempty"`
	Runs     []TTARun `json:"runs"`
	// Ratio is PyTorch's seconds to the target over ours, summed over the
	// rounds of the recipe (0 when either never reached it).
	Ratio float64 `json:"ratio"`
}

// Ablations are the fast recipe less one part, each with the training
// flag (ours' and the peer's) that turns it off.
var Ablations = []struct{ Name, Flag string }{
	{"no-onecycle", "--schedule=constant"}, {"no-label-smoothing", "--label-smoothing=0"}, {"no-nesterov", "--nesterov=false"},
	{"no-progressive", "--resolution-schedule="}, {"no-ema", "--ema=0"}, {"no-tta", "--tta=none"},
}

// TimeToAccuracy runs ours and (unless NoPeer) the peer for c.Rounds
// rounds, alternating which goes first, then, with RecipeAblation, each
// without one part of the recipe; it writes Curve's file when set.
func TimeToAccuracy(ctx context.Context, c TrainConfig) (TTASummary, error) {
	if c.Log == nil {
		c.Log = io.Discard
	}
	args := c.ttaArgs()
	sum := TTASummary{Model: "thinnet", Filters: c.Filters, Data: c.Data, Target: c.TargetAccuracy, EvalEvery: c.EvalEvery, Batch: c.Batch,
		Epochs: c.Epochs, Threads: c.Threads, Recipe: c.Recipe, Args: args, OursArgs: c.oursArgs()}
	ours := func(round int, variant string, extra ...string) error {
		a := append(append(append(append([]string{"train"}, args...), "--json"), sum.OursArgs...), extra...)
		fmt.Fprintf(c.Log, "bench train: faster %s, round %d ...\n", variant, round)
		ts, err := c.runChild(ctx, a)
		if err != nil {
			return fmt.Errorf("faster %s: %w", variant, err)
		}
		r := newTTARun("faster", ts.Backend, round, variant, ts)
		r.Winograd = ts.Winograd
		if ts.WorldSize > 1 {
			r.Processes = ts.WorldSize
		}
		sum.Runs = append(sum.Runs, r)
		report(c.Log, r)
		return nil
	}
	var peerArgs []string
	if c.SameStart && !c.NoPeer {
		dir, err := os.MkdirTemp("", "faster-same-start-")
		if err != nil {
			return sum, err
		}
		defer os.RemoveAll(dir)
		if peerArgs, err = WriteSameStart(dir, c); err != nil {
			return sum, err
		}
		sum.SameStart = true
	}
	peer := func(round int, variant string, extra ...string) error {
		fmt.Fprintf(c.Log, "bench train: pytorch %s, round %d ...\n", variant, round)
		a := append(append(slices.Clip(args), peerArgs...), extra...)
		ps, err := runPeer(ctx, c.Python, c.Peer, a, c.Threads)
		if err != nil {
			return err
		}
		r := newTTARun("pytorch", ps.Backend, round, variant, ps)
		sum.Runs = append(sum.Runs, r)
		report(c.Log, r)
		return nil
	}
	// Alternate the order between rounds, to spread a shared machine's
	// noise; NoPeer runs ours alone in every round.
	entrants := []func(round int) error{func(r int) error { return ours(r, "recipe") }}
	if !c.NoPeer {
		entrants = append(entrants, func(r int) error { return peer(r, "recipe") })
	}
	if err := Rounds(c.Rounds, len(entrants), func(r, i int) error { return entrants[i](r + 1) }); err != nil {
		return sum, err
	}
	if c.RecipeAblation {
		for _, a := range Ablations {
			if err := ours(1, a.Name, a.Flag); err != nil {
				return sum, err
			}
			if c.NoPeer {
				continue
			}
			if err := peer(1, a.Name, a.Flag); err != nil {
				return sum, err
			}
		}
	}
	if !c.NoPeer {
		sum.Ratio = ttaRatio(sum.Runs)
	}
	return sum, c.writeCurve(sum)
}

// ttaRatio is the peer's seconds to the target over ours', each summed
// over the rounds of the whole recipe; 0 when a run did not reach it.
func ttaRatio(runs []TTARun) float64 {
	var oursT, peerT float64
	oursOK, peerOK := true, true
	for _, r := range runs {
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
	if oursOK && peerOK && oursT > 0 {
		return peerT / oursT
	}
	return 0
}

// oursArgs are the flags only ours gets: how it computes, not what.
func (c TrainConfig) oursArgs() []string {
	var args []string
	if c.Backend != "" {
		args = append(args, "--backend", c.Backend)
	}
	if !c.Winograd {
		args = append(args, "--winograd=false")
	}
	if c.OursDDP > 0 {
		// The last --threads wins: each process gets its share.
		args = append(args, "--strategy", "ddp", "--nproc", strconv.Itoa(c.OursDDP), "--threads", strconv.Itoa(c.Threads/c.OursDDP))
	}
	return args
}

// ttaArgs are the training flags ours and the peer share.
func (c TrainConfig) ttaArgs() []string {
	args := []string{"--data", c.Data, "--epochs", strconv.Itoa(c.Epochs), "--batch", strconv.Itoa(c.Batch), "--threads", strconv.Itoa(c.Threads),
		"--seed", strconv.FormatUint(c.Seed, 10), "--eval-every", strconv.Itoa(c.EvalEvery),
		"--target-accuracy", strconv.FormatFloat(c.TargetAccuracy, 'g', -1, 64)}
	if c.LRSet || c.Recipe == "" {
		args = append(args, "--lr", strconv.FormatFloat(c.LR, 'g', -1, 64))
	}
	if c.Recipe != "" {
		args = append(args, "--recipe", c.Recipe)
	}
	if c.Limit > 0 {
		args = append(args, "--limit", strconv.Itoa(c.Limit))
	}
	if c.TestLimit > 0 {
		args = append(args, "--test-limit", strconv.Itoa(c.TestLimit))
	}
	if len(c.Filters) > 0 {
		args = append(args, "--filters", joinInts(c.Filters))
	}
	return args
}

// writeCurve writes the summary, every run's curve with it, to c.Curve.
func (c TrainConfig) writeCurve(sum TTASummary) error {
	if c.Curve == "" {
		return nil
	}
	out, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(c.Curve, append(out, '\n'), 0o644)
}

// PlotTTA writes a PNG of every run's test accuracy against its training
// seconds to path, the target drawn across.
func PlotTTA(path string, sum TTASummary) error {
	var series []Series
	for _, r := range sum.Runs {
		s := Series{Label: fmt.Sprintf("%s %s #%d", r.Engine, r.Variant, r.Round)}
		for _, p := range r.Curve {
			s.X, s.Y = append(s.X, p.Seconds), append(s.Y, 100*p.TestAccuracy)
		}
		series = append(series, s)
	}
	title := fmt.Sprintf("ThinNet test accuracy vs training seconds (evaluation excluded), batch %d, %d threads", sum.Batch, sum.Threads)
	return PlotLines(path, title, "training seconds", "test top-1 %", series, 100*sum.Target)
}

func newTTARun(engine, backend string, round int, variant string, s fit.Summary) TTARun {
	r := TTARun{Engine: engine, Backend: backend, Round: round, Variant: variant, SecondsToTarget: s.SecondsToTarget, StepsToTarget: s.StepsToTarget,
		Seconds: s.Seconds, EvalSeconds: s.EvalSeconds, ImagesPerSec: s.ImagesPerSec, Curve: s.Curve}
	for _, p := range s.Curve {
		r.BestAccuracy = max(r.BestAccuracy, p.TestAccuracy)
		r.FinalAccuracy = p.TestAccuracy
	}
	return r
}

func report(w io.Writer, r TTARun) {
	fmt.Fprintf(w, "bench train: %s %s round %d: %s, best %.2f%%, %.1f training s, %.1f images/s\n",
		r.Engine, r.Variant, r.Round, toTargetText(r), 100*r.BestAccuracy, r.Seconds, r.ImagesPerSec)
}

func toTargetText(r TTARun) string {
	if r.SecondsToTarget == nil {
		return "target not reached"
	}
	return fmt.Sprintf("%.1f s to target (%d steps)", *r.SecondsToTarget, r.StepsToTarget)
}

// WriteTTATable writes the runs as a table, and the ratio of the engines'
// seconds to the target.
func WriteTTATable(w io.Writer, sum TTASummary) error {
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
	if err := Table(w, []string{"engine", "variant", "round", "seconds to target", "best accuracy", "images/s"}, rows); err != nil {
		return err
	}
	if sum.Ratio > 0 {
		fmt.Fprintf(w, "\nfaster is %.2f× as fast as PyTorch to %.2f%% (seconds to target, summed over the rounds)\n", sum.Ratio, 100*sum.Target)
	}
	return nil
}

// runPeer runs the PyTorch peer script with the same training flags.
func runPeer(ctx context.Context, python, script string, args []string, threads int) (fit.Summary, error) {
	s, err := RunSummary(ctx, python, append([]string{script}, args...), append(os.Environ(), "OMP_NUM_THREADS="+strconv.Itoa(threads)))
	if err != nil && ctx.Err() == nil {
		err = fmt.Errorf("pytorch peer (%s %s): %w", python, script, err)
	}
	return s, err
}
