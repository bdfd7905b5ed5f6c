package main

import (
	"context"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/faster-training/faster/bench"
)

// benchChildEnv marks a `faster train` started by `faster bench train`
// (the tests' binary uses it to act as faster).
const benchChildEnv = "FASTER_BENCH_CHILD"

// benchTrainOptions are the flags of `faster bench train`.
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

	// Time to accuracy.
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

func init() {
	benchCommands = append(benchCommands, func(stdout, stderr io.Writer) *cobra.Command {
		var o benchTrainOptions
		c := &cobra.Command{
			Use:   "train",
			Short: "The study's training table: single/DP/DDP × plain/+autotune/+AMP/+both, seconds and test accuracy",
			Long: `Train times ThinNet training (faster train) in every cell of the study's
"Model Running" table — rows single device, DP (one process, --devices engines)
and DDP (--devices processes over Gloo), columns plain, +autotune (cudnn.benchmark),
+AMP (bf16) and +autotune +AMP — each cell a fresh process (faster train
--config FILE, the cell's run written as a fit.Config) using the same
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
		f.StringSliceVar(&o.strategies, "strategies", bench.Strategies, "rows")
		f.StringSliceVar(&o.variants, "variants", bench.Variants, "columns")
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
	c, err := o.config(stderr)
	if err != nil {
		return err
	}
	if o.targetAccuracy != 0 {
		sum, err := bench.TimeToAccuracy(ctx, c)
		if err != nil {
			return err
		}
		if o.plot != "" {
			if err := bench.PlotTTA(o.plot, sum); err != nil {
				return err
			}
		}
		if o.json {
			return writeJSON(stdout, sum)
		}
		return bench.WriteTTATable(stdout, sum)
	}
	sum, err := bench.Train(ctx, c)
	if err != nil {
		return err
	}
	if o.plot != "" {
		if err := bench.PlotTrain(o.plot, sum); err != nil {
			return err
		}
	}
	if o.json {
		return writeJSON(stdout, sum)
	}
	return bench.WriteTrainTable(stdout, sum, c)
}

// config checks the flags and returns the benchmark they describe.
func (o benchTrainOptions) config(stderr io.Writer) (bench.TrainConfig, error) {
	var c bench.TrainConfig
	if o.epochs < 1 || o.batch < 1 || o.limit < 0 || o.testLimit < 0 || o.threads < 0 || o.devices < 1 {
		return c, usagef("--epochs, --batch and --devices must be positive; --limit, --test-limit, --threads not negative")
	}
	if o.repeats < 1 || o.repeats > 1000 {
		return c, usagef("--repeats %d: want 1 to 1000", o.repeats)
	}
	if math.IsNaN(o.lr) || math.IsInf(o.lr, 0) || o.lr <= 0 {
		return c, usagef("--lr %g: must be a positive finite number", o.lr)
	}
	for _, s := range o.strategies {
		if !slices.Contains(bench.Strategies, s) {
			return c, usagef("--strategies: %q is not single, dp or ddp", s)
		}
	}
	for _, v := range o.variants {
		if !slices.Contains(bench.Variants, v) {
			return c, usagef("--variants: %q is not one of %s", v, strings.Join(bench.Variants, ", "))
		}
	}
	if _, err := os.Stat(o.data); err != nil {
		return c, err
	}
	threads := capWorkers(stderr, "--threads", o.threads, runtime.NumCPU())
	if threads == 0 {
		threads = runtime.NumCPU()
	}
	if o.targetAccuracy != 0 {
		if err := o.checkTTA(threads); err != nil {
			return c, err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return c, err
	}
	return bench.TrainConfig{Data: o.data, Epochs: o.epochs, Limit: o.limit, TestLimit: o.testLimit, Batch: o.batch,
		LR: o.lr, LRSet: o.lrSet, Threads: threads, Devices: o.devices, Strategies: o.strategies, Variants: o.variants,
		Ablation: o.ablation, SyncBN: o.syncBN, Backend: o.backend, Winograd: o.winograd, Filters: o.filters,
		Repeats: o.repeats, Warmup: o.warmup, TargetAccuracy: o.targetAccuracy, EvalEvery: o.evalEvery,
		Recipe: o.recipe, RecipeAblation: o.recipeAblation, Rounds: o.rounds, Seed: o.seed, Peer: o.peer,
		Python: o.python, NoPeer: o.noPeer, SameStart: o.sameStart, OursDDP: o.oursDDP, Curve: o.curve,
		Faster: exe, Env: append(os.Environ(), benchChildEnv+"=1"), Log: stderr}, nil
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
