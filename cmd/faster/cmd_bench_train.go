package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/faster-training/faster/bench"
	"github.com/faster-training/faster/fit"
)

// benchChildEnv marks a `faster train` started by `faster bench train`
// (the tests' binary uses it to act as faster).
const benchChildEnv = "FASTER_BENCH_CHILD"

type benchTrainOptions struct {
	data       string
	epochs     int
	limit      int
	testLimit  int
	batch      int
	lr         float64
	threads    int
	devices    int
	strategies []string
	variants   []string
	ablation   bool
	syncBN     bool
	backend    string
	winograd   bool
	filters    []int
	plot       string
	json       bool
	repeats    int  // timed runs of every cell, in alternating order
	warmup     bool // a short untimed run of every cell first

	// Time to accuracy (cmd_bench_train_tta.go).
	targetAccuracy float64
	evalEvery      int
	recipe         string
	recipeAblation bool
	rounds         int
	seed           uint64
	peer           string
	python         string
	noPeer         bool
	sameStart      bool
	oursDDP        int
	curve          string
	lrSet          bool
}

// trainCell is one cell of the study's "Model Running" table.
type trainCell struct {
	Strategy     string  `json:"strategy"` // single, dp, ddp
	Variant      string  `json:"variant"`  // plain, autotune, amp, autotune+amp, or an ablation
	Seconds      float64 `json:"seconds"`  // training time, evaluation excluded
	ImagesPerSec float64 `json:"images_per_sec"`
	TestAccuracy float64 `json:"test_accuracy"`
	Precision    string  `json:"precision"`
	NativeAMP    bool    `json:"native_precision"`
	Tuned        int     `json:"autotuned_ops,omitempty"`
	TuneSeconds  float64 `json:"tune_seconds,omitempty"` // of Seconds, spent autotuning (once per shape)

	// With several repeats, Seconds (and the figures beside it) is the
	// median run's; Runs are every run's seconds in round order, Low and
	// High their extremes. Speedup is the median over rounds of the
	// baseline's seconds over this cell's in the same round, with
	// SpeedupLow and SpeedupHigh its extremes (0 for the baseline).
	Runs        []float64 `json:"seconds_runs,omitempty"`
	Low         float64   `json:"seconds_low,omitempty"`
	High        float64   `json:"seconds_high,omitempty"`
	Speedup     float64   `json:"speedup,omitempty"`
	SpeedupLow  float64   `json:"speedup_low,omitempty"`
	SpeedupHigh float64   `json:"speedup_high,omitempty"`
}

type benchTrainSummary struct {
	Model    string      `json:"model"`
	Data     string      `json:"data"`
	Backend  string      `json:"backend"`
	Batch    int         `json:"batch"`
	Epochs   int         `json:"epochs"`
	Images   int         `json:"images_per_epoch"`
	Threads  int         `json:"threads"` // in all, for every cell
	Cells    []trainCell `json:"cells"`
	Ablation []trainCell `json:"ablation,omitempty"`
	Repeats  int         `json:"repeats"`
	// WarmupTuneSeconds is the autotuning the warm-up runs paid (what a
	// machine's first runs pay before the tune cache holds the choices).
	WarmupTuneSeconds float64 `json:"warmup_tune_seconds,omitempty"`
}

var allVariants = []string{"plain", "autotune", "amp", "autotune+amp"}

