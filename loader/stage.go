package loader

import (
	"context"
	"errors"
	"fmt"
	"image"
	"iter"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/pipeline"
	"github.com/faster-training/faster/source"
)

// The batch-decode stage (issue 38 §2): instead of decoding each sample on
// a CPU worker and copying its pixels into a batch arena, the loader hands
// a whole batch of encoded samples, each with the crop and flip the CPU
// path draws for it, to a BatchDecoder, which writes the rows into memory
// it owns (device memory on a GPU). The readers, shuffle, sharding, epochs
// and padding are the CPU path's: only the decode moves.
//
//	read ─► prepare (label, header, draws; ParallelMap) ─► batch of jobs (Fill, Drop) ─► BatchDecoder.DecodeBatch ─► bounded queue ─► consumer
//
// The draws are a function of (seed, epoch, sample id) made in prepare,
// never in a decoder: whichever decoder runs, epoch e serves the same
// samples in the same order with the same crops and flips.

// BatchBuffer is memory a BatchDecoder owns and writes batches into:
// host memory (Host returns it) or device memory (Host returns nil; the
// decoder's package says how to reach it).
type BatchBuffer interface {
	Size() int    // bytes
	Host() []byte // the bytes when the buffer is host memory, else nil
}

// DeviceBatchBuffer is a BatchBuffer in device memory that a consumer on
// the same device reads by address (train.DeviceRows): the trainer of
// `faster train --device cuda` takes a GPU stage's batches this way,
// without a trip through the host.
type DeviceBatchBuffer interface {
	BatchBuffer
	Ptr() uint64    // the address of the first row
	Device() string // "cuda:0"
}

// RowFormat is what every row of a batch holds: C×H×W float32 normalised
// with Mean and Std (F32CHW) or H×W×C uint8 (U8HWC), RowBytes each.
type RowFormat struct {
	Layout    Layout
	C, H, W   int
	RowBytes  int
	Mean, Std [3]float32
}

// BatchReport is what a decoder says of one batch.
type BatchReport struct {
	// Fallback is the rows the decoder could not take and handed to the
	// CPU decoder (DecodeJob.DecodeCPU): a progressive or CMYK JPEG on a
	// decoder that only takes baseline, a PNG, odd subsampling.
	Fallback int
	// Shared is the rows it gave the CPU decoder as its share
	// (DecoderConfig.CPUShare), decoded beside its own.
	Shared int
}

// BatchDecoder decodes batches of jobs into buffers it owns. Alloc's
// buffers are the decoder's: the loader keeps a fixed ring of them and
// gives each back with Free at Loader.Close, before Close.
type BatchDecoder interface {
	// Device names where the rows go: "cpu", "cuda:0".
	Device() string
	Alloc(bytes int) (BatchBuffer, error)
	Free(BatchBuffer) error
	// DecodeBatch writes jobs[i]'s row at i*f.RowBytes of dst, every byte
	// of it, and returns when the rows are written (or, on a device, when
	// the work is ordered on the decoder's stream so that a reader on it
	// sees them). The error names the first sample that failed.
	DecodeBatch(ctx context.Context, jobs []*DecodeJob, dst BatchBuffer, f RowFormat) (BatchReport, error)
	Close() error
}

// DecoderConfig is what a BatchDecoder is opened for.
type DecoderConfig struct {
	Device  string // "cpu", "cuda" or "cuda:N", as Options.Device
	Kind    string // "cuda"
	Ordinal int    // N of cuda:N (0 for "cuda")
	Workers int    // CPU workers it may use (fallback decodes); 0: GOMAXPROCS
	// Batch is the most jobs a DecodeBatch is given (Options.Batch): a
	// GPU decoder allocates its decoder's buffers for that many at open.
	Batch int
	// CPUShare is the share of each batch to decode on the CPU beside
	// the device's decode (Options.CPUShare; ShareRows says which rows).
	CPUShare float64
}

// ShareRows reports which of a batch's n rows a share of the CPU takes
// (Options.CPUShare): row i when ⌊(i+1)·share⌋ > ⌊i·share⌋, so ⌊n·share⌋
// rows spread evenly through the batch, decided by the row's place alone.
func ShareRows(n int, share float64) []bool {
	rows := make([]bool, n)
	if share <= 0 {
		return rows
	}
	for i := range rows {
		rows[i] = math.Floor(float64(i+1)*share) > math.Floor(float64(i)*share)
	}
	return rows
}

var (
	decodersMu sync.Mutex
	decoders   = map[string]func(DecoderConfig) (BatchDecoder, error){}
)

