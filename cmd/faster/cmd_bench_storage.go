package main

import (
	"context"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/faster-training/faster/bench"
)

// benchStorageOptions are the flags of `faster bench storage`.
type benchStorageOptions struct {
	rows    []string
	classes string
	engines []string
	epochs  int
	workers int
	batch   int
	json    bool

	noWarmup bool
	device   string
}

func init() {
	benchCommands = append(benchCommands, func(stdout, stderr io.Writer) *cobra.Command {
		var o benchStorageOptions
		c := &cobra.Command{
			Use:   "storage ROW...",
			Short: "The loading benchmark on simulated storage (HDD, SSD) through the kernel's block-IO throttle",
			Long: `Storage runs loaders over datasets as if they lived on slower storage: each
storage class is a cgroup with the kernel's block-IO read throttle (cgroup v1
blkio.throttle, or v2 io.max) on the disk that holds the data, and the
dataset's pages are evicted from the page cache before every run (the
loaders' own binaries and libraries stay cached), so every byte of data comes
from the throttled device. Needs root and the blkio (v1) or io (v2) controller.

Each ROW is ID=PATH, optionally followed by flags for faster bench load after
commas: "imagefolder=/data/tree", "shards-global=/data/shards,--global-shuffle".

--class takes a comma-separated list of storage classes: hdd (150 reads/s,
120 MB/s), ssd (20,000 reads/s, 500 MB/s), disk (data evicted from the cache, no throttle),
cache (page cache warm, no throttle), or NAME:BPS:IOPS (BPS with k/M/G
suffixes, 0 = unlimited).

--engine NAME=COMMAND adds a loader to compare (repeatable; the default is our
own, "faster bench load", also named by --engine faster=); NAME@ID+ID=COMMAND
runs it on those rows only. --engine faster-cuda= (or faster-cuda:N=) is ours
decoding on the GPU (faster bench load --device cuda: nvJPEG), the study's
DALI GPU column; --device cuda adds it beside the others.
COMMAND is a shell command with {faster} {path} {flags} {epochs} {workers}
{batch} replaced, and must print a JSON object with images_per_sec (and
seconds, images; a bottleneck if it names one) as its last line.

Before the table, each engine runs once unthrottled (discarded), so that its
binary, interpreter and libraries are cached and only the data meets the
throttle (--no-warmup to skip).

Each cell reports images/s, the MB/s the device served (the cgroup's own
counters), and the verdict: the engine's own (io, decode, consumer) if it names
one, else io when the device ran at 80% of a throttle limit, else cpu.

Exit status: 0 done; 1 failed (throttle unavailable, an engine failed); 2 usage error; 130 interrupted.`,
			Args: minArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				o.rows = args
				return runBenchStorage(cmd.Context(), o, stdout, stderr)
			},
		}
		f := c.Flags()
		f.StringVar(&o.classes, "class", "hdd,ssd", "storage classes: hdd, ssd, disk, cache or NAME:BPS:IOPS")
		f.StringArrayVar(&o.engines, "engine", nil, "NAME[@ROW+ROW]=COMMAND: a loader to compare (default: faster bench load)")
		f.IntVar(&o.epochs, "epochs", 1, "epochs per run")
		f.IntVar(&o.workers, "workers", 1, "decode workers per run")
		f.IntVar(&o.batch, "batch", 64, "batch size")
		f.StringVar(&o.device, "device", "", "cuda or cuda:N: add our loader decoding on that GPU (--engine faster-cuda=) beside the others")
		f.BoolVar(&o.noWarmup, "no-warmup", false, "skip the unthrottled warm-up run of each engine")
		f.BoolVar(&o.json, "json", false, "print JSON")
		return c
	})
}

func runBenchStorage(ctx context.Context, o benchStorageOptions, stdout, stderr io.Writer) error {
	if o.epochs < 1 || o.workers < 0 || o.batch < 1 {
		return usagef("--epochs and --batch must be at least 1, --workers not negative")
	}
	c := bench.StorageConfig{Epochs: o.epochs, Workers: o.workers, Batch: o.batch, NoWarmup: o.noWarmup,
		Env: append(os.Environ(), benchChildEnv+"=1"), Log: stderr}
	var err error
	if c.Classes, err = bench.ParseStorageClasses(o.classes); err != nil {
		return usagef("--class %v", err)
	}
	if c.Rows, err = bench.ParseStorageRows(o.rows); err != nil {
		return usagef("%v", err)
	}
	if c.Engines, err = bench.ParseStorageEngines(o.engines, c.Rows); err != nil {
		return usagef("--engine %v", err)
	}
	if o.device != "" {
		e, ok := bench.GPUStorageEngine("faster-" + o.device)
		if !ok {
			return usagef("--device %q: want cuda or cuda:N", o.device)
		}
		c.Engines = append(c.Engines, e)
	}
	if c.Faster, err = os.Executable(); err != nil {
		return err
	}
	rep, err := bench.Storage(ctx, c)
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(stdout, rep)
	}
	return bench.WriteStorageTable(stdout, rep, c.Rows, c.Engines)
}
