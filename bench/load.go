package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/faster-training/faster/internal/atomicfile"
	"github.com/faster-training/faster/internal/usage"
	"github.com/faster-training/faster/loader"
	"github.com/faster-training/faster/pipeline"
	"github.com/faster-training/faster/progress"
)

// LoadConfig is one `faster bench load`: a loader over Data run as fast as
// it can (or at ConsumerRate), once per entry of Workers, each a row of the
// table.
type LoadConfig struct {
	// Data is one dataset: a directory, file, glob or URL, or several
	// files (Loader.Paths gets the rest).
	Data []string
	// Loader is the loader of every row; its Workers is each row's.
	Loader loader.Options
	// Workers are the decode workers of each row (0 = auto).
	Workers []int
	// Epochs are run from the first (Resume's epoch when resuming), or,
	// when Steps > 0, Steps batches in all.
	Epochs, Steps int
	// DropCaches empties the page cache before each row (root only).
	DropCaches bool
	// DumpKeys, if set, is the file the first row's sample keys are
	// written to, one a line (KeyLine).
	DumpKeys string
	// Quarantine, if set, is the file each row's list of skipped samples
	// is written to (created before the row runs).
	Quarantine string
	// Resume is the position to resume from (nil: the first epoch's
	// start); SaveState, if set, the file the end position is written to.
	Resume    *loader.State
	SaveState string
	// ConsumerRate is the images per second a simulated trainer takes
	// (0: as fast as they are served).
	ConsumerRate float64
	// Profile splits the CPU time per sample into phases.
	Profile bool
	// Log gets warnings and the progress line (nil: discarded).
	Log io.Writer
}

// LoadResult is one row's measurement (`faster bench load --json`).
type LoadResult struct {
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
	Cache         *CacheResult          `json:"cache,omitempty"` // storage URLs with a cache directory
	// With a GPU stage (--device cuda): the rows it handed to the CPU
	// decoder (images it cannot take) and those it gave it as its share
	// (--cpu-share), over the measured epochs and any before them.
	DecodeFallbacks int64                 `json:"decode_fallbacks,omitempty"`
	DecodeShared    int64                 `json:"decode_shared,omitempty"`
	Profile         *loader.ProfileReport `json:"profile,omitempty"` // with Profile
}

// CacheResult is what the shard cache did during a row.
type CacheResult struct {
	Hits        int64 `json:"hits"`
	Fetches     int64 `json:"fetches"`
	FetchBytes  int64 `json:"fetch_bytes"`
	Refetches   int64 `json:"refetches"`
	Evictions   int64 `json:"evictions"`
	Passthrough int64 `json:"passthrough"`
}

// Load runs every row of c and returns their results. The keys file is
// written whole or not at all. An error from opening the loader wraps
// loader.ErrResume when Resume does not fit the data, and
// loader.ErrQuarantinePath when Quarantine cannot be a file.
func Load(ctx context.Context, c LoadConfig) ([]LoadResult, error) {
	if c.Log == nil {
		c.Log = io.Discard
	}
	workers := c.Workers
	if len(workers) == 0 {
		workers = []int{0}
	}
	var keysOut *bufio.Writer
	var keysFile *atomicfile.File
	if c.DumpKeys != "" {
		f, err := atomicfile.Create(c.DumpKeys, 0o644)
		if err != nil {
			return nil, err
		}
		defer f.Abort()
		keysFile, keysOut = f, bufio.NewWriter(f)
	}
	var results []LoadResult
	for _, w := range workers {
		r, err := loadOne(ctx, c, w, keysOut)
		if err != nil {
			return nil, err
		}
		keysOut = nil // keys of the first row only
		results = append(results, *r)
	}
	if keysFile != nil {
		if err := keysFile.Commit(); err != nil {
			return nil, err
		}
	}
	return results, nil
}

// openQuarantine creates the quarantine file up front (a path that cannot
// be written fails before the run, not after it) and returns the function
// that writes the list into it at the end: its error fails the run, for a
// lost list would be a silent loss.
func openQuarantine(path string) (write func([]loader.BadSample) error, abort func(), err error) {
	if path == "" {
		return func([]loader.BadSample) error { return nil }, func() {}, nil
	}
	q, err := loader.CreateQuarantine(path)
	if err != nil {
		return nil, nil, err
	}
	return q.Commit, q.Abort, nil
}