// RegisterBatchDecoder makes open the batch decoder of devices of kind
// ("cuda"); package gpudecode registers the nvJPEG stage, and a
// binary imports it to offer --device cuda.
func RegisterBatchDecoder(kind string, open func(DecoderConfig) (BatchDecoder, error)) {
	decodersMu.Lock()
	defer decodersMu.Unlock()
	decoders[kind] = open
}

// ParseDevice reads Options.Device: "" and "cpu" are the CPU path (kind
// "cpu"), "cuda" is GPU 0, "cuda:N" GPU N.
func ParseDevice(s string) (kind string, ordinal int, err error) {
	switch {
	case s == "" || s == "cpu":
		return "cpu", 0, nil
	case s == "cuda":
		return "cuda", 0, nil
	case strings.HasPrefix(s, "cuda:"):
		n, err := strconv.Atoi(s[len("cuda:"):])
		if err != nil || n < 0 || n > 1<<16 {
			return "", 0, fmt.Errorf("device %q: want cuda:N with N a GPU's index (0, 1, …)", s)
		}
		return "cuda", n, nil
	}
	return "", 0, fmt.Errorf("device %q: want cpu, cuda or cuda:N", s)
}

// ErrStaged is IterEpoch's error on a loader whose batches come from a
// batch-decode stage: its rows are the decoder's memory (IterStaged).
var ErrStaged = errors.New("loader: the batches are decoded by a batch-decode stage: iterate them with IterStaged")

// stageProblems lists the options the batch-decode stage cannot run.
func (o *Options) stageProblems() []error {
	if !o.staged() {
		return nil
	}
	var errs []error
	what := fmt.Sprintf("device %q", o.Device)
	if o.Device == "" || o.Device == "cpu" {
		what = "a batch decoder"
	}
	if o.Transform != Train && o.Transform != Eval {
		errs = append(errs, fmt.Errorf("%s decodes images: transform %s has none (want train or eval)", what, o.Transform))
	}
	if len(o.Recipe) > 0 || o.Augment != nil || o.Erasing != nil {
		errs = append(errs, fmt.Errorf("%s runs the train and eval recipes only (crop, flip, resize, normalise): not augment ops or RandomErasing", what))
	}
	if o.Channels == 1 {
		errs = append(errs, fmt.Errorf("%s serves three channels: channels 1 is the CPU path's", what))
	}
	if o.Profile != nil {
		errs = append(errs, fmt.Errorf("%s: the per-sample profile times the CPU path only", what))
	}
	return errs
}

// staged reports whether the options ask for a batch-decode stage.
func (o *Options) staged() bool {
	k, _, _ := ParseDevice(o.Device)
	return o.NewBatchDecoder != nil || k == "cuda"
}

// openStage opens the loader's batch decoder (Open, after the recipe).
func (l *Loader) openStage() error {
	o := l.opts
	if !o.staged() {
		return nil
	}
	if l.channels != 3 {
		return fmt.Errorf("device %q: the data has %d channel(s); the batch-decode stage serves three", o.Device, l.channels)
	}
	kind, ord, err := ParseDevice(o.Device)
	if err != nil {
		return err
	}
	cfg := DecoderConfig{Device: o.Device, Kind: kind, Ordinal: ord, Workers: o.Workers, Batch: o.Batch, CPUShare: o.CPUShare}
	if cfg.Device == "" {
		cfg.Device = "cpu"
	}
	open := o.NewBatchDecoder
	if open == nil {
		decodersMu.Lock()
		open = decoders[kind]
		decodersMu.Unlock()
	}
	if open == nil {
		return fmt.Errorf("device %q: this build has no %s batch decoder (a binary offers it by importing github.com/faster-training/faster/gpudecode)", o.Device, kind)
	}
	bd, err := open(cfg)
	if err != nil {
		return fmt.Errorf("device %q: %w", o.Device, err)
	}
	l.bd = bd
	return nil
}

// DecodeJob is one sample of a batch to decode: its encoded bytes and the
// geometry the CPU path draws for it. The decoder resamples the region
// Crop (full-size pixel coordinates) of the picture to ResizeW×ResizeH and
// keeps the part View of that (the train recipe: View is the whole
// resize; the eval recipe: the centre crop of a shorter-edge resize),
// mirrored left to right when Flip, with Filter's weights (Pillow's).
type DecodeJob struct {
	Key              string
	Data             []byte
	Format           string // imgcodec's name: "jpeg", "png", …
	Width, Height    int    // the picture's full size
	Crop             image.Rectangle
	ResizeW, ResizeH int
	View             image.Rectangle
	Flip             bool
	Filter           augment.Filter

	l     *Loader
	cfg   imgcodec.Config
	train bool
	plan  augment.Plan // train: the CPU path's plan (its DCT-scaled decode included)
	res   int
	buf   *source.Buffer
}