func init() {
	benchCommands = append(benchCommands, func(stdout, stderr io.Writer) *cobra.Command {
		var o benchTrainOptions
		c := &cobra.Command{
			Use:   "train",
			Short: "The study's training table: single/DP/DDP × plain/+autotune/+AMP/+both, seconds and test accuracy",
			Long: `Train times ThinNet training (faster train) in every cell of the study's
"Model Running" table — rows single device, DP (one process, --devices engines)
and DDP (--devices processes over Gloo), columns plain, +autotune (cudnn.benchmark),
+AMP (bf16) and +autotune +AMP — each cell a fresh process using the same
--threads in all, and prints seconds, images/s and final test accuracy per
cell. Every cell also uses the default overlapped input and set_to_none
gradients; --ablation (default on) adds single-device runs without each, to
show what they gain. --json prints a "cells" list; --plot writes a PNG chart.

With --target-accuracy A it measures time to accuracy instead: faster train
and the PyTorch peer (bench/peer_thinnet_torch.py, run with --python) train
the same ThinNet (--filters) with the same recipe (--recipe) and
hyper-parameters, each evaluating on the test split every --eval-every
steps outside its training clock and stopping at the first evaluation that
reaches A, for --rounds rounds alternating which engine goes first. It
prints the training seconds each took to reach A and their ratio; --curve
writes every run's accuracy curve as JSON, --plot a PNG of accuracy against
training seconds.

Exit status: 0 done; 1 a cell failed; 2 usage error; 130 interrupted.`,
			Args: exactArgs(0),
			RunE: func(cmd *cobra.Command, args []string) error {
				o.lrSet = cmd.Flags().Changed("lr")
				return runBenchTrain(cmd.Context(), o, stdout, stderr)
			},
		}
		f := c.Flags()
		f.StringVar(&o.data, "data", "/usr/share/datasets/fashion-mnist", "training data (faster train --data)")
		f.IntVar(&o.epochs, "epochs", 1, "epochs per cell")
		f.IntVar(&o.limit, "limit", 0, "train on the first N images (0: all)")
		f.IntVar(&o.testLimit, "test-limit", 0, "evaluate on the first N test images (0: all)")
		f.IntVar(&o.batch, "batch", 64, "global batch size")
		f.Float64Var(&o.lr, "lr", 0.01, "learning rate")
		f.IntVar(&o.threads, "threads", 0, "compute threads in all, shared by the devices of dp and ddp (default: number of CPUs)")
		f.IntVar(&o.devices, "devices", 2, "devices of dp, processes of ddp")
		f.StringSliceVar(&o.strategies, "strategies", []string{"single", "dp", "ddp"}, "rows")
		f.StringSliceVar(&o.variants, "variants", allVariants, "columns")
		f.BoolVar(&o.syncBN, "sync-bn", false, "DP and DDP with SyncBN (the whole batch's BatchNorm statistics)")
		f.BoolVar(&o.ablation, "ablation", true, "also run single-device plain without overlapped input, and with zeroed gradients")
		f.StringVar(&o.backend, "backend", "", "compute backend (default: onednn when built with cgo)")
		f.BoolVar(&o.winograd, "winograd", true, "ours with Winograd convolutions, faster train's default (--winograd=false: direct, faster train --winograd=false); the peer keeps its own algorithm")
		f.IntSliceVar(&o.filters, "filters", nil, "ThinNet stage widths (default: the study's 32,64,128)")
		f.StringVar(&o.plot, "plot", "", "write a PNG bar chart of images/s per cell to this file")
		f.BoolVar(&o.json, "json", false, "print JSON")
		f.IntVar(&o.repeats, "repeats", 3, "timed runs of every cell, in rounds of alternating order (forward, then backward); the table shows medians with their spread")
		f.BoolVar(&o.warmup, "warmup", true, "first run every cell briefly, untimed (page cache, CPU clocks, and autotuning's tune cache: the first run on a machine pays for tuning there)")
		f.Float64Var(&o.targetAccuracy, "target-accuracy", 0, "time to accuracy instead of the table: seconds until the test accuracy first reaches this fraction (e.g. 0.9), ours and the PyTorch peer's")
		f.IntVar(&o.evalEvery, "eval-every", 20, "time to accuracy: evaluate on the test split every N steps (outside the clock)")
		f.StringVar(&o.recipe, "recipe", "", "time to accuracy: the training recipe both engines use (fast; --lr, when given, overrides its rate)")
		f.BoolVar(&o.recipeAblation, "recipe-ablation", false, "time to accuracy: also run ours and the peer with each part of --recipe fast turned off")
		f.IntVar(&o.rounds, "rounds", 1, "time to accuracy: rounds of ours and PyTorch, alternating which goes first")
		f.Uint64Var(&o.seed, "seed", 1, "time to accuracy: seed of both engines' weights and shuffles")
		f.StringVar(&o.peer, "peer", "bench/peer_thinnet_torch.py", "time to accuracy: the PyTorch peer script")
		f.StringVar(&o.python, "python", "/usr/bin/python3", "time to accuracy: the Python with torch (Debian's)")
		f.BoolVar(&o.noPeer, "no-peer", false, "time to accuracy: run ours only")
		f.BoolVar(&o.sameStart, "same-start", true, "time to accuracy: the peer starts from ours' initial weights and takes the training images in ours' order, so the runs differ by the engines' arithmetic only (--same-start=false: each engine draws its own from --seed)")
		f.IntVar(&o.oursDDP, "ours-ddp", 0, "time to accuracy: ours as N DDP processes of --threads/N threads each (faster train --strategy ddp --nproc N; BatchNorm statistics per rank, as torch DDP without SyncBN); the peer stays one process of --threads")
		f.StringVar(&o.curve, "curve", "", "time to accuracy: write the JSON of every run's accuracy curve to this file")
		return c
	})
}

