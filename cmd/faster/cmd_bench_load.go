package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/faster-training/faster/bench"
	"github.com/faster-training/faster/internal/atomicfile"
	"github.com/faster-training/faster/internal/usage"
	"github.com/faster-training/faster/loader"
	"github.com/faster-training/faster/pipeline"
	"github.com/faster-training/faster/progress"
)

type benchLoadOptions struct {
	loaderFlags
	data       []string // one dataset: a directory, file, glob or URL, or several files
	workers    []int    // one row per value (0 = auto)
	epochs     int
	steps      int
	dropCaches bool
	dumpKeys   string
	badDataFlags
	resumeFrom   []string
	saveState    string
	consumerRate float64
	plot         string
	profile      bool
	json         bool
}

// loadResult is one configuration's measurement (a table row).
type loadResult struct {
	Data         string  `json:"data"`
	Kind         string  `json:"kind"`
	Transform    string  `json:"transform"`
	Workers      int     `json:"workers"` // 0 = auto
	Batch        int     `json:"batch"`
	Resolution   int     `json:"resolution"`
	ConsumerRate float64 `json:"consumer_rate,omitempty"`
	Images       int64   `json:"images"`
	Repeats      int64   `json:"repeats"` // of the images, rows repeating a sample to even out the ranks
	Batches      int64   `json:"batches"`
	Bytes        int64   `json:"bytes"`
	Epochs       int     `json:"epochs"`
	Seconds      float64 `json:"seconds"`
	ImagesPerSec float64 `json:"images_per_sec"`
	// CPUSeconds is the process's CPU time (user + system, all threads)
	// over the measured epochs; CPUPer1000 is it per 1,000 images: the
	// loading work's price, which neighbours on a shared machine do not
	// change as they change images/s.
	CPUSeconds    float64               `json:"cpu_seconds"`
	CPUPer1000    float64               `json:"cpu_seconds_per_1000_images"`
	MBPerSec      float64               `json:"mb_per_sec"`
	Bottleneck    string                `json:"bottleneck"`
	Verdict       pipeline.Verdict      `json:"verdict"`
	Stages        []pipeline.StageStats `json:"stages"`
	SampleDigest  string                `json:"sample_digest"`
	CachesDropped bool                  `json:"caches_dropped"`
	Bad           int                   `json:"bad"`
	Quarantined   []loader.BadSample    `json:"quarantined,omitempty"`
	State         *loader.State         `json:"state,omitempty"`
	Cache         *cacheResult          `json:"cache,omitempty"`   // with --cache-dir on a storage URL
	Profile       *loader.ProfileReport `json:"profile,omitempty"` // with --profile
}

// cacheResult is what the shard cache did during the run.
type cacheResult struct {
	Hits        int64 `json:"hits"`
	Fetches     int64 `json:"fetches"`
	FetchBytes  int64 `json:"fetch_bytes"`
	Refetches   int64 `json:"refetches"`
	Evictions   int64 `json:"evictions"`
	Passthrough int64 `json:"passthrough"`
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
				o.data = args
				for _, w := range strings.Split(workers, ",") {
					n, err := strconv.Atoi(strings.TrimSpace(w))
					if err != nil || n < 0 {
						return usagef("--workers %q: want a comma-separated list of counts (0 = auto)", workers)
					}
					o.workers = append(o.workers, n)
				}
				return runBenchLoad(cmd.Context(), o, stdout, stderr)
			},
		}
		f := c.Flags()
		o.register(f, "train, eval or none")
		f.StringVar(&workers, "workers", "0", "decode workers, or a list for one row each (0 = auto)")
		f.IntVar(&o.epochs, "epochs", 1, "epochs to run")
		f.IntVar(&o.steps, "steps", 0, "stop after this many batches in all (overrides --epochs)")
		f.BoolVar(&o.dropCaches, "drop-caches", false, "drop the page cache before each run (root only)")
		f.StringVar(&o.dumpKeys, "dump-keys", "", "write the served sample keys, one per line, in order (without the repeats that even out the ranks); a key holding a control character or starting with a double quote is Go-quoted")
		o.registerBad(f)
		f.StringArrayVar(&o.resumeFrom, "resume-from", nil, "resume the epoch from a saved state (repeat for the states of several ranks)")
		f.StringVar(&o.saveState, "save-state", "", "write the loader's position (JSON) to this file at the end")
		f.Float64Var(&o.consumerRate, "consumer-rate", 0, "simulate a trainer taking this many images/s")
		f.StringVar(&o.plot, "plot", "", "write a PNG bar chart of images/s to this file")
		f.BoolVar(&o.profile, "profile", false, "split the CPU time per sample into read, decode, crop/resize and normalise/convert (which is the batch copy: rows are written in place)")
		f.BoolVar(&o.json, "json", false, "print JSON")
		return c
	})
}