// DecodeCPU writes the job's row as the CPU path makes it (the same
// decode, resize and normalisation, so the same bytes): what a decoder
// does with a sample it cannot take. row is f.RowBytes long.
func (j *DecodeJob) DecodeCPU(row []byte) error {
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	dst := imgcodec.NewImage(j.res, j.res, 3)
	o := j.l.opts
	if j.train {
		img, err := imgcodec.Decode(j.Data, &j.plan.Decode)
		if err != nil {
			dst.Release()
			return fmt.Errorf("%s: %w", j.Key, err)
		}
		err = sc.aug.Apply(dst, img, j.plan)
		img.Release()
		if err != nil {
			dst.Release()
			return fmt.Errorf("%s: %w", j.Key, err)
		}
	} else if err := evalInto(&sc.aug.Resizer, dst, j.Data, j.cfg, o.Resize, j.Filter, o.FullDecode || !o.FastEvalDecode, nil, 0); err != nil {
		dst.Release()
		return fmt.Errorf("%s: %w", j.Key, err)
	}
	return j.l.fill()(row, Item{img: dst})
}

// prepare is the staged path's map: the decoder()'s label and damage
// handling, the header read and the draws, no decode.
func (l *Loader) prepare(res int) func(context.Context, Sample) (Item, error) {
	o := l.opts
	filter, _ := o.filter()
	return func(ctx context.Context, s Sample) (Item, error) {
		if s.bad != nil {
			s.buf.Release()
			return Item{Key: s.Key, pos: s.pos, bad: s.bad}, nil
		}
		fail := func(err error) (Item, error) {
			s.buf.Release()
			if o.BadData.Skip && isBadData(err) {
				return Item{Key: s.Key, pos: s.pos, bad: badOf(err, s.path, s.off, s.Key)}, nil
			}
			if isBadData(err) && s.off >= 0 {
				err = fmt.Errorf("%s: offset %d: %w", s.path, s.off, err)
			}
			return Item{}, err
		}
		if err := l.label(&s); err != nil {
			return fail(err)
		}
		cfg, err := imgcodec.DecodeConfig(s.Data)
		if err != nil {
			return fail(fmt.Errorf("%s: %w", s.Key, err))
		}
		j := &DecodeJob{Key: s.Key, Data: s.Data, Format: cfg.Format, Width: cfg.Width, Height: cfg.Height,
			Filter: filter, l: l, cfg: cfg, res: res, buf: s.buf}
		switch o.Transform {
		case Train:
			tr := augment.TrainTransform{Width: res, Height: res, Scale: o.CropScale, Ratio: o.CropRatio, NoFlip: o.NoFlip, FlipProb: o.FlipProb, Filter: filter}
			if o.FullDecode || !scaledDecode(cfg) {
				tr.MaxScaleDenom = 1
			}
			sc := scratchPool.Get().(*scratch)
			j.plan = tr.Plan(sc.aug.RNG(epochSeed(o.Seed, epochOf(ctx)), s.ID), cfg.Width, cfg.Height)
			scratchPool.Put(sc)
			j.train, j.Crop, j.Flip = true, j.plan.Crop, j.plan.Flip
			j.ResizeW, j.ResizeH, j.View = res, res, image.Rect(0, 0, res, res)
		case Eval:
			short := o.Resize
			if short == 0 {
				short = res * 256 / 224
			}
			j.Crop = image.Rect(0, 0, cfg.Width, cfg.Height)
			j.ResizeW, j.ResizeH = augment.ShorterEdgeSize(cfg.Width, cfg.Height, short)
			j.View = augment.CenterCropRect(j.ResizeW, j.ResizeH, res, res)
		}
		return Item{Key: s.Key, Label: s.Label, Bytes: len(s.Data), pos: s.pos, rep: s.rep, job: j}, nil
	}
}

