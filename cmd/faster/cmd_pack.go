package main

import (
	"context"
	"errors"
	"io"
	"os"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/faster-training/faster/internal/task"
	"github.com/faster-training/faster/progress"
	"github.com/faster-training/faster/shard"
	"github.com/faster-training/faster/source"
)

type packOptions struct {
	src, dst string
	from     string
	split    string
	shards   int
	workers  int
	shuffle  bool
	seed     uint64
	strict   bool
	format   string
	json     bool

	task      string // --task i/n
	taskCount int    // --task-count
	merge     bool
}

func init() {
	commands = append(commands, func(stdout, stderr io.Writer) *cobra.Command {
		var o packOptions
		c := &cobra.Command{
			Use:   "pack SRC DST | pack --merge DST",
			Short: "Pack a dataset into TFRecord or WebDataset shards with indexes and a manifest",
			Long: `Pack reads a dataset (an ImageFolder tree: one folder per class; MNIST-style
IDX files; a Caffe LMDB; WebDataset tar shards) and writes, with --format
tfrecord (the default), DST/<split>-NNNNN-of-NNNNN.tfrecord shards of
tf.train.Example records with a DALI tfrecord2idx .idx beside each, or, with
--format wds, DST/<split>-NNNNN-of-NNNNN.tar WebDataset shards (<key>.jpg,
<key>.cls, <key>.json per sample) with a DALI wds2idx .idx beside each; and
DST/manifest.json.
Writes are atomic; a rerun keeps the shards the manifest lists as complete,
except those that skipped a file that now loads. DST is locked while a pack
writes it (a second pack into it fails at once) and must not lie inside SRC.
Unreadable or non-image files are skipped and listed (or stop the run with --strict).

On many machines: each task packs its part of the split — the shards a
one-machine pack writes at those positions, byte for byte — and commits a
part manifest under DST/.faster-parts/ (create-only), then
"faster pack --merge DST" checks every part (counts, sizes, sha256) and
writes DST/manifest.json, the one a one-machine pack writes; it names every
task missing or incomplete at once, and rerunning just those completes the
set. The task is --task i/n (0-based), else read from the environment:
Kubernetes Indexed Job (JOB_COMPLETION_INDEX, with --task-count N or
FASTER_TASK_COUNT: Kubernetes does not set the count), Slurm job array
(SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_COUNT), srun
(SLURM_PROCID, SLURM_NTASKS), Open MPI (OMPI_COMM_WORLD_RANK, _SIZE), PMI
(PMI_RANK, PMI_SIZE), torchrun (RANK, WORLD_SIZE). --task wins; sources that
disagree are an error naming them. See docs/parallel.md.

Exit status: 0 packed (merged); 1 failed (or a bad file under --strict, or
tasks not done at --merge); 2 usage error.`,
			Args: func(cmd *cobra.Command, args []string) error {
				if o.merge {
					return exactArgs(1)(cmd, args)
				}
				return exactArgs(2)(cmd, args)
			},
			RunE: func(cmd *cobra.Command, args []string) error {
				if o.merge {
					o.dst = args[0]
					return runPackMerge(cmd.Context(), cmd, o, stdout)
				}
				o.src, o.dst = args[0], args[1]
				return runPack(cmd.Context(), o, stdout, stderr)
			},
		}
		f := c.Flags()
		f.StringVar(&o.from, "from", "", "source kind: imagefolder, idx, lmdb or wds (default: detect)")
		f.StringVar(&o.format, "format", "tfrecord", "shard format: tfrecord or wds")
		f.StringVar(&o.split, "split", "train", "split to pack (IDX: train or test) and the shard name prefix")
		f.IntVar(&o.shards, "shards", 0, "number of shards (default: one per ~64 MiB, at least 8)")
		f.IntVar(&o.workers, "workers", 0, "parallel workers (default: number of CPUs)")
		f.BoolVar(&o.shuffle, "shuffle", false, "shuffle records across shards")
		f.Uint64Var(&o.seed, "seed", 0, "seed for --shuffle")
		f.BoolVar(&o.strict, "strict", false, "stop at the first unreadable or non-image file")
		f.BoolVar(&o.json, "json", false, "print a JSON summary")
		f.StringVar(&o.task, "task", "", "pack only task i of n (i/n, 0-based) of the split; default: from the scheduler's environment")
		f.IntVar(&o.taskCount, "task-count", 0, "the task count of a Kubernetes Indexed Job (its completions; or set FASTER_TASK_COUNT)")
		f.BoolVar(&o.merge, "merge", false, "merge the tasks' parts in DST into its manifest")
		return c
	})
}

func runPack(ctx context.Context, o packOptions, stdout, stderr io.Writer) error {
	switch o.from {
	case "", "imagefolder", "idx", "lmdb", "wds":
	default:
		return usagef("--from %q: want imagefolder, idx, lmdb or wds", o.from)
	}
	switch o.format {
	case "":
		o.format = shard.FormatTFRecord
	case shard.FormatTFRecord, shard.FormatWDS:
	default:
		return usagef("--format %q: want tfrecord or wds", o.format)
	}
	if o.shards < 0 || o.workers < 0 {
		return usagef("--shards and --workers must not be negative")
	}
	if err := shard.CheckSplitName(o.split); err != nil {
		return usagef("--split: %v", err)
	}
	t, tasked, err := task.Resolve(o.task, o.taskCount, os.Getenv)
	if err != nil {
		return usagef("pack: %v", err)
	}
	o.workers = capWorkers(stderr, "--workers", o.workers, runtime.NumCPU())
	src, err := source.Open(o.src, o.from, o.split)
	if err != nil {
		return err
	}
	if c, ok := src.(interface{ Close() error }); ok {
		defer c.Close()
	}
	bar := progress.New(stderr, "pack "+o.split, int64(len(src.Items())), "records")
	defer bar.Done()
	res, err := shard.Pack(ctx, src, o.src, o.dst, shard.PackOptions{
		Split: o.split, Shards: o.shards, Workers: o.workers,
		Shuffle: o.shuffle, Seed: o.seed, Strict: o.strict, Format: o.format,
		Progress:  func(n int, b int64) { bar.Add(int64(n), b) },
		TaskIndex: t.Index, TaskCount: t.Count,
	})
	bar.Done()
	if err != nil {
		return err
	}
	rep := shard.NewPackReport(res, task.OrNil(t, tasked), o.src, src.Kind(), o.dst)
	if o.json {
		return writeJSON(stdout, rep)
	}
	rep.WriteText(stdout)
	return nil
}

func runPackMerge(ctx context.Context, cmd *cobra.Command, o packOptions, stdout io.Writer) error {
	for _, f := range []string{"from", "format", "shards", "shuffle", "seed", "strict", "task", "task-count"} {
		if cmd.Flags().Changed(f) {
			return usagef("--merge takes DST, --split, --workers and --json; --%s belongs to the tasks", f)
		}
	}
	if o.workers < 0 {
		return usagef("--workers must not be negative")
	}
	if err := shard.CheckSplitName(o.split); err != nil {
		return usagef("--split: %v", err)
	}
	if o.workers == 0 {
		o.workers = runtime.NumCPU()
	}
	res, err := shard.MergeParts(ctx, o.dst, o.split, o.workers)
	var ie *shard.IncompleteError
	if errors.As(err, &ie) {
		if o.json {
			writeJSON(stdout, ie)
		}
		return &failError{err.Error()}
	}
	if err != nil {
		return err
	}
	rep := shard.MergeReport{MergeResult: res, Dest: o.dst}
	if o.json {
		return writeJSON(stdout, rep)
	}
	rep.WriteText(stdout)
	return nil
}