func loadOne(ctx context.Context, c LoadConfig, workers int, keys *bufio.Writer) (_ *LoadResult, retErr error) {
	writeQ, abortQ, err := openQuarantine(c.Quarantine)
	if err != nil {
		return nil, err
	}
	defer abortQ()
	lo := c.Loader
	lo.Workers, lo.Resume = workers, c.Resume
	lo.Paths = c.Data[1:] // several paths: one dataset
	var prof *loader.Profile
	if c.Profile {
		prof = new(loader.Profile)
		lo.Profile = prof
	}
	l, err := loader.OpenContext(ctx, c.Data[0], lo)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	// The quarantine list is written even when the budget stops the run;
	// failing to write it fails the run (the list would be lost).
	defer func() { retErr = errors.Join(retErr, writeQ(l.Bad())) }()
	r := &LoadResult{Data: DataLabel(c.Data), Kind: l.Kind(), Transform: string(c.Loader.Transform), Workers: workers,
		Batch: c.Loader.Batch, Resolution: c.Loader.Resolution, ConsumerRate: c.ConsumerRate}
	if c.DropCaches {
		r.CachesDropped = dropCaches(c.Log)
	}
	if err := consume(ctx, c, l, r, keys); err != nil {
		return nil, err
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
		r.Cache = &CacheResult{Hits: cs.Hits.Load(), Fetches: cs.Fetches.Load(), FetchBytes: cs.FetchBytes.Load(),
			Refetches: cs.Refetches.Load(), Evictions: cs.Evictions.Load(), Passthrough: cs.Passthrough.Load()}
	}
	if c.SaveState != "" {
		s, err := l.State()
		if err != nil {
			return nil, err
		}
		if err := loader.SaveState(c.SaveState, s); err != nil {
			return nil, err
		}
		r.State = &s
	}
	return r, nil
}

// consume takes c's epochs (or steps) from l, timed, into r's counts.
func consume(ctx context.Context, c LoadConfig, l *loader.Loader, r *LoadResult, keys *bufio.Writer) error {
	total := int64(l.Len() * c.Epochs)
	if c.Steps > 0 {
		total = int64(c.Steps * c.Loader.Batch)
	}
	bar := progress.New(c.Log, "load "+l.Kind(), total, "images")
	defer bar.Done()
	start, cpu0 := time.Now(), usage.CPU()
	first := 0
	if c.Resume != nil {
		first = c.Resume.Epoch
	}
	co := ConsumeOptions{First: first, Epochs: c.Epochs, Steps: c.Steps, Rate: c.ConsumerRate,
		Progress: func(images, bytes int64) { bar.Add(images, bytes) }}
	if keys != nil {
		co.Keys = keys
	}
	var got Consumed
	var err error
	if l.BatchDecoder() != nil { // --device cuda: the batch-decode stage's batches
		got, err = ConsumeStaged(ctx, l.IterStaged, co)
	} else {
		got, err = Consume(ctx, l.IterEpoch, co)
	}
	if err != nil {
		return err
	}
	r.Epochs, r.Images, r.Repeats, r.Bytes, r.Batches, r.SampleDigest = got.Epochs, got.Images, got.Repeats, got.Bytes, got.Batches, got.Digest
	r.DecodeFallbacks, r.DecodeShared = l.Fallbacks(), l.SharedRows()
	r.Seconds = time.Since(start).Seconds()
	r.CPUSeconds = (usage.CPU() - cpu0).Seconds()
	if r.Images > 0 {
		r.CPUPer1000 = r.CPUSeconds / float64(r.Images) * 1000
	}
	bar.Done()
	if keys != nil {
		return keys.Flush()
	}
	return nil
}