// finishStaged is finish for the batch-decode stage: batches of jobs, the
// decode left to IterStaged.
func (l *Loader) finishStaged(read pipeline.Dataset[Sample], res, rows int) (pipeline.Dataset[*Batch], statser) {
	workers := l.opts.Workers
	if workers == 0 {
		workers = pipeline.Auto
	}
	var dec pipeline.Dataset[Item] = pipeline.ParallelMap(read, workers, l.prepare(res)).Named("prepare")
	if l.opts.BadData.Skip {
		dec = pipeline.Interleave(dec, l.quarantineBad, 1, 1, 1).Named("skip-bad")
	}
	b := pipeline.Batch(dec, l.opts.Batch).Remainder(l.remainder()).Named("batch").
		Repeated(func(it Item) bool { return it.rep })
	if rows >= 0 && !l.opts.Exact {
		b = b.Fill(rows)
	}
	return b, b
}

// StagedBatch is one batch of the batch-decode stage: Items[:Valid] and
// the rows the decoder wrote into Buffer, RowBytes each, in the stage's
// row format. Release gives the buffer back to the stage's ring (it is
// reused for a later batch): call it when done with the rows, at the
// latest before the next-but-Prefetch batch is asked for. Calling it twice
// is harmless.
type StagedBatch struct {
	Items    []Item
	Valid    int
	Repeats  int
	Index    int
	RowBytes int
	Format   RowFormat
	Buffer   BatchBuffer
	// Fallback is the rows of this batch the decoder handed to the CPU
	// decoder (BatchReport.Fallback), Shared those it gave it as its
	// share (BatchReport.Shared).
	Fallback, Shared int

	ring  *ring
	batch *Batch
}

// Host is the rows' bytes when the buffer is host memory, else nil.
func (b *StagedBatch) Host() []byte {
	h := b.Buffer.Host()
	if h == nil {
		return nil
	}
	return h[:len(b.Items)*b.RowBytes]
}

// Release gives the batch's buffer back to the ring.
func (b *StagedBatch) Release() {
	if b.ring == nil {
		return
	}
	r := b.ring
	b.ring = nil
	r.put(b.Buffer)
	b.batch.Release()
	b.Items = nil
}

// ring is the stage's fixed set of buffers: a batch takes one, Release
// gives it back; a bounded queue whose size is the backpressure.
type ring struct {
	free chan BatchBuffer
	all  []BatchBuffer
	size int // bytes each
}

func newRing(bd BatchDecoder, n, size int) (*ring, error) {
	r := &ring{free: make(chan BatchBuffer, n), size: size}
	for range n {
		b, err := bd.Alloc(size)
		if err != nil {
			r.freeAll(bd)
			return nil, fmt.Errorf("batch buffer of %d bytes on %s: %w", size, bd.Device(), err)
		}
		r.all = append(r.all, b)
		r.free <- b
	}
	return r, nil
}

