package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/faster-training/faster/downscale"
	"github.com/faster-training/faster/internal/task"
	"github.com/faster-training/faster/progress"
)

type resizeOptions struct {
	src, dst       string
	maxSize        int
	workers        int
	quality        int
	exif           bool
	nonImages      string
	noScaledDecode bool
	rgb            bool
	fsync          bool
	json           bool
	task           string // --task i/n
	taskCount      int
	merge          bool
}

func init() {
	commands = append(commands, func(stdout, stderr io.Writer) *cobra.Command {
		var o resizeOptions
		c := &cobra.Command{
			Use:   "resize --src SRC --dst DST --max-size N",
			Short: "Downscale an image dataset tree so that no image's shorter edge exceeds N",
			Long: `Resize mirrors the tree under SRC into DST (every folder and split). An image
whose shorter edge exceeds N is resized with an area filter so that its
shorter edge is exactly N (aspect kept, rounded like resize_imagenet.py) and
written under the same name: PNG for .png, JPEG of --quality otherwise.
Smaller images are copied byte for byte; other files are copied or skipped
(--non-images). Writes are atomic; a rerun skips outputs that are complete
and newer than their source, and removes the temporary files a killed run
left. Symlinked folders are followed (a loop once). Corrupt or empty files,
FIFOs, devices and dangling links are listed and skipped, never read.

On many machines: each task (--task i/n, 0-based, else the scheduler's
environment as for faster pack: Kubernetes Indexed Job with --task-count or
FASTER_TASK_COUNT, Slurm job array, srun, Open MPI, PMI, torchrun) resizes
its share of the sorted file list into the same DST and commits a part
manifest under DST/.faster-parts/resize/ (create-only); then
"faster resize --merge --dst DST" checks every part and its outputs, names
every task missing or incomplete at once, and removes the parts folder,
leaving the tree one run writes. See docs/parallel.md.

Exit status: 0 done; 1 some files failed or an I/O error; 2 usage error;
130 interrupted (no partial file is left behind).`,
			Args: exactArgs(0),
			RunE: func(cmd *cobra.Command, args []string) error {
				return runResize(cmd.Context(), o, stdout, stderr)
			},
		}
		f := c.Flags()
		f.StringVar(&o.src, "src", "", "source dataset folder (required)")
		f.StringVar(&o.dst, "dst", "", "destination folder (required)")
		f.IntVar(&o.maxSize, "max-size", 0, "largest shorter edge kept, in pixels (required)")
		f.IntVar(&o.workers, "workers", 0, "images processed in parallel (default: number of CPUs)")
		f.IntVar(&o.quality, "quality", 90, "JPEG quality of resized images (1-100)")
		f.BoolVar(&o.exif, "exif", false, "apply JPEG EXIF orientation before resizing (as cv2.imread does)")
		f.StringVar(&o.nonImages, "non-images", "copy", "files without an image extension: copy or skip")
		f.BoolVar(&o.noScaledDecode, "no-scaled-decode", false, "always decode at full size (with --rgb: the exact OpenCV INTER_AREA-equivalent path)")
		f.BoolVar(&o.rgb, "rgb", false, "resize JPEGs in RGB as OpenCV does, not in their stored 4:2:0 YCbCr planes")
		f.BoolVar(&o.fsync, "fsync", false, "fsync every output file (default: one file-system sync at the end)")
		f.BoolVar(&o.json, "json", false, "print a JSON summary")
		f.StringVar(&o.task, "task", "", "resize only task i of n (i/n, 0-based); default: from the scheduler's environment")
		f.IntVar(&o.taskCount, "task-count", 0, "the task count of a Kubernetes Indexed Job (its completions; or set FASTER_TASK_COUNT)")
		f.BoolVar(&o.merge, "merge", false, "check the tasks' parts in --dst and remove them (no --src, --max-size)")
		return c
	})
}

func runResize(ctx context.Context, o resizeOptions, stdout, stderr io.Writer) error {
	if o.merge {
		return runResizeMerge(o, stdout)
	}
	var problems []error
	if o.src == "" || o.dst == "" {
		problems = append(problems, errors.New("--src and --dst are required"))
	}
	if o.maxSize <= 0 {
		problems = append(problems, errors.New("--max-size must be a positive number of pixels"))
	}
	if o.workers < 0 {
		problems = append(problems, errors.New("--workers must not be negative"))
	}
	if o.quality < 1 || o.quality > 100 {
		problems = append(problems, fmt.Errorf("--quality %d: want 1-100", o.quality))
	}
	policy, err := downscale.ParseNonImages(o.nonImages)
	if err != nil {
		problems = append(problems, fmt.Errorf("--non-images: %w", err))
	}
	t, tasked, err := task.Resolve(o.task, o.taskCount, os.Getenv)
	if err != nil {
		problems = append(problems, err)
	}
	if len(problems) > 0 {
		return usagef("resize: %v", errors.Join(problems...))
	}
	o.workers = capWorkers(stderr, "--workers", o.workers, runtime.NumCPU())
	bar := progress.New(stderr, "resize", 0, "images")
	defer bar.Done()
	res, err := downscale.Run(ctx, o.src, o.dst, downscale.Options{
		MaxSize: o.maxSize, Workers: o.workers, Quality: o.quality, EXIF: o.exif,
		NonImages: policy, NoScaledDecode: o.noScaledDecode, RGB: o.rgb, Sync: o.fsync, Progress: bar,
		TaskIndex: t.Index, TaskCount: t.Count,
	})
	bar.Done()
	if err != nil {
		if errors.Is(err, downscale.ErrSource) {
			return &failError{err.Error()}
		}
		return err
	}
	if tasked {
		fmt.Fprintf(stderr, "%s: part committed; run \"faster resize --merge --dst %s\" once every task is done\n", t, o.dst)
	}
	rep := downscale.NewReport(res, task.OrNil(t, tasked), o.src, o.dst, o.maxSize)
	if o.json {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		rep.WriteText(stdout)
	}
	if res.Failed > 0 {
		return &failError{fmt.Sprintf("resize: %d files failed", res.Failed)}
	}
	return nil
}

func runResizeMerge(o resizeOptions, stdout io.Writer) error {
	if o.dst == "" || o.src != "" || o.maxSize != 0 || o.task != "" || o.taskCount != 0 {
		return usagef("resize --merge takes --dst (and --json) alone")
	}
	res, err := downscale.MergeParts(o.dst)
	var ie *downscale.IncompleteError
	if errors.As(err, &ie) {
		return &failError{err.Error()}
	}
	if err != nil {
		return err
	}
	rep := downscale.MergeReport{Result: res, Dest: o.dst}
	if o.json {
		return writeJSON(stdout, rep)
	}
	rep.WriteText(stdout)
	if res.Failed > 0 {
		return &failError{fmt.Sprintf("resize: %d files failed", res.Failed)}
	}
	return nil
}
