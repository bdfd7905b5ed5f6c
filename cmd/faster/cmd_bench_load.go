package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/faster-training/faster/bench"
	_ "github.com/faster-training/faster/gpudecode" // registers device "cuda" (with cgo; without, Open names why)
	"github.com/faster-training/faster/loader"
)

// benchLoadOptions are the flags of `faster bench load`: the loader's,
// the benchmark's config bound to its fields, and the output.
type benchLoadOptions struct {
	loaderFlags
	badDataFlags
	bench.LoadConfig
	resumeFrom []string
	plot       string
	json       bool
}

func init() {
	benchCommands = append(benchCommands, func(stdout, stderr io.Writer) *cobra.Command {
		var o benchLoadOptions
		var workers string
		c := &cobra.Command{
			Use:   "load DATA...",
			Short: "Run the input pipeline as fast as it can; report images/s, MB/s and the bottleneck",
			Long: `Load runs the Faster Training study's ImageNet input pipeline (train: random-resized-crop, flip,
normalise; eval: resize 256 + centre crop 224; none: read only) over DATA
(an ImageFolder tree, a packed dataset directory, a directory or glob of
TFRecord shards, such as TensorFlow's ImageNet train-00000-of-01024) as fast as
it can, and reports images/s, MB/s of encoded data read, per-stage statistics,
the bottleneck (io, decode or consumer) and a digest of the ordered sample keys.
--workers takes a list (1,2,0 where 0 is auto): one table row per value.
DATA may also be WebDataset tar shards or a Caffe LMDB. Several paths (a
shell's expansion of dir/train-*) are one dataset, one row: the files' formats
are told by their bytes, and the .idx indexes among them are left out.
Shards without a manifest do not record their number of classes: --classes N
checks every label against it (labels counting from 1, as TensorFlow's
ImageNet shards' do, want --label-offset -1).

Bad data: --on-error stop (default) fails at the first damaged sample, naming
file and offset; --on-error skip skips damaged samples, lists them (--quarantine
FILE: one JSON object per line with path, offset, reason) and fails only when
more than --max-bad (a count, or a percentage like 0.1%) are met in an epoch.

Exact resume (indexed sources: ImageFolder, LMDB, WebDataset, --global-shuffle
shards): --steps k --save-state FILE stops after k batches and writes this rank's
position; --resume-from FILE (repeat it, once per rank of the earlier run, to
merge their states) serves exactly the samples not yet served, in order, also
with another --num-shards.

Exit status: 0 done; 1 failed (unreadable data); 2 usage error; 130 interrupted.`,
			Args: minArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				o.Data = args
				for _, w := range strings.Split(workers, ",") {
					n, err := strconv.Atoi(strings.TrimSpace(w))
					if err != nil || n < 0 {
						return usagef("--workers %q: want a comma-separated list of counts (0 = auto)", workers)
					}
					o.Workers = append(o.Workers, n)
				}
				return runBenchLoad(cmd.Context(), o, stdout, stderr)
			},
		}
		f := c.Flags()
		o.register(f, "train, eval or none")
		f.StringVar(&workers, "workers", "0", "decode workers, or a list for one row each (0 = auto)")
		f.IntVar(&o.Epochs, "epochs", 1, "epochs to run")
		f.IntVar(&o.Steps, "steps", 0, "stop after this many batches in all (overrides --epochs)")
		f.BoolVar(&o.DropCaches, "drop-caches", false, "drop the page cache before each run (root only)")
		f.StringVar(&o.DumpKeys, "dump-keys", "", "write the served sample keys, one per line, in order (without the repeats that even out the ranks); a key holding a control character or starting with a double quote is Go-quoted")
		o.registerBad(f)
		f.StringArrayVar(&o.resumeFrom, "resume-from", nil, "resume the epoch from a saved state (repeat for the states of several ranks)")
		f.StringVar(&o.SaveState, "save-state", "", "write the loader's position (JSON) to this file at the end")
		f.Float64Var(&o.ConsumerRate, "consumer-rate", 0, "simulate a trainer taking this many images/s")
		f.StringVar(&o.plot, "plot", "", "write a PNG bar chart of images/s to this file")
		f.BoolVar(&o.Profile, "profile", false, "split the CPU time per sample into read, decode, crop/resize and normalise/convert (which is the batch copy: rows are written in place)")
		f.BoolVar(&o.json, "json", false, "print JSON")
		return c
	})
}

func runBenchLoad(ctx context.Context, o benchLoadOptions, stdout, stderr io.Writer) error {
	c, err := o.config(stderr)
	if err != nil {
		return err
	}
	results, err := bench.Load(ctx, c)
	switch {
	case errors.Is(err, loader.ErrResume):
		return fmt.Errorf("--resume-from %s: %w", strings.Join(o.resumeFrom, ", "), err)
	case errors.Is(err, loader.ErrQuarantinePath):
		return usagef("%v", err)
	case err != nil:
		return err
	}
	if o.plot != "" {
		if err := bench.PlotLoad(o.plot, results, o.transform); err != nil {
			return err
		}
	}
	if !o.json {
		return bench.WriteLoadTable(stdout, results, o.quarantine)
	}
	if len(results) == 1 {
		return writeJSON(stdout, results[0])
	}
	return writeJSON(stdout, map[string]any{"results": results})
}

// config checks the flags and returns the benchmark they describe (the
// states of --resume-from read and merged).
func (o benchLoadOptions) config(stderr io.Writer) (bench.LoadConfig, error) {
	c := o.LoadConfig
	if err := c.Check(); err != nil {
		return c, benchUsage(err)
	}
	if err := o.check(); err != nil {
		return c, err
	}
	// Output files are checked before the run, not after it.
	for _, f := range []struct{ flag, path string }{{"--dump-keys", o.DumpKeys}, {"--save-state", o.SaveState}, {"--plot", o.plot}, {"--quarantine", o.quarantine}} {
		if st, err := os.Stat(f.path); f.path != "" && err == nil && st.IsDir() {
			return c, usagef("%s %s: a directory; give a file name", f.flag, f.path)
		}
	}
	workers := o.Workers
	if len(workers) == 0 {
		workers = []int{0}
	}
	for i, w := range workers {
		workers[i] = capWorkers(stderr, "--workers", w, runtime.NumCPU())
	}
	policy, err := o.policy()
	if err != nil {
		return c, err
	}
	if (o.SaveState != "" || len(o.resumeFrom) > 0) && len(workers) > 1 {
		return c, usagef("--save-state and --resume-from take one --workers value")
	}
	c.Loader, c.Workers, c.Quarantine, c.Log = o.options(0), workers, o.quarantine, stderr
	c.Loader.BadData = policy
	c.Resume, err = bench.ReadResume(o.resumeFrom)
	return c, err
}
