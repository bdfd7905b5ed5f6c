package loader

import (
	"context"
	"fmt"
	"io"
	"iter"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/pipeline"
	"github.com/faster-training/faster/source"
)

// scratch is one decode worker's reusable state.
type scratch struct {
	aug augment.Augmenter
	ops augment.Scratch
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// epochSeed mixes the epoch into the seed so every epoch augments anew.
func epochSeed(seed uint64, epoch int) uint64 {
	return seed ^ (uint64(epoch)+1)*0x9e3779b97f4a7c15
}

// decoder returns the map function of the recipe at resolution res.
func (l *Loader) decoder(res int) func(context.Context, Sample) (Item, error) {
	o := l.opts
	dec := l.decodeOne(res)
	return func(ctx context.Context, s Sample) (Item, error) {
		// The item holds pixels, never the encoded bytes: once decoded
		// (or judged bad), the record's buffer goes to the next read.
		defer s.buf.Release()
		if s.bad != nil {
			return Item{Key: s.Key, pos: s.pos, bad: s.bad}, nil
		}
		if err := l.label(&s); err != nil {
			if o.BadData.Skip {
				return Item{Key: s.Key, pos: s.pos, bad: badOf(err, s.path, s.off, s.Key)}, nil
			}
			return Item{}, err
		}
		it, err := dec(ctx, s)
		if err != nil && isBadData(err) {
			if o.BadData.Skip {
				return Item{Key: s.Key, pos: s.pos, bad: badOf(err, s.path, s.off, s.Key)}, nil
			}
			if s.off >= 0 {
				// A record inside a shard or tar: the key alone does not
				// say where (the skip policy's list has it as path, offset).
				err = fmt.Errorf("%s: offset %d: %w", s.path, s.off, err)
			}
		}
		it.rep = s.rep
		return it, err
	}
}

// decodeOne is the recipe's work on one good sample.
func (l *Loader) decodeOne(res int) func(context.Context, Sample) (Item, error) {
	o := l.opts
	filter, _ := o.filter() // checked by Open
	return func(ctx context.Context, s Sample) (Item, error) {
		it := Item{Key: s.Key, Label: s.Label, Bytes: len(s.Data), pos: s.pos}
		if o.Transform == None {
			return it, nil
		}
		sc := scratchPool.Get().(*scratch)
		defer scratchPool.Put(sc)
		prof := o.Profile
		var t int64
		if prof != nil {
			lockThread()
			defer unlockThread()
			t = threadClock()
		}
		cfg, err := imgcodec.DecodeConfig(s.Data)
		if err != nil {
			return it, fmt.Errorf("%s: %w", s.Key, err)
		}
		if l.rc != nil {
			return l.runRecipe(ctx, sc, s, it, cfg, prof, t)
		}
		dst := imgcodec.NewImage(res, res, 3)
		switch o.Transform {
		case Train:
			tr := augment.TrainTransform{Width: res, Height: res, Scale: o.CropScale, Ratio: o.CropRatio, NoFlip: o.NoFlip, FlipProb: o.FlipProb, Filter: filter}
			if o.FullDecode || !scaledDecode(cfg) {
				tr.MaxScaleDenom = 1
			}
			rng := sc.aug.RNG(epochSeed(o.Seed, epochOf(ctx)), s.ID)
			p := tr.Plan(rng, cfg.Width, cfg.Height)
			img, err := imgcodec.Decode(s.Data, &p.Decode)
			if err != nil {
				dst.Release()
				return it, fmt.Errorf("%s: %w", s.Key, err)
			}
			if prof != nil {
				t = since(&prof.decode, t)
			}
			err = sc.aug.Apply(dst, img, p)
			img.Release()
			if err != nil {
				dst.Release()
				return it, fmt.Errorf("%s: %w", s.Key, err)
			}
			if o.Augment != nil {
				if err := o.Augment.Augment(&sc.ops, rng, dst); err != nil {
					dst.Release()
					return it, fmt.Errorf("%s: %w", s.Key, err)
				}
			}
			if o.Erasing != nil {
				it.erase = o.Erasing.Draw(rng, max(l.channels, 1), res, res, nil)
			}
			if prof != nil {
				since(&prof.resize, t)
			}
		case Eval:
			if err := evalInto(&sc.aug.Resizer, dst, s.Data, cfg, o.Resize, filter, o.FullDecode || !o.FastEvalDecode, prof, t); err != nil {
				dst.Release()
				return it, fmt.Errorf("%s: %w", s.Key, err)
			}
		}
		if prof != nil {
			prof.decoded.Add(1)
		}
		it.img = dst
		return it, nil
	}
}

// evalInto is torchvision's Resize(short) + CenterCrop(res) done as one
// resample (augment.ResizeView: the whole resize's weights, only the
// crop's outputs), after a full-size decode (full: the loader's default,
// PIL's pixels) or a DCT-scaled decode that keeps the shorter edge at
// least the resize target (Options.FastEvalDecode; still a full-size
// decode for Nearest, which samples the full image's pixels); short 0 is
// res*256/224 (res: dst's width). The crop is dst's size. With a profile,
// the decode and the resize are timed from t.
// scaledDecode reports whether a scaled decode saves work on this image:
// a JPEG's, done in the DCT domain. Other formats decode at full size
// whatever the scale and would only be box-downscaled after, which saves
// a little resizing and costs PIL's pixels, so they take the full path.
func scaledDecode(cfg imgcodec.Config) bool { return cfg.Format == "jpeg" }

func evalInto(rz *augment.Resizer, dst *imgcodec.Image, data []byte, cfg imgcodec.Config, short int, f augment.Filter, full bool, prof *Profile, t int64) error {
	if short == 0 {
		short = dst.Width * 256 / 224
	}
	rw, rh := augment.ShorterEdgeSize(cfg.Width, cfg.Height, short)
	denom := 1
	for _, d := range []int{8, 4, 2} {
		if !full && scaledDecode(cfg) && f != augment.Nearest && min(cfg.Width, cfg.Height)/d >= short {
			denom = d
			break
		}
	}
	img, err := imgcodec.Decode(data, &imgcodec.DecodeOptions{ScaleDenom: denom})
	if err != nil {
		return err
	}
	defer img.Release()
	if prof != nil {
		t = since(&prof.decode, t)
		defer func() { since(&prof.resize, t) }()
	}
	if img.Width == cfg.Width && img.Height == cfg.Height {
		denom = 1 // a decoder that ignored the scale
	}
	// The scaled picture is ceil(w/d) x ceil(h/d); its first w/d x h/d
	// pixels cover the image.
	box := augment.Box{X1: float64(cfg.Width) / float64(denom), Y1: float64(cfg.Height) / float64(denom)}
	box.X1, box.Y1 = min(box.X1, float64(img.Width)), min(box.Y1, float64(img.Height))
	crop := augment.CenterCropRect(rw, rh, dst.Width, dst.Height)
	return rz.ResizeView(dst, img, box, rw, rh, crop, f, false)
}

// filler copies a decoded image into its batch row and releases it.
func (l *Loader) filler() func(row []byte, it Item) error {
	mean, std := l.opts.Mean, l.opts.Std
	if l.rc != nil {
		mean, std = l.rc.Mean, l.rc.Std
	}
	norm := augment.NewNormalizer(mean, std)
	u8 := l.opts.Layout == U8HWC
	prof := l.opts.Profile
	one := l.channels == 1
	return func(row []byte, it Item) error {
		img := it.img
		if img == nil {
			return nil // a padding row
		}
		if one && img.Channels != 1 {
			img = firstChannel(img) // gray in every channel: one served
		}
		defer img.Release()
		if prof != nil {
			lockThread()
			defer unlockThread()
			defer func(t int64) { since(&prof.normalise, t); prof.filled.Add(1) }(threadClock())
		}
		if u8 {
			n := img.Width * img.Channels
			for y := range img.Height {
				copy(row[y*n:], img.Pix[y*img.Stride:y*img.Stride+n])
			}
			return nil
		}
		f := pipeline.Float32s(row)
		if err := norm.CHW(f, img); err != nil {
			return err
		}
		return augment.Erase(f, img.Channels, img.Height, img.Width, it.erase)
	}
}

// finish adds the decode, batch and prefetch stages; every epoch serves
// exactly rows samples (see StepsPerEpoch), or what there is when rows < 0.
func (l *Loader) finish(read pipeline.Dataset[Sample], res, rows int) (pipeline.Dataset[*Batch], statser) {
	if l.opts.staged() {
		return l.finishStaged(read, res, rows)
	}
	workers := l.opts.Workers
	if workers == 0 {
		workers = pipeline.Auto
	}
	var dec pipeline.Dataset[Item] = pipeline.ParallelMap(read, workers, l.decoder(res)).Named("decode")
	if l.opts.BadData.Skip {
		dec = pipeline.Interleave(dec, l.quarantineBad, 1, 1, 1).Named("skip-bad")
	}
	b := pipeline.Batch(dec, l.opts.Batch).Remainder(l.remainder()).Named("batch").
		Repeated(func(it Item) bool { return it.rep })
	if l.opts.Transform != None {
		// The rows are normalised into the arena on as many goroutines as
		// decode (before: the batch stage's one, which capped the loader
		// at one core's rate of normalising, ~4,000 float32 rows of 224²
		// a second, and held the decode autotune to it).
		fillers := workers
		if fillers == pipeline.Auto {
			fillers = runtime.GOMAXPROCS(0)
		}
		b = b.Arena(l.RowBytes(res), l.filler()).FillParallel(fillers)
	}
	if rows >= 0 && !l.opts.Exact { // Exact: each rank its own part, no more
		b = b.Fill(rows)
	}
	if l.opts.Prefetch == 0 {
		return b, b
	}
	p := pipeline.Prefetch(b, l.opts.Prefetch).Named("prefetch")
	return p, p
}

func (l *Loader) remainder() pipeline.Remainder {
	if l.opts.Drop {
		return pipeline.Drop
	}
	return pipeline.Keep
}

// quarantineBad passes good items on and records bad ones (the skip
// policy), failing the epoch when the budget is exceeded.
func (l *Loader) quarantineBad(it Item) pipeline.Dataset[Item] {
	if it.bad == nil {
		return pipeline.FromSlice([]Item{it})
	}
	if err := l.q.add(*it.bad, int(l.cur.Load()), l.opts.BadData, max(l.local, 1)); err != nil {
		return pipeline.FromFunc(func(context.Context, int) (Item, error) { return Item{}, err })
	}
	return pipeline.FromSlice[Item](nil)
}

func (l *Loader) shuffles() bool {
	switch l.opts.Shuffle {
	case ShuffleOn:
		return true
	case ShuffleOff:
		return false
	}
	return l.opts.Transform != Eval
}

// sampleOf is the loader's sample of a dataset's record at position pos
// of this rank's epoch order (-1 when streamed).
func sampleOf(r source.Record, pos int) Sample {
	return Sample{Key: r.Key, Label: r.Label, Data: r.Data, ID: r.ID, pos: pos, path: r.Path, off: r.Offset, synset: r.Synset, buf: r.Buf}
}

// initIndexed builds the pipeline of a random-access dataset: each
// epoch's order is a global permutation (or index order), rank r serves
// positions r, r+N, … of it (see State for resuming), each record read by
// its global index in a parallel, ordered read stage.
func (l *Loader) initIndexed(ds source.Indexed) error {
	o := l.opts
	n := ds.Len()
	l.kind, l.n, l.labels, l.indexed = ds.Kind(), n, ds.Classes(), true
	l.local = strideLen(n, o.NumShards, o.ShardIdx)
	l.per = l.rankCounts(n)
	remote := false
	if r, ok := ds.(source.Remote); ok {
		remote = r.Remote()
	}
	l.open = func(res int, resumed bool) (pipeline.Dataset[*Batch], statser) {
		rows := l.epochRows(l.per)
		if resumed {
			rows = l.epochRows(l.rankCounts(l.resume.Len()))
		}
		list := pipeline.FromFunc(positions).Named("list").Role(pipeline.RoleNone)
		prof := o.Profile
		var readCPU atomic.Int64 // the read stage's CPU work, for the verdict
		readStage := pipeline.ParallelMap[int, Sample](list, pipeline.Auto, func(ctx context.Context, pos int) (Sample, error) {
			sampled := threadCPU && pos%cpuSample == 0
			var t int64
			if sampled || prof != nil {
				lockThread()
				t = threadClock()
			}
			r, err := ds.Record(planOf(ctx).At(pos))
			if sampled || prof != nil {
				d := threadClock() - t
				unlockThread()
				if prof != nil {
					prof.read.Add(d)
					prof.reads.Add(1)
					readCPU.Add(d)
				} else {
					readCPU.Add(cpuSample * d)
				}
			}
			s := sampleOf(r, pos)
			s.rep = pos >= ownLen(planOf(ctx))
			if err != nil {
				if o.BadData.Skip && isBadData(err) {
					s.bad = badOf(err, s.path, s.off, s.Key)
					return s, nil
				}
				return s, err
			}
			return s, nil
		}).Role(pipeline.RoleIO).Named("read").Bytes(func(s Sample) int { return len(s.Data) })
		if threadCPU {
			// A read that computes (parses, converts, checks) is CPU work
			// in the verdict, not IO.
			readStage = readStage.CPU(func() time.Duration { return time.Duration(readCPU.Load()) })
		}
		if remote {
			// Remote reads wait on the network, not the CPU: let autotune
			// keep many requests in flight.
			readStage = readStage.Budget(remoteReadBudget)
		}
		read := readStage
		return l.finish(read, res, rows)
	}
	return nil
}

// initStreaming builds the pipeline of a dataset of files read in order:
// the files sharded across ranks (by file when there are enough, else
// the counts split evenly), shuffled, interleaved, then a shuffle buffer.
func (l *Loader) initStreaming(ds source.Streaming) error {
	o := l.opts
	l.kind, l.labels = ds.Kind(), ds.Classes()
	files, counts := ds.Files(), ds.Counts()
	known := true
	for _, c := range counts {
		if c < 0 {
			known = false
		}
	}
	rows := -1
	if known {
		per := make([]int, o.NumShards)
		total := 0
		for _, c := range counts {
			total += c
		}
		l.n = total
		if len(files) >= o.NumShards {
			for i, c := range counts {
				per[i%o.NumShards] += c
			}
		} else {
			for r := range per {
				per[r] = total / o.NumShards
				if r < total%o.NumShards {
					per[r]++
				}
			}
		}
		l.local = per[o.ShardIdx]
		l.per = per
		rows = l.epochRows(per)
	}
	pos := map[string]int{}
	for i, f := range files {
		pos[f] = i
	}
	l.open = func(res int, resumed bool) (pipeline.Dataset[*Batch], statser) {
		// A rank without a record of its own (fewer records than ranks)
		// still serves its rows, as DistributedSampler pads: the epoch's
		// first records, every one a repeat.
		borrow := l.per != nil && l.per[o.ShardIdx] == 0 && rows > 0 && !o.Exact
		list := pipeline.Files(files...).Named("files")
		if !borrow {
			list = list.Shard(o.NumShards, o.ShardIdx)
		}
		if l.shuffles() {
			list = list.Shuffle(l.opts.Seed) // l.opts: SetSeed may change it
		}
		cycle := min(len(files), 4)
		readCPU := new(atomic.Int64) // the reads' CPU work, for the verdict
		readStage := pipeline.Interleave(list, func(f string) pipeline.Dataset[Sample] {
			return recordStream{ds: ds, file: pos[f], prof: o.Profile, cpu: readCPU}
		}, cycle, 16, pipeline.Auto).Named("read").Bytes(func(s Sample) int { return len(s.Data) })
		if threadCPU {
			readStage = readStage.CPU(func() time.Duration { return time.Duration(readCPU.Load()) })
		}
		var read pipeline.Dataset[Sample] = readStage
		if l.shuffles() {
			read = pipeline.Shuffle(read, o.ShuffleBuffer, l.opts.Seed).Named("shuffle")
		}
		read = pipeline.Map(read, number).Named("number").Role(pipeline.RoleNone)
		if borrow {
			read = pipeline.Map(read, func(_ context.Context, s Sample) (Sample, error) {
				s.rep = true
				return s, nil
			}).Named("repeat").Role(pipeline.RoleNone)
		}
		rows := rows // this epoch's: a resumed one serves what is left
		if resumed && l.skip > 0 {
			// The epoch's order is the same stream: read past what this
			// rank consumed before, without decoding it. The positions
			// count on through Fill's passes, so only the first pass
			// skips: repeats are the epoch's first samples, as they are
			// in the uninterrupted epoch.
			skip := l.skip
			read = pipeline.Interleave(read, func(s Sample) pipeline.Dataset[Sample] {
				if s.pos < skip {
					return pipeline.FromSlice[Sample](nil)
				}
				return pipeline.FromSlice([]Sample{s})
			}, 1, 1, 1).Named("resume")
			if rows >= 0 {
				served := l.skipRows
				if served == 0 {
					served = l.skip
				}
				rows = max(rows-served, 0)
			}
		}
		return l.finish(read, res, rows)
	}
	return nil
}

// cpuSample: the read stages time one read in cpuSample on the thread's
// CPU clock for the verdict (every read when profiling), so that records
// of a few hundred bytes do not pay two clock reads each.
const cpuSample = 8

// remoteReadBudget caps the concurrent random reads of records from a
// storage URL (GlobalShuffle over s3://, gs://, http(s)://).
const remoteReadBudget = 32

// recordStream is the dataset of one file's samples, read in order.
type recordStream struct {
	ds   source.Streaming
	file int
	prof *Profile      // nil unless profiling
	cpu  *atomic.Int64 // the reads' thread CPU time (where threadCPU)
}

func (r recordStream) Iter(ctx context.Context) iter.Seq2[Sample, error] {
	return func(yield func(Sample, error) bool) {
		rd, err := r.ds.Open(ctx, r.file)
		if err != nil {
			yield(Sample{}, err)
			return
		}
		defer rd.Close()
		for n := 0; ; n++ {
			if err := ctx.Err(); err != nil {
				yield(Sample{}, err)
				return
			}
			rec, err := r.next(rd, n%cpuSample == 0)
			if err == io.EOF {
				return
			}
			s := sampleOf(rec, -1)
			if err == nil && rec.Bad != nil {
				s.bad = badOf(rec.Bad, rec.Path, rec.Offset, rec.Key)
			}
			if !yield(s, err) || err != nil {
				return
			}
		}
	}
}

// next reads the next record, timed by the thread's CPU clock when
// profiling, and for the verdict when sampled (one read in cpuSample).
// The lock is held only within the call: the stream runs in Interleave's
// coroutine, which must switch back unlocked.
func (r recordStream) next(rd source.RecordReader, sampled bool) (source.Record, error) {
	sampled = sampled && threadCPU && r.cpu != nil
	if r.prof == nil && !sampled {
		return rd.Next()
	}
	lockThread()
	t := threadClock()
	rec, err := rd.Next()
	d := threadClock() - t
	unlockThread()
	switch {
	case r.prof != nil && r.cpu != nil && threadCPU:
		r.cpu.Add(d)
	case sampled:
		r.cpu.Add(cpuSample * d)
	}
	if r.prof != nil {
		r.prof.read.Add(d) // the last call's time (the end of the file) counts too
		if err == nil {
			r.prof.reads.Add(1)
		}
	}
	return rec, err
}

// firstChannel is m's first channel as a one-channel image; m is released.
func firstChannel(m *imgcodec.Image) *imgcodec.Image {
	g := imgcodec.NewImage(m.Width, m.Height, 1)
	for y := range m.Height {
		src, dst := m.Pix[y*m.Stride:][:m.Width*m.Channels], g.Pix[y*g.Stride:][:m.Width]
		for x := range dst {
			dst[x] = src[x*m.Channels]
		}
	}
	m.Release()
	return g
}

// rgb is m with three channels (a one-channel picture's gray in each); m
// is released when it is replaced.
func rgb(m *imgcodec.Image) *imgcodec.Image {
	if m.Channels == 3 {
		return m
	}
	c := imgcodec.NewImage(m.Width, m.Height, 3)
	for y := range m.Height {
		src, dst := m.Pix[y*m.Stride:][:m.Width*m.Channels], c.Pix[y*c.Stride:][:m.Width*3]
		for x := range m.Width {
			v := src[x*m.Channels]
			dst[3*x], dst[3*x+1], dst[3*x+2] = v, v, v
		}
	}
	m.Release()
	return c
}

// runRecipe is Options.Recipe's work on one good sample: the head fused
// with the decode, the steps in order, RandomErasing's draw last.
func (l *Loader) runRecipe(ctx context.Context, sc *scratch, s Sample, it Item, cfg imgcodec.Config, prof *Profile, t int64) (Item, error) {
	o, rc := l.opts, l.rc
	rng := sc.aug.RNG(epochSeed(o.Seed, epochOf(ctx)), s.ID)
	fail := func(m *imgcodec.Image, err error) (Item, error) {
		if m != nil {
			m.Release()
		}
		return it, fmt.Errorf("%s: %w", s.Key, err)
	}
	var img *imgcodec.Image
	switch h := rc.Head; h.Kind {
	case augment.HeadRandomResizedCrop:
		tr := h.Train
		if o.FullDecode || !scaledDecode(cfg) {
			tr.MaxScaleDenom = 1
		}
		p := tr.Plan(rng, cfg.Width, cfg.Height)
		src, err := imgcodec.Decode(s.Data, &p.Decode)
		if err != nil {
			return fail(nil, err)
		}
		if prof != nil {
			t = since(&prof.decode, t)
		}
		src = rgb(src)
		img = imgcodec.NewImage(tr.Width, tr.Height, 3)
		err = sc.aug.Apply(img, src, p)
		src.Release()
		if err != nil {
			return fail(img, err)
		}
	case augment.HeadResizeCenterCrop:
		img = imgcodec.NewImage(h.CropW, h.CropH, 3) // the decoders give RGB
		if err := evalInto(&sc.aug.Resizer, img, s.Data, cfg, h.Resize, h.Filter, o.FullDecode || !o.FastEvalDecode, prof, t); err != nil {
			return fail(img, err)
		}
		if prof != nil {
			t = threadClock()
		}
	default:
		src, err := imgcodec.Decode(s.Data, &imgcodec.DecodeOptions{ScaleDenom: 1})
		if err != nil {
			return fail(nil, err)
		}
		if prof != nil {
			t = since(&prof.decode, t)
		}
		if rc.OwnSize {
			if err := l.sameSize(s, src); err != nil {
				src.Release()
				return it, err
			}
		}
		img = rgb(src)
	}
	for _, st := range rc.Steps {
		next, err := st.Run(&sc.aug, &sc.ops, rng, img)
		img = next
		if err != nil {
			return fail(img, err)
		}
	}
	if img.Width != rc.Width || img.Height != rc.Height {
		return fail(img, fmt.Errorf("recipe made %dx%d, want %dx%d", img.Width, img.Height, rc.Width, rc.Height))
	}
	if e := rc.Erasing; e != nil {
		c := max(l.channels, 1)
		it.erase = e.Draw(rng, c, rc.Height, rc.Width, nil)
		if it.erase.Erase && rc.ErasingFirst && rc.Normalized {
			it.erase.Values = normalised(it.erase.Values, c, rc.Mean, rc.Std)
		}
	}
	if prof != nil {
		since(&prof.resize, t)
		prof.decoded.Add(1)
	}
	it.img = img
	return it, nil
}

// normalised is RandomErasing's values, drawn before Normalize, as
// Normalize makes them: (v - mean) / std per channel, in float32 (a copy;
// one value per channel, or c planes of noise).
func normalised(v []float32, c int, mean, std [3]float32) []float32 {
	if len(v) == 0 {
		v = []float32{0}
	}
	if len(v) == 1 {
		v = []float32{v[0], v[0], v[0]}[:c]
	}
	out := make([]float32, len(v))
	plane := len(v) / c
	for i, x := range v {
		k := i / plane
		out[i] = (x - mean[k]) / std[k]
	}
	return out
}