func runBenchLoad(ctx context.Context, o benchLoadOptions, stdout, stderr io.Writer) error {
	switch {
	case o.epochs < 1:
		return usagef("--epochs %d: must be at least 1", o.epochs)
	case o.steps < 0:
		return usagef("--steps %d: must not be negative", o.steps)
	case !(o.consumerRate >= 0) || math.IsInf(o.consumerRate, 0):
		return usagef("--consumer-rate %g: want a finite rate >= 0", o.consumerRate)
	}
	if err := o.check(); err != nil {
		return err
	}
	// Output files are checked before the run, not after it.
	for _, f := range []struct{ flag, path string }{{"--dump-keys", o.dumpKeys}, {"--save-state", o.saveState}, {"--plot", o.plot}, {"--quarantine", o.quarantine}} {
		if st, err := os.Stat(f.path); f.path != "" && err == nil && st.IsDir() {
			return usagef("%s %s: a directory; give a file name", f.flag, f.path)
		}
	}
	if len(o.workers) == 0 {
		o.workers = []int{0}
	}
	for i, w := range o.workers {
		o.workers[i] = capWorkers(stderr, "--workers", w, runtime.NumCPU())
	}
	if _, err := o.badPolicy(); err != nil {
		return err
	}
	if (o.saveState != "" || len(o.resumeFrom) > 0) && len(o.workers) > 1 {
		return usagef("--save-state and --resume-from take one --workers value")
	}
	var keysOut *bufio.Writer
	var keysFile *atomicfile.File
	if o.dumpKeys != "" {
		f, err := atomicfile.Create(o.dumpKeys, 0o644)
		if err != nil {
			return err
		}
		defer f.Abort()
		keysFile, keysOut = f, bufio.NewWriter(f)
	}
	var results []loadResult
	for _, w := range o.workers {
		r, err := benchLoadOne(ctx, o, w, keysOut, stderr)
		if err != nil {
			return err
		}
		keysOut = nil // keys of the first configuration only
		results = append(results, *r)
	}
	if keysFile != nil {
		if err := keysFile.Commit(); err != nil {
			return err
		}
	}
	if o.plot != "" {
		var bars []bench.Bar
		for _, r := range results {
			bars = append(bars, bench.Bar{Label: fmt.Sprintf("%s w=%s", r.Kind, workersLabel(r.Workers)), Value: r.ImagesPerSec, Note: r.Bottleneck})
		}
		if err := bench.PlotBars(o.plot, "faster bench load, transform "+o.transform, "images/s", bars); err != nil {
			return err
		}
	}
	if o.json {
		if len(results) == 1 {
			return writeJSON(stdout, results[0])
		}
		return writeJSON(stdout, map[string]any{"results": results})
	}
	var rows [][]string
	for _, r := range results {
		rows = append(rows, []string{r.Data, r.Kind, r.Transform, workersLabel(r.Workers),
			fmt.Sprintf("%.0f", r.ImagesPerSec), fmt.Sprintf("%.2f", r.CPUPer1000), fmt.Sprintf("%.1f MB/s", r.MBPerSec), bottleneckCell(r.Verdict), r.Verdict.Stage})
	}
	if err := bench.Table(stdout, []string{"data", "kind", "transform", "workers", "images/s", "CPU s/1k img", "read", "bottleneck", "limiting stage"}, rows); err != nil {
		return err
	}
	for _, r := range results {
		fmt.Fprintf(stdout, "%s (workers %s): %s; sample digest %s\n", r.Data, workersLabel(r.Workers), r.Verdict.Detail, r.SampleDigest[:16])
		if p := r.Profile; p != nil {
			var prow [][]string
			for _, ph := range p.Phases {
				prow = append(prow, []string{ph.Name, fmt.Sprintf("%.0f", ph.MicrosPerItem), fmt.Sprintf("%.0f%%", 100*ph.Share)})
			}
			prow = append(prow, []string{"all (CPU per sample)", fmt.Sprintf("%.0f", p.MicrosPerItem), fmt.Sprintf("%.0f images/s per core", p.PerCoreImagesPS)})
			fmt.Fprintf(stdout, "\nprofile of %s (workers %s), %s per sample summed over workers:\n", r.Data, workersLabel(r.Workers), p.Clock)
			if err := bench.Table(stdout, []string{"phase", "µs/sample", "share"}, prow); err != nil {
				return err
			}
		}
		if r.Bad > 0 {
			where := "rerun with --quarantine FILE to list them"
			if o.quarantine != "" {
				where = "listed in " + o.quarantine
			}
			fmt.Fprintf(stdout, "%s: skipped %d bad samples (%s)\n", r.Data, r.Bad, where)
		}
	}
	return nil
}

// badPolicy parses --on-error and --max-bad.
func (o benchLoadOptions) badPolicy() (loader.BadDataPolicy, error) { return o.policy() }

func workersLabel(w int) string {
	if w == 0 {
		return "auto"
	}
	return strconv.Itoa(w)
}

// dataLabel names the dataset of paths in the table: the path, or the
// first and last of several ("d/train-00000-of-01024 … train-01023-of-01024
// (1024 paths)").
func dataLabel(paths []string) string {
	if len(paths) == 1 {
		return paths[0]
	}
	return fmt.Sprintf("%s … %s (%d paths)", paths[0], filepath.Base(paths[len(paths)-1]), len(paths))
}