func (r *ring) get(ctx context.Context) (BatchBuffer, error) {
	select {
	case b := <-r.free:
		return b, nil
	default:
	}
	select {
	case b := <-r.free:
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (r *ring) put(b BatchBuffer) { r.free <- b } // never blocks: the ring's own

// idle is the buffers in the ring now (all of them when no batch is out).
func (r *ring) idle() int { return len(r.free) }

func (r *ring) freeAll(bd BatchDecoder) error {
	var errs []error
	for _, b := range r.all {
		errs = append(errs, bd.Free(b))
	}
	r.all = nil
	return errors.Join(errs...)
}

// RingSize is the buffers of the stage's ring: the Prefetch batches
// queued, the one being decoded, and two the consumer may hold.
func (l *Loader) RingSize() int { return l.opts.Prefetch + 3 }

// Fallbacks is the rows handed to the CPU decoder since Open.
func (l *Loader) Fallbacks() int64 { return l.fallback.Load() }

// SharedRows is the rows the stage gave the CPU decoder as its share
// (Options.CPUShare) since Open.
func (l *Loader) SharedRows() int64 { return l.shared.Load() }

// BatchDecoder returns the loader's batch decoder, or nil on the CPU path.
func (l *Loader) BatchDecoder() BatchDecoder { return l.bd }

// Format is what every row of epoch e's batches holds (the layout,
// shape and normalisation of Options, at the epoch's resolution).
func (l *Loader) Format(e int) RowFormat { return l.rowFormat(l.Resolution(e)) }

// rowFormat is the stage's rows at resolution res.
func (l *Loader) rowFormat(res int) RowFormat {
	c, h, w := l.shape(res)
	return RowFormat{Layout: l.opts.Layout, C: c, H: h, W: w, RowBytes: l.RowBytes(res), Mean: l.opts.Mean, Std: l.opts.Std}
}

// stageRing allocates the ring on first use, sized for the largest
// resolution of the schedule.
func (l *Loader) stageRing() (*ring, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ring != nil {
		return l.ring, nil
	}
	if l.closed {
		return nil, errors.New("loader: closed")
	}
	res := l.opts.Resolution
	for _, r := range l.opts.Schedule {
		res = max(res, r)
	}
	r, err := newRing(l.bd, l.RingSize(), l.RowBytes(res)*l.opts.Batch)
	if err != nil {
		return nil, err
	}
	l.ring = r
	return r, nil
}

// IterStaged runs epoch e through the batch-decode stage: the batches
// IterEpoch would serve on the CPU path (the same samples, order, draws
// and padding), each decoded as a whole by the loader's BatchDecoder into
// a buffer of its ring. A goroutine decodes ahead into a queue of
// Prefetch batches; it ends, and the batches it holds go back to the
// ring, before the iteration returns (an early break or a cancelled ctx
// included).
func (l *Loader) IterStaged(ctx context.Context, e int) iter.Seq2[*StagedBatch, error] {
	return func(yield func(*StagedBatch, error) bool) {
		if l.bd == nil {
			yield(nil, errors.New("loader: no batch-decode stage (Options.Device is cpu and no NewBatchDecoder)"))
			return
		}
		r, err := l.stageRing()
		if err != nil {
			yield(nil, err)
			return
		}
		f := l.rowFormat(l.Resolution(e))
		parent := ctx
		ctx, cancel := context.WithCancel(ctx)
		type result struct {
			b   *StagedBatch
			err error
		}
		out := make(chan result, l.opts.Prefetch) // bounded: the prefetch depth
		var wg sync.WaitGroup
		defer func() {
			cancel()
			wg.Wait()
			for res := range out { // what the consumer never took
				if res.b != nil {
					res.b.Release()
				}
			}
		}()
		wg.Go(func() {
			defer close(out)
			send := func(res result) bool {
				select {
				case out <- res:
					return true
				case <-ctx.Done():
					if res.b != nil {
						res.b.Release()
					}
					return false
				}
			}
			for b, err := range l.iterEpoch(ctx, e, true) {
				if err != nil {
					send(result{err: err})
					return
				}
				sb, err := l.decodeStaged(ctx, r, b, f)
				if !send(result{sb, err}) || err != nil {
					return
				}
			}
		})
		failed := false
		for res := range out {
			if res.err == nil {
				l.advance(res.b.batch) // the consumer's position, as IterEpoch's
			}
			failed = res.err != nil
			if !yield(res.b, res.err) || res.err != nil {
				return
			}
		}
		if err := parent.Err(); err != nil {
			yield(nil, err) // the decoder stopped early: say why
			return
		}
		if !failed {
			l.markDone()
		}
	}
}

// decodeStaged decodes the jobs of b into a buffer of the ring.
func (l *Loader) decodeStaged(ctx context.Context, r *ring, b *Batch, f RowFormat) (*StagedBatch, error) {
	buf, err := r.get(ctx)
	if err != nil {
		b.Release()
		return nil, err
	}
	sb := &StagedBatch{Items: b.Items, Valid: b.Valid, Repeats: b.Repeats, Index: b.Index, RowBytes: f.RowBytes,
		Format: f, Buffer: buf, ring: r, batch: b}
	jobs := make([]*DecodeJob, len(b.Items))
	for i := range b.Items {
		jobs[i] = b.Items[i].job
		if jobs[i] == nil {
			sb.Release()
			return nil, fmt.Errorf("batch %d row %d (%s): no decode job", b.Index, i, b.Items[i].Key)
		}
	}
	rep, err := l.bd.DecodeBatch(ctx, jobs, buf, f)
	for i, j := range jobs {
		// The encoded bytes go back to the readers' pool; the items keep
		// their keys and labels.
		j.buf.Release()
		j.Data, j.buf = nil, nil
		b.Items[i].job = nil
	}
	if err != nil {
		sb.Release()
		return nil, fmt.Errorf("%s batch decode of batch %d: %w", l.bd.Device(), b.Index, err)
	}
	sb.Fallback, sb.Shared = rep.Fallback, rep.Shared
	l.fallback.Add(int64(rep.Fallback))
	l.shared.Add(int64(rep.Shared))
	return sb, nil
}

// CPUBatchDecoder is the batch-decode stage on the CPU: each row decoded
// by DecodeCPU (the CPU path's decode, resize and normalisation) on up to
// Workers goroutines, into host buffers. With CanDecode set it stands in
// for a device decoder in tests: a row whose bytes CanDecode refuses is
// counted as a fallback (it is decoded the same way).
type CPUBatchDecoder struct {
	Workers   int // 0: one per row, at most GOMAXPROCS (see pipeline.Auto)
	CanDecode func(data []byte) bool
	// Share stands in for a device stage's CPU share (DecoderConfig's
	// CPUShare): the rows ShareRows picks are counted as Shared (a GPU
	// stage never offers them to its device), the others CanDecode
	// refuses as Fallback; all are decoded the same way.
	Share float64
	// Mapped names a device the decoder stands in for: its buffers are
	// then memory outside Go's heap (mmap) reported as that device's
	// (DeviceBatchBuffer, Host nil), as a GPU stage's, so that a consumer
	// reading device addresses (train/cuda's CPU twin, "cuda-twin") is
	// tested without a GPU. Unix only.
	Mapped string

	allocs, frees atomic.Int64
}

var _ BatchDecoder = (*CPUBatchDecoder)(nil)

type hostBuffer struct{ b []byte }

func (h *hostBuffer) Size() int    { return len(h.b) }
func (h *hostBuffer) Host() []byte { return h.b }

func (d *CPUBatchDecoder) Device() string {
	if d.Mapped != "" {
		return d.Mapped
	}
	return "cpu"
}

// Alloc returns host memory, 8-byte aligned (page-aligned and mapped
// when Mapped).
func (d *CPUBatchDecoder) Alloc(n int) (BatchBuffer, error) {
	if d.Mapped != "" {
		b, err := mapBuffer(n, d.Mapped)
		if err != nil {
			return nil, err
		}
		d.allocs.Add(1)
		return b, nil
	}
	d.allocs.Add(1)
	return &hostBuffer{make([]byte, n)}, nil // 8-byte aligned: Go's allocator aligns its size classes
}

func (d *CPUBatchDecoder) Free(b BatchBuffer) error {
	if m, ok := b.(*mappedBuffer); ok {
		if err := m.unmap(); err != nil {
			return fmt.Errorf("cpu batch decoder: %w", err)
		}
		d.frees.Add(1)
		return nil
	}
	h, ok := b.(*hostBuffer)
	if !ok || h.b == nil {
		return fmt.Errorf("cpu batch decoder: free of a buffer it did not give (or twice)")
	}
	h.b = nil
	d.frees.Add(1)
	return nil
}

// Live is the buffers allocated and not freed.
func (d *CPUBatchDecoder) Live() int64 { return d.allocs.Load() - d.frees.Load() }

func (d *CPUBatchDecoder) Close() error { return nil }

func (d *CPUBatchDecoder) DecodeBatch(ctx context.Context, jobs []*DecodeJob, dst BatchBuffer, f RowFormat) (BatchReport, error) {
	var rep BatchReport
	host := dst.Host()
	if m, ok := dst.(*mappedBuffer); ok {
		host = m.b
	}
	if host == nil || len(host) < len(jobs)*f.RowBytes {
		return rep, fmt.Errorf("cpu batch decoder: buffer of %d bytes for %d rows of %d", dst.Size(), len(jobs), f.RowBytes)
	}
	share := ShareRows(len(jobs), d.Share)
	for i, j := range jobs {
		switch {
		case share[i]:
			rep.Shared++
		case d.CanDecode != nil && !d.CanDecode(j.Data):
			rep.Fallback++
		}
	}
	workers := d.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(jobs))
	errs := make([]error, len(jobs))
	next := make(chan int, len(jobs)) // every row queued up front: bounded by the batch
	for i := range jobs {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				if ctx.Err() != nil {
					errs[i] = ctx.Err()
					continue
				}
				errs[i] = jobs[i].DecodeCPU(host[i*f.RowBytes : (i+1)*f.RowBytes])
			}
		})
	}
	wg.Wait()
	for _, err := range errs { // the lowest failing row's
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// StageBuffers returns the buffers of the stage's ring, allocating it if
// no epoch has yet (the same buffers every epoch and every batch uses, in
// a fixed order): what a server exports once to another process (package
// serve's device ring) before it hands batches over by buffer.
func (l *Loader) StageBuffers() ([]BatchBuffer, error) {
	if l.bd == nil {
		return nil, errors.New("loader: no batch-decode stage (Options.Device is cpu and no NewBatchDecoder)")
	}
	r, err := l.stageRing()
	if err != nil {
		return nil, err
	}
	return append([]BatchBuffer(nil), r.all...), nil
}