// WriteLoadTable writes the rows as a table, each row's verdict and
// digest, its profile (with Profile) and its skipped samples (listed in
// quarantine, when set).
func WriteLoadTable(w io.Writer, results []LoadResult, quarantine string) error {
	var rows [][]string
	for _, r := range results {
		rows = append(rows, []string{r.Data, r.Kind, r.Transform, WorkersLabel(r.Workers),
			fmt.Sprintf("%.0f", r.ImagesPerSec), fmt.Sprintf("%.2f", r.CPUPer1000), fmt.Sprintf("%.1f MB/s", r.MBPerSec), BottleneckCell(r.Verdict), r.Verdict.Stage})
	}
	if err := Table(w, []string{"data", "kind", "transform", "workers", "images/s", "CPU s/1k img", "read", "bottleneck", "limiting stage"}, rows); err != nil {
		return err
	}
	for _, r := range results {
		fmt.Fprintf(w, "%s (workers %s): %s; sample digest %s\n", r.Data, WorkersLabel(r.Workers), r.Verdict.Detail, r.SampleDigest[:16])
		if p := r.Profile; p != nil {
			var prow [][]string
			for _, ph := range p.Phases {
				prow = append(prow, []string{ph.Name, fmt.Sprintf("%.0f", ph.MicrosPerItem), fmt.Sprintf("%.0f%%", 100*ph.Share)})
			}
			prow = append(prow, []string{"all (CPU per sample)", fmt.Sprintf("%.0f", p.MicrosPerItem), fmt.Sprintf("%.0f images/s per core", p.PerCoreImagesPS)})
			fmt.Fprintf(w, "\nprofile of %s (workers %s), %s per sample summed over workers:\n", r.Data, WorkersLabel(r.Workers), p.Clock)
			if err := Table(w, []string{"phase", "µs/sample", "share"}, prow); err != nil {
				return err
			}
		}
		if r.Bad > 0 {
			where := "rerun with --quarantine FILE to list them"
			if quarantine != "" {
				where = "listed in " + quarantine
			}
			fmt.Fprintf(w, "%s: skipped %d bad samples (%s)\n", r.Data, r.Bad, where)
		}
	}
	return nil
}

// PlotLoad writes a PNG bar chart of the rows' images/s to path.
func PlotLoad(path string, results []LoadResult, transform string) error {
	var bars []Bar
	for _, r := range results {
		bars = append(bars, Bar{Label: fmt.Sprintf("%s w=%s", r.Kind, WorkersLabel(r.Workers)), Value: r.ImagesPerSec, Note: r.Bottleneck})
	}
	return PlotBars(path, "faster bench load, transform "+transform, "images/s", bars)
}

// WorkersLabel is a row's workers in the table: the count, or "auto".
func WorkersLabel(w int) string {
	if w == 0 {
		return "auto"
	}
	return strconv.Itoa(w)
}

// DataLabel names the dataset of paths in the table: the path, or the
// first and last of several ("d/train-00000-of-01024 … train-01023-of-01024
// (1024 paths)").
func DataLabel(paths []string) string {
	if len(paths) == 1 {
		return paths[0]
	}
	return fmt.Sprintf("%s … %s (%d paths)", paths[0], filepath.Base(paths[len(paths)-1]), len(paths))
}

// BottleneckCell is the table's bottleneck: "decode≈io" for a near tie
// between kinds (pipeline.TieFactor), the verdict's bottleneck otherwise.
func BottleneckCell(v pipeline.Verdict) string {
	if v.Tie && v.TiedWith != v.Bottleneck {
		return v.Bottleneck + "≈" + v.TiedWith
	}
	return v.Bottleneck
}

// dropCaches empties the page cache so the next read comes from the
// device, as the Faster Training study did before each IO test. It needs
// root; without it, or when the kernel refuses, it says so on log.
func dropCaches(log io.Writer) bool {
	if os.Geteuid() != 0 {
		fmt.Fprintln(log, "faster: --drop-caches: not root, the page cache is kept (results may come from memory)")
		return false
	}
	syncFS()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("1\n"), 0o200); err != nil {
		fmt.Fprintf(log, "faster: --drop-caches: %v (the page cache is kept)\n", err)
		return false
	}
	return true
}

func mbPerSec(bytes int64, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return float64(bytes) / seconds / 1e6
}