func benchLoadOne(ctx context.Context, o benchLoadOptions, workers int, keys *bufio.Writer, stderr io.Writer) (_ *loadResult, retErr error) {
	policy, _ := o.badPolicy()
	var resume *loader.State
	if len(o.resumeFrom) > 0 {
		var states []loader.State
		for _, p := range o.resumeFrom {
			s, err := loader.LoadState(p)
			if err != nil {
				return nil, err
			}
			states = append(states, s)
		}
		s, err := loader.MergeStates(states...)
		if err != nil {
			return nil, fmt.Errorf("--resume-from %s: %w", strings.Join(o.resumeFrom, ", "), err)
		}
		resume = &s
	}
	writeQ, abortQ, err := o.openQuarantine()
	if err != nil {
		return nil, err
	}
	defer abortQ()
	lo := o.options(workers)
	lo.BadData, lo.Resume = policy, resume
	lo.Paths = o.data[1:] // several paths: one dataset
	var prof *loader.Profile
	if o.profile {
		prof = new(loader.Profile)
		lo.Profile = prof
	}
	l, err := loader.OpenContext(ctx, o.data[0], lo)
	if errors.Is(err, loader.ErrResume) {
		return nil, fmt.Errorf("--resume-from %s: %w", strings.Join(o.resumeFrom, ", "), err)
	}
	if err != nil {
		return nil, err
	}
	defer l.Close()
	// The quarantine list is written even when the budget stops the run;
	// failing to write it fails the run (the list would be lost).
	defer func() { retErr = errors.Join(retErr, writeQ(l.Bad())) }()
	r := &loadResult{Data: dataLabel(o.data), Kind: l.Kind(), Transform: o.transform, Workers: workers, Batch: o.batch,
		Resolution: o.resolution, ConsumerRate: o.consumerRate}
	if o.dropCaches {
		r.CachesDropped = dropCaches(stderr)
	}
	total := int64(l.Len() * o.epochs)
	if o.steps > 0 {
		total = int64(o.steps * o.batch)
	}
	bar := progress.New(stderr, "load "+l.Kind(), total, "images")
	defer bar.Done()
	start, cpu0 := time.Now(), usage.CPU()
	first := 0
	if resume != nil {
		first = resume.Epoch
	}
	co := bench.ConsumeOptions{First: first, Epochs: o.epochs, Steps: o.steps, Rate: o.consumerRate,
		Progress: func(images, bytes int64) { bar.Add(images, bytes) }}
	if keys != nil {
		co.Keys = keys
	}
	c, err := bench.Consume(ctx, l.IterEpoch, co)
	if err != nil {
		return nil, err
	}
	r.Epochs, r.Images, r.Repeats, r.Bytes, r.Batches, r.SampleDigest = c.Epochs, c.Images, c.Repeats, c.Bytes, c.Batches, c.Digest
	r.Seconds = time.Since(start).Seconds()
	r.CPUSeconds = (usage.CPU() - cpu0).Seconds()
	if r.Images > 0 {
		r.CPUPer1000 = r.CPUSeconds / float64(r.Images) * 1000
	}
	bar.Done()
	if keys != nil {
		if err := keys.Flush(); err != nil {
			return nil, err
		}
	}
	st := l.Stats()
	r.Verdict, r.Stages, r.Bottleneck = st.Verdict, st.Stages, st.Verdict.Bottleneck
	r.ImagesPerSec = float64(r.Images) / max(r.Seconds, 1e-9)
	r.MBPerSec = mbPerSec(r.Bytes, r.Seconds)
	if prof != nil {
		rep := prof.Report()
		r.Profile = &rep
	}
	r.Quarantined = l.Bad()
	r.Bad = len(r.Quarantined)
	if cs := l.CacheStats(); cs != nil {
		r.Cache = &cacheResult{Hits: cs.Hits.Load(), Fetches: cs.Fetches.Load(), FetchBytes: cs.FetchBytes.Load(),
			Refetches: cs.Refetches.Load(), Evictions: cs.Evictions.Load(), Passthrough: cs.Passthrough.Load()}
	}
	if o.saveState != "" {
		s, err := l.State()
		if err != nil {
			return nil, err
		}
		if err := loader.SaveState(o.saveState, s); err != nil {
			return nil, err
		}
		r.State = &s
	}
	return r, nil
}

// bottleneckCell is the table's bottleneck: "decode≈io" for a near tie
// between kinds (pipeline.TieFactor), the verdict's bottleneck otherwise.
func bottleneckCell(v pipeline.Verdict) string {
	if v.Tie && v.TiedWith != v.Bottleneck {
		return v.Bottleneck + "≈" + v.TiedWith
	}
	return v.Bottleneck
}

// dropCaches empties the page cache so the next read comes from the
// device, as the Faster Training study did before each IO test. It needs root.
func dropCaches(stderr io.Writer) bool {
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "faster: --drop-caches: not root, the page cache is kept (results may come from memory)")
		return false
	}
	syncFS()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("1\n"), 0o200); err != nil {
		fmt.Fprintf(stderr, "faster: --drop-caches: %v (the page cache is kept)\n", err)
		return false
	}
	return true
}
