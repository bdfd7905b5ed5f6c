package main

import (
	"context"
	"errors"
	"io"
	"os"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/faster-training/faster/bench"
)

// benchChildEnv marks a `faster train` started by `faster bench train`
// (the tests' binary uses it to act as faster).
const benchChildEnv = "FASTER_BENCH_CHILD"

// benchTrainOptions are the flags of `faster bench train`: the benchmark's
// config, bound to its fields, and the output.
type benchTrainOptions struct {
	bench.TrainConfig
	plot string
	json bool
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
				o.LRSet = cmd.Flags().Changed("lr")
				return runBenchTrain(cmd.Context(), o, stdout, stderr)
			},
		}
		f := c.Flags()
		f.StringVar(&o.Data, "data", "/usr/share/datasets/fashion-mnist", "training data (faster train --data)")
		f.IntVar(&o.Epochs, "epochs", 1, "epochs per cell")
		f.IntVar(&o.Limit, "limit", 0, "train on the first N images (0: all)")
		f.IntVar(&o.TestLimit, "test-limit", 0, "evaluate on the first N test images (0: all)")
		f.IntVar(&o.Batch, "batch", 64, "global batch size")
		f.Float64Var(&o.LR, "lr", 0.01, "learning rate")
		f.IntVar(&o.Threads, "threads", 0, "compute threads in all, shared by the devices of dp and ddp (default: number of CPUs)")
		f.IntVar(&o.Devices, "devices", 2, "devices of dp, processes of ddp")
		f.StringSliceVar(&o.Strategies, "strategies", bench.Strategies, "rows")
		f.StringSliceVar(&o.Variants, "variants", bench.Variants, "columns")
		f.BoolVar(&o.SyncBN, "sync-bn", false, "DP and DDP with SyncBN (the whole batch's BatchNorm statistics)")
		f.BoolVar(&o.Ablation, "ablation", true, "also run single-device plain without overlapped input, and with zeroed gradients")
		f.StringVar(&o.Backend, "backend", "", "compute backend (default: cuda on a cuda --device, else onednn when built with cgo)")
		f.StringVar(&o.Device, "device", "", "where every cell trains: cpu (default), cuda or cuda:N (faster train --device)")
		f.StringVar(&o.AMPDtype, "amp-dtype", "", "the AMP columns' precision: bf16 (default) or fp16 with the GradScaler (the study's on a GPU)")
		f.BoolVar(&o.Winograd, "winograd", true, "ours with Winograd convolutions, faster train's default (--winograd=false: direct, faster train --winograd=false); the peer keeps its own algorithm")
		f.IntSliceVar(&o.Filters, "filters", nil, "ThinNet stage widths (default: the study's 32,64,128)")
		f.StringVar(&o.plot, "plot", "", "write a PNG bar chart of images/s per cell to this file")
		f.BoolVar(&o.json, "json", false, "print JSON")
		f.IntVar(&o.Repeats, "repeats", 3, "timed runs of every cell, in rounds of alternating order (forward, then backward); the table shows medians with their spread")
		f.BoolVar(&o.Warmup, "warmup", true, "first run every cell briefly, untimed (page cache, CPU clocks, and autotuning's tune cache: the first run on a machine pays for tuning there)")
		f.Float64Var(&o.TargetAccuracy, "target-accuracy", 0, "time to accuracy instead of the table: seconds until the test accuracy first reaches this fraction (e.g. 0.9), ours and the PyTorch peer's")
		f.IntVar(&o.EvalEvery, "eval-every", 20, "time to accuracy: evaluate on the test split every N steps (outside the clock)")
		f.StringVar(&o.Recipe, "recipe", "", "time to accuracy: the training recipe both engines use (fast; --lr, when given, overrides its rate)")
		f.BoolVar(&o.RecipeAblation, "recipe-ablation", false, "time to accuracy: also run ours and the peer with each part of --recipe fast turned off")
		f.IntVar(&o.Rounds, "rounds", 1, "time to accuracy: rounds of ours and PyTorch, alternating which goes first")
		f.Uint64Var(&o.Seed, "seed", 1, "time to accuracy: seed of both engines' weights and shuffles")
		f.StringVar(&o.Peer, "peer", "bench/peer_thinnet_torch.py", "time to accuracy: the PyTorch peer script")
		f.StringVar(&o.Python, "python", "/usr/bin/python3", "time to accuracy: the Python with torch (Debian's)")
		f.BoolVar(&o.NoPeer, "no-peer", false, "time to accuracy: run ours only")
		f.BoolVar(&o.SameStart, "same-start", true, "time to accuracy: the peer starts from ours' initial weights and takes the training images in ours' order, so the runs differ by the engines' arithmetic only (--same-start=false: each engine draws its own from --seed)")
		f.IntVar(&o.OursDDP, "ours-ddp", 0, "time to accuracy: ours as N DDP processes of --threads/N threads each (faster train --strategy ddp --nproc N; BatchNorm statistics per rank, as torch DDP without SyncBN); the peer stays one process of --threads")
		f.StringVar(&o.Curve, "curve", "", "time to accuracy: write the JSON of every run's accuracy curve to this file")
		return c
	})
}

func runBenchTrain(ctx context.Context, o benchTrainOptions, stdout, stderr io.Writer) error {
	c, err := o.config(stderr)
	if err != nil {
		return err
	}
	if o.TargetAccuracy != 0 {
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
	c := o.TrainConfig
	if err := c.Check(); err != nil {
		return c, benchUsage(err)
	}
	threads := capWorkers(stderr, "--threads", o.Threads, runtime.NumCPU())
	if threads == 0 {
		threads = runtime.NumCPU()
	}
	if err := c.CheckTTA(threads); err != nil {
		return c, benchUsage(err)
	}
	c.Threads, c.Env, c.Log = threads, append(os.Environ(), benchChildEnv+"=1"), stderr
	var err error
	c.Faster, err = os.Executable()
	return c, err
}

// benchUsage is err, a usage error when bench says the configuration was
// given wrongly (bench.UsageError).
func benchUsage(err error) error {
	var ue *bench.UsageError
	if errors.As(err, &ue) {
		return usagef("%s", ue.Msg)
	}
	return err
}