func runBenchTrain(ctx context.Context, o benchTrainOptions, stdout, stderr io.Writer) error {
	if o.epochs < 1 || o.batch < 1 || o.limit < 0 || o.testLimit < 0 || o.threads < 0 || o.devices < 1 {
		return usagef("--epochs, --batch and --devices must be positive; --limit, --test-limit, --threads not negative")
	}
	if o.repeats < 1 || o.repeats > 1000 {
		return usagef("--repeats %d: want 1 to 1000", o.repeats)
	}
	if math.IsNaN(o.lr) || math.IsInf(o.lr, 0) || o.lr <= 0 {
		return usagef("--lr %g: must be a positive finite number", o.lr)
	}
	for _, s := range o.strategies {
		if s != "single" && s != "dp" && s != "ddp" {
			return usagef("--strategies: %q is not single, dp or ddp", s)
		}
	}
	for _, v := range o.variants {
		if !slices.Contains(allVariants, v) {
			return usagef("--variants: %q is not one of %s", v, strings.Join(allVariants, ", "))
		}
	}
	if _, err := os.Stat(o.data); err != nil {
		return err
	}
	threads := capWorkers(stderr, "--threads", o.threads, runtime.NumCPU())
	if threads == 0 {
		threads = runtime.NumCPU()
	}
	if o.targetAccuracy != 0 {
		return runTimeToAccuracy(ctx, o, threads, stdout, stderr)
	}
	sum := benchTrainSummary{Model: "thinnet", Data: o.data, Batch: o.batch, Epochs: o.epochs, Threads: threads}
	run := func(strategy, variant string, extra ...string) (trainCell, error) {
		args := append(o.trainArgs(strategy, variant, threads), extra...)
		fmt.Fprintf(stderr, "bench train: %s %s ...\n", strategy, variant)
		ts, err := runTrainChild(ctx, args, stderr)
		if err != nil {
			return trainCell{}, fmt.Errorf("%s %s: %w", strategy, variant, err)
		}
		if sum.Backend == "" {
			sum.Backend, sum.Images = ts.Backend, ts.TrainImages
		}
		c := trainCell{Strategy: strategy, Variant: variant, Seconds: ts.Seconds, ImagesPerSec: ts.ImagesPerSec,
			TestAccuracy: ts.TestAccuracy, Precision: ts.Precision, NativeAMP: ts.NativeAMP, Tuned: len(ts.Autotune),
			TuneSeconds: ts.TuneSeconds}
		fmt.Fprintf(stderr, "bench train: %s %s: %.1f s, %.1f images/s, test accuracy %.2f%%\n", strategy, variant, c.Seconds, c.ImagesPerSec, 100*c.TestAccuracy)
		return c, nil
	}
	type spec struct {
		strategy, variant string
		extra             []string
		ablation          bool
	}
	var specs []spec
	for _, s := range o.strategies {
		for _, v := range o.variants {
			specs = append(specs, spec{strategy: s, variant: v})
		}
	}
	if o.ablation {
		specs = append(specs, spec{"single", "no-overlap", []string{"--no-overlap"}, true},
			spec{"single", "zero-grad", []string{"--zero-grad"}, true})
	}
	if o.warmup {
		// A few steps of each cell, untimed: a cold first cell would
		// otherwise make the baseline look slow (page cache, CPU clocks),
		// and autotuning's first run on the machine fills the tune cache.
		steps, testSteps := 4*o.batch, 4*o.batch
		if o.limit > 0 {
			steps = min(steps, o.limit)
		}
		if o.testLimit > 0 {
			testSteps = min(testSteps, o.testLimit)
		}
		for _, c := range specs {
			w, err := run(c.strategy, c.variant, append(slices.Clone(c.extra), "--limit", strconv.Itoa(steps), "--test-limit", strconv.Itoa(testSteps))...)
			if err != nil {
				return fmt.Errorf("warm-up: %w", err)
			}
			sum.WarmupTuneSeconds += w.TuneSeconds
		}
		sum.Backend, sum.Images = "", 0 // the timed runs' figures, not the warm-up's
	}
	sum.Repeats = max(o.repeats, 1)
	runs := make([][]trainCell, len(specs))
	// Alternate the order between rounds: drift over the rounds hits every
	// cell alike.
	err := bench.Rounds(sum.Repeats, len(specs), func(_, i int) error {
		c, err := run(specs[i].strategy, specs[i].variant, specs[i].extra...)
		if err != nil {
			return err
		}
		runs[i] = append(runs[i], c)
		return nil
	})
	if err != nil {
		return err
	}
	var base []trainCell
	for i, c := range specs {
		if c.strategy == "single" && c.variant == "plain" {
			base = runs[i]
		}
	}
	for i, c := range specs {
		cell := medianCell(runs[i], base)
		if c.ablation {
			sum.Ablation = append(sum.Ablation, cell)
		} else {
			sum.Cells = append(sum.Cells, cell)
		}
	}
	if o.plot != "" {
		var bars []bench.Bar
		for _, c := range append(sum.Cells, sum.Ablation...) {
			bars = append(bars, bench.Bar{Label: c.Strategy + " " + c.Variant, Value: c.ImagesPerSec, Note: fmt.Sprintf("%.1f%%", 100*c.TestAccuracy)})
		}
		if err := bench.PlotBars(o.plot, fmt.Sprintf("faster bench train: ThinNet, batch %d, %d threads", o.batch, threads), "images/s", bars); err != nil {
			return err
		}
	}
	if o.json {
		return writeJSON(stdout, sum)
	}
	return printTrainTable(stdout, sum, o)
}

// trainArgs are the `faster train` flags of one cell: strategy and
// variant over the shared data and hyper-parameters, threads in all (a
// ddp process gets its share).
func (o benchTrainOptions) trainArgs(strategy, variant string, threads int) []string {
	perProcess := threads
	if strategy == "ddp" {
		perProcess = max(1, threads/o.devices)
	}
	args := []string{"train", "--data", o.data, "--epochs", strconv.Itoa(o.epochs), "--batch", strconv.Itoa(o.batch),
		"--lr", strconv.FormatFloat(o.lr, 'g', -1, 64), "--threads", strconv.Itoa(perProcess), "--json", "--strategy", strategy}
	if o.limit > 0 {
		args = append(args, "--limit", strconv.Itoa(o.limit))
	}
	if o.testLimit > 0 {
		args = append(args, "--test-limit", strconv.Itoa(o.testLimit))
	}
	if o.backend != "" {
		args = append(args, "--backend", o.backend)
	}
	if !o.winograd {
		args = append(args, "--winograd=false")
	}
	if len(o.filters) > 0 {
		args = append(args, "--filters", joinInts(o.filters))
	}
	if o.syncBN && strategy != "single" {
		args = append(args, "--sync-bn")
	}
	switch strategy {
	case "dp":
		args = append(args, "--devices", strconv.Itoa(o.devices))
	case "ddp":
		args = append(args, "--nproc", strconv.Itoa(o.devices))
	}
	if strings.Contains(variant, "autotune") {
		args = append(args, "--autotune")
	}
	if strings.Contains(variant, "amp") {
		args = append(args, "--amp")
	}
	return args
}

// printTrainTable prints the cells like the study's README: the baseline,
// then a row per strategy and a column per variant.
func printTrainTable(w io.Writer, sum benchTrainSummary, o benchTrainOptions) error {
	fmt.Fprintf(w, "Model Running\n\nThinNet on %s, batch %d, %d epoch(s) of %d images, %d threads in all, %s backend\n\n",
		sum.Data, sum.Batch, sum.Epochs, sum.Images, sum.Threads, sum.Backend)
	cell := func(s, v string) *trainCell {
		for i := range sum.Cells {
			if sum.Cells[i].Strategy == s && sum.Cells[i].Variant == v {
				return &sum.Cells[i]
			}
		}
		return nil
	}
	base := cell("single", "plain")
	if base != nil {
		fmt.Fprintf(w, "Baseline (single device, plain): %.1f s, %.1f images/s, test accuracy %.2f%%\n\n", base.Seconds, base.ImagesPerSec, 100*base.TestAccuracy)
	}
	header := []string{""}
	for _, v := range o.variants {
		header = append(header, map[string]string{"plain": "plain", "autotune": "+autotune", "amp": "+AMP", "autotune+amp": "+autotune +AMP"}[v])
	}
	var rows [][]string
	for _, s := range o.strategies {
		row := []string{map[string]string{"single": "single", "dp": fmt.Sprintf("DP (%d)", o.devices), "ddp": fmt.Sprintf("DDP (%d)", o.devices)}[s]}
		for _, v := range o.variants {
			row = append(row, cellText(cell(s, v), base))
		}
		rows = append(rows, row)
	}
	if err := bench.Table(w, header, rows); err != nil {
		return err
	}
	if sum.Repeats > 1 {
		fmt.Fprintf(w, "\ncells: median training seconds of %d runs [lowest–highest] (of which autotuning) · final test accuracy · speed-up over the baseline, the median of the rounds' ratios [lowest–highest]; a ratio whose spread holds 1.0 is marked ≈ (no difference shown)\n", sum.Repeats)
	} else {
		fmt.Fprintln(w, "\ncells: training seconds (of which autotuning, once per layer shape) · final test accuracy · speed-up over the baseline (one run each: no spread; --repeats for medians)")
	}
	if sum.WarmupTuneSeconds > 0 {
		fmt.Fprintf(w, "autotuning: the warm-up runs spent %.1f s tuning (choices kept in the tune cache, so the timed runs pay only for what the warm-up's shapes did not cover)\n", sum.WarmupTuneSeconds)
	}
	for _, c := range sum.Cells {
		if c.Precision != "fp32" && !c.NativeAMP {
			fmt.Fprintln(w, "AMP: bf16 emulated by rounding (this CPU has no bf16 instructions): it shows accuracy, not speed")
			break
		}
	}
	if base != nil && len(sum.Ablation) > 0 {
		fmt.Fprintln(w, "\nSingle device, plain, without each of the defaults:")
		for _, a := range sum.Ablation {
			what := map[string]string{"no-overlap": "input prepared after each step (no overlap)", "zero-grad": "gradients zeroed and accumulated (zero_grad without set_to_none)"}[a.Variant]
			fmt.Fprintf(w, "  %s: %.1f s vs %.1f s: the default is %s as fast\n", what, a.Seconds, base.Seconds, bench.RatioText(1/a.Speedup, 1/a.SpeedupHigh, 1/a.SpeedupLow, len(a.Runs) > 1))
		}
	}
	return nil
}

// medianCell is a cell's figures over its runs: those of the median run
// by seconds (the lower middle of an even count), the runs' spread, and
// the speed-up over the baseline's run of the same round (base; none for
// the baseline itself or without one).
func medianCell(runs, base []trainCell) trainCell {
	secs := func(cells []trainCell) []float64 {
		var v []float64
		for _, c := range cells {
			v = append(v, c.Seconds)
		}
		return v
	}
	i, low, high := bench.Median(secs(runs))
	c := runs[i]
	c.Runs, c.Low, c.High = secs(runs), low, high
	if len(base) == len(runs) && &base[0] != &runs[0] {
		if mid, lo, hi, ok := bench.PairedRatio(secs(base), c.Runs); ok {
			c.Speedup, c.SpeedupLow, c.SpeedupHigh = mid, lo, hi
		}
	}
	return c
}

// cellText is a table cell: seconds (median [spread]), tuning, accuracy,
// speed-up over the baseline.
func cellText(c, base *trainCell) string {
	if c == nil {
		return "—"
	}
	text := fmt.Sprintf("%.1f s", c.Seconds)
	if len(c.Runs) > 1 {
		text += fmt.Sprintf(" [%.1f–%.1f]", c.Low, c.High)
	}
	if c.TuneSeconds > 0 {
		text += fmt.Sprintf(" (%.1f tuning)", c.TuneSeconds)
	}
	text += fmt.Sprintf(" · %.1f%%", 100*c.TestAccuracy)
	if base != nil && c != base && c.Speedup > 0 {
		text += " · " + bench.RatioText(c.Speedup, c.SpeedupLow, c.SpeedupHigh, len(c.Runs) > 1)
	}
	return text
}

// runTrainChild runs `faster train ... --json` as a child process and
// returns its summary.
func runTrainChild(ctx context.Context, args []string, stderr io.Writer) (fit.Summary, error) {
	exe, err := os.Executable()
	if err != nil {
		return fit.Summary{}, err
	}
	return bench.RunSummary(ctx, exe, args, append(os.Environ(), benchChildEnv+"=1"))
}
