package loader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/pipeline"
	"github.com/faster-training/faster/shard"
	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/tfexample"
	"github.com/faster-training/faster/tfrecord"
)

// scratch is one decode worker's reusable state.
type scratch struct {
	aug augment.Augmenter
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
		if err != nil && o.BadData.Skip && isBadData(err) {
			return Item{Key: s.Key, pos: s.pos, bad: badOf(err, s.path, s.off, s.Key)}, nil
		}
		return it, err
	}
}

// decodeOne is the recipe's work on one good sample.
func (l *Loader) decodeOne(res int) func(context.Context, Sample) (Item, error) {
	o := l.opts
	return func(ctx context.Context, s Sample) (Item, error) {
		it := Item{Key: s.Key, Label: s.Label, Bytes: len(s.Data), pos: s.pos}
		if o.Transform == None {
			return it, nil
		}
		sc := scratchPool.Get().(*scratch)
		defer scratchPool.Put(sc)
		cfg, err := imgcodec.DecodeConfig(s.Data)
		if err != nil {
			return it, fmt.Errorf("%s: %w", s.Key, err)
		}
		dst := imgcodec.NewImage(res, res, 3)
		switch o.Transform {
		case Train:
			tr := augment.TrainTransform{Width: res, Height: res}
			p := tr.Plan(sc.aug.RNG(epochSeed(o.Seed, epochOf(ctx)), s.ID), cfg.Width, cfg.Height)
			img, err := imgcodec.Decode(s.Data, &p.Decode)
			if err != nil {
				dst.Release()
				return it, fmt.Errorf("%s: %w", s.Key, err)
			}
			err = sc.aug.Apply(dst, img, p)
			img.Release()
			if err != nil {
				dst.Release()
				return it, fmt.Errorf("%s: %w", s.Key, err)
			}
		case Eval:
			if err := evalInto(&sc.aug.Resizer, dst, s.Data, cfg, res); err != nil {
				dst.Release()
				return it, fmt.Errorf("%s: %w", s.Key, err)
			}
		}
		it.img = dst
		return it, nil
	}
}

// evalInto is torchvision's Resize(res*256/224) + CenterCrop(res) done as
// one resample of the crop's source box (the same geometry as resizing
// the whole image, then cropping), after a DCT-scaled decode that keeps
// the shorter edge at least the resize target.
func evalInto(rz *augment.Resizer, dst *imgcodec.Image, data []byte, cfg imgcodec.Config, res int) error {
	short := res * 256 / 224
	rw, rh := augment.ShorterEdgeSize(cfg.Width, cfg.Height, short)
	denom := 1
	for _, d := range []int{8, 4, 2} {
		if min(cfg.Width, cfg.Height)/d >= short {
			denom = d
			break
		}
	}
	img, err := imgcodec.Decode(data, &imgcodec.DecodeOptions{ScaleDenom: denom})
	if err != nil {
		return err
	}
	defer img.Release()
	crop := augment.CenterCropRect(rw, rh, res, res)
	sx, sy := float64(img.Width)/float64(rw), float64(img.Height)/float64(rh)
	box := augment.Box{
		X0: float64(crop.Min.X) * sx, Y0: float64(crop.Min.Y) * sy,
		X1: float64(crop.Max.X) * sx, Y1: float64(crop.Max.Y) * sy,
	}
	return rz.ResizeBox(dst, img, box, augment.Triangle, false)
}

// filler copies a decoded image into its batch row and releases it.
func (l *Loader) filler() func(row []byte, it Item) error {
	norm := augment.NewNormalizer(l.opts.Mean, l.opts.Std)
	u8 := l.opts.Layout == U8HWC
	return func(row []byte, it Item) error {
		img := it.img
		if img == nil {
			return nil // a padding row
		}
		defer img.Release()
		if u8 {
			for y := range img.Height {
				copy(row[y*img.Width*3:], img.Pix[y*img.Stride:y*img.Stride+img.Width*3])
			}
			return nil
		}
		return norm.CHW(pipeline.Float32s(row), img)
	}
}

// finish adds the decode, batch and prefetch stages; every epoch serves
// exactly rows samples (see StepsPerEpoch), or what there is when rows < 0.
func (l *Loader) finish(read pipeline.Dataset[Sample], res, rows int) (pipeline.Dataset[*Batch], statser) {
	workers := l.opts.Workers
	if workers == 0 {
		workers = pipeline.Auto
	}
	var dec pipeline.Dataset[Item] = pipeline.ParallelMap(read, workers, l.decoder(res)).Named("decode")
	if l.opts.BadData.Skip {
		dec = pipeline.Interleave(dec, l.quarantineBad, 1, 1, 1).Named("skip-bad")
	}
	b := pipeline.Batch(dec, l.opts.Batch).Remainder(l.remainder()).Named("batch")
	if l.opts.Transform != None {
		b = b.Arena(l.RowBytes(res), l.filler())
	}
	if rows >= 0 {
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

func (l *Loader) initFolder(src *source.ImageFolder) error {
	items := src.Items()
	if len(items) == 0 {
		return fmt.Errorf("%s: no images", src.Root())
	}
	root := src.Root()
	return l.initIndexedSource("imagefolder", len(items), src.Classes(), func(i int) (Sample, error) {
		it := items[i]
		p := filepath.Join(root, filepath.FromSlash(it.Key))
		data, err := source.ReadFile(p, 0)
		if err != nil {
			return Sample{Key: it.Key, path: p, off: -1}, err
		}
		return Sample{Key: it.Key, Label: it.Label, Data: data, ID: uint64(i), path: p, off: -1}, nil
	})
}

// initLMDB reads a Caffe LMDB by key, in a global permutation per epoch.
func (l *Loader) initLMDB(path string) error {
	db, err := source.OpenLMDB(path)
	if err != nil {
		return err
	}
	l.closer = db.Close
	if len(db.Items()) == 0 {
		return fmt.Errorf("%s: empty LMDB", path)
	}
	return l.initIndexedSource("lmdb", len(db.Items()), db.Classes(), func(i int) (Sample, error) {
		s, err := db.Load(i)
		if err != nil {
			return Sample{Key: s.Key, path: path, off: -1}, err
		}
		return Sample{Key: s.Key, Label: s.Label, Data: s.Data, ID: uint64(i), path: path, off: -1}, nil
	})
}

// initWDS reads WebDataset tar shards sample by sample (ReadAt), in a
// global permutation per epoch. Regions of the tars that could not be
// listed stop the loader, or are quarantined under the skip policy.
func (l *Loader) initWDS(files []string) error {
	w, err := source.OpenWDS(files)
	if err != nil {
		return err
	}
	l.closer = w.Close
	if err := checkWDSManifest(files, w); err != nil {
		if !l.opts.BadData.Skip || !isBadData(err) {
			return err
		}
		if err := l.q.add(*badOf(err, files[0], 0, ""), 0, l.opts.BadData, max(len(w.Items()), 1)); err != nil {
			return err
		}
	}
	for _, d := range w.Damage() {
		err := &source.CorruptError{Path: d.Path, Offset: d.Offset, Reason: d.Reason}
		if !l.opts.BadData.Skip {
			return err
		}
		if err := l.q.add(BadSample{Path: d.Path, Offset: d.Offset, Reason: d.Reason}, 0, l.opts.BadData, max(len(w.Items()), 1)); err != nil {
			return err
		}
	}
	if len(w.Items()) == 0 {
		return fmt.Errorf("%s: no webdataset samples", files[0])
	}
	return l.initIndexedSource("wds", len(w.Items()), w.Classes(), func(i int) (Sample, error) {
		path, off := w.Where(i)
		s, err := w.Load(i)
		if err != nil {
			return Sample{Key: s.Key, path: path, off: off}, err
		}
		return Sample{Key: s.Key, Label: s.Label, Data: s.Data, ID: uint64(i), path: path, off: off}, nil
	})
}

// checkWDSManifest checks the tars a manifest beside them lists: finished,
// with the manifest's size and sample count.
func checkWDSManifest(files []string, w *source.WDS) error {
	m, err := shard.LoadManifest(filepath.Dir(files[0]))
	if err != nil {
		return err
	}
	infos := map[string]*shard.ShardInfo{}
	for _, sp := range m.Splits {
		for i := range sp.Shards {
			infos[sp.Shards[i].Name] = &sp.Shards[i]
		}
	}
	damaged := map[string]bool{} // its losses are reported as damage
	for _, d := range w.Damage() {
		damaged[d.Path] = true
	}
	samples := map[string]int64{}
	for i := range w.Items() {
		p, _ := w.Where(i)
		samples[p]++
	}
	for _, f := range files {
		info := infos[filepath.Base(f)]
		if info == nil {
			continue
		}
		st, err := os.Stat(f)
		switch {
		case err != nil:
			return err
		case !info.Complete:
			return fmt.Errorf("%s: the manifest marks this shard unfinished: this pack did not finish: rerun faster pack", f)
		case st.Size() != info.Bytes:
			return &source.CorruptError{Path: f, Offset: min(st.Size(), info.Bytes), Reason: fmt.Sprintf("%d bytes, the manifest records %d: the shard was cut short or rewritten after packing (rerun faster pack)", st.Size(), info.Bytes)}
		case samples[f] != info.Records && !damaged[f]:
			return &source.CorruptError{Path: f, Offset: -1, Reason: fmt.Sprintf("%d samples, the manifest records %d (a stale index or a rewritten shard)", samples[f], info.Records)}
		}
	}
	return nil
}

// initIndexedSource builds the pipeline of a random-access source of n
// samples: each epoch's order is a global permutation (or index order),
// rank r serves positions r, r+N, … of it (see State for resuming), each
// sample loaded by load(global index) in a parallel, ordered read stage.
func (l *Loader) initIndexedSource(kind string, n int, labels []string, load func(i int) (Sample, error)) error {
	o := l.opts
	l.kind, l.n, l.labels, l.indexed = kind, n, labels, true
	l.local = strideLen(n, o.NumShards, o.ShardIdx)
	l.per = l.rankCounts(n)
	l.open = func(res int, resumed bool) (pipeline.Dataset[*Batch], statser) {
		rows := l.epochRows(l.per)
		if resumed {
			rows = l.epochRows(l.rankCounts(len(l.resume)))
		}
		list := pipeline.FromFunc(positions).Named("list").Role(pipeline.RoleNone)
		readStage := pipeline.ParallelMap[int, Sample](list, pipeline.Auto, func(ctx context.Context, pos int) (Sample, error) {
			s, err := load(planOf(ctx).At(pos))
			s.pos = pos
			if err != nil {
				if o.BadData.Skip && isBadData(err) {
					s.bad = badOf(err, s.path, s.off, s.Key)
					return s, nil
				}
				return s, err
			}
			return s, nil
		}).Role(pipeline.RoleIO).Named("read").Bytes(func(s Sample) int { return len(s.Data) })
		if _, remote := l.fs.(storeFiles); remote {
			// Remote reads wait on the network, not the CPU: let autotune
			// keep many requests in flight.
			readStage = readStage.Budget(remoteReadBudget)
		}
		read := readStage
		return l.finish(read, res, rows)
	}
	return nil
}

func (l *Loader) initShards(files []string) error {
	o := l.opts
	l.kind = "shards"
	m, err := l.fs.manifest(context.Background(), files[0])
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err // an unreadable manifest is an error, never "no manifest"
	}
	infos := map[string]*shard.ShardInfo{}
	if m != nil {
		if sp := m.Splits[o.Split]; sp != nil {
			l.labels = sp.Classes
		}
		for _, sp := range m.Splits {
			for i := range sp.Shards {
				infos[sp.Shards[i].Name] = &sp.Shards[i]
			}
		}
	}
	counts := make([]int, len(files))
	indexes := make([][]tfrecord.IndexEntry, len(files))
	sizes := make([]int64, len(files))
	known := true
	for i, f := range files {
		info := infos[path.Base(filepath.ToSlash(f))]
		n, idx, size, err := l.shardIndex(f, info)
		if err != nil {
			if !o.BadData.Skip || !isBadData(err) {
				return err
			}
			// The skip policy: list the shard's damage and read it
			// without trusting its counts: its records are CRC-checked
			// as they are read, and the bad ones listed too.
			hint := 1
			if info != nil {
				hint = max(int(info.Records), 1)
			}
			if qerr := l.q.add(*badOf(err, l.fs.display(f), 0, ""), 0, o.BadData, hint); qerr != nil {
				return qerr
			}
			// Steps are planned from the manifest's count, the same on
			// every rank; what the damage costs is made up by repeats.
			n, idx = -1, nil
			if info != nil {
				n = int(info.Records)
			}
			if o.GlobalShuffle {
				if idx, err = l.plainIndex(f); err != nil {
					return err
				}
			}
		}
		if n < 0 {
			known = false
		}
		counts[i], indexes[i], sizes[i] = n, idx, size
	}
	if !known && o.NumShards > 1 {
		return fmt.Errorf("%s: the shards' record counts are unknown (no .idx index beside each shard and no manifest): every rank must know every shard's count to take the same number of steps; write the indexes (faster pack writes them)", files[0])
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
	if o.GlobalShuffle {
		return l.initIndexed(files, indexes, sizes)
	}
	id := map[string]uint64{}
	for i, f := range files {
		id[f] = uint64(i) << 32
	}
	l.open = func(res int, _ bool) (pipeline.Dataset[*Batch], statser) {
		list := pipeline.Files(files...).Named("files").Shard(o.NumShards, o.ShardIdx)
		if l.shuffles() {
			list = list.Shuffle(o.Seed)
		}
		cycle := min(len(files), 4)
		var read pipeline.Dataset[Sample] = pipeline.Interleave(list, func(f string) pipeline.Dataset[Sample] {
			return recordFile{fs: l.fs, name: f, id: id[f], skip: o.BadData.Skip}
		}, cycle, 16, pipeline.Auto).Named("read").Bytes(func(s Sample) int { return len(s.Data) })
		if l.shuffles() {
			read = pipeline.Shuffle(read, o.ShuffleBuffer, o.Seed).Named("shuffle")
		}
		return l.finish(read, res, rows)
	}
	return nil
}

// shardIndex reads a shard's .idx, checked against the shard's size, and
// checks both against the manifest's record of the shard (info, nil if the
// manifest does not list it). It returns the record count and the index,
// or -1 and nil when there is neither an index nor a manifest entry.
func (l *Loader) shardIndex(name string, info *shard.ShardInfo) (n int, _ []tfrecord.IndexEntry, size int64, _ error) {
	ctx := context.Background()
	display := l.fs.display(name)
	ra, err := l.fs.openAt(ctx, name)
	if err != nil {
		return 0, nil, 0, err
	}
	size, err = readerSize(ra)
	if c, ok := ra.(io.Closer); ok {
		c.Close()
	}
	if err != nil {
		return 0, nil, 0, fmt.Errorf("%s: %w", display, err)
	}
	n, entries, err := l.checkIndex(name, display, size, info)
	return n, entries, size, err
}

// checkIndex is shardIndex once the shard's size is known.
func (l *Loader) checkIndex(name, display string, size int64, info *shard.ShardInfo) (int, []tfrecord.IndexEntry, error) {
	ctx := context.Background()
	if info != nil {
		if !info.Complete {
			return 0, nil, fmt.Errorf("%s: the manifest marks this shard unfinished: this pack did not finish: rerun faster pack", display)
		}
		if size != info.Bytes {
			return 0, nil, &tfrecord.CorruptError{Path: display, Offset: min(size, info.Bytes), Reason: fmt.Sprintf("%d bytes, the manifest records %d: the shard was cut short or rewritten after packing (rerun faster pack)", size, info.Bytes)}
		}
	}
	ip := indexName(name)
	h, err := l.fs.open(ctx, ip)
	if errors.Is(err, fs.ErrNotExist) {
		if info != nil {
			return int(info.Records), nil, nil
		}
		return -1, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	defer h.Close()
	entries, err := tfrecord.ReadIndexFor(h, l.fs.display(ip), display, size)
	if err != nil {
		return 0, nil, err
	}
	if entries == nil {
		entries = []tfrecord.IndexEntry{} // an index of an empty shard
	}
	if info != nil && int64(len(entries)) != info.Records {
		return 0, nil, &tfrecord.CorruptError{Path: l.fs.display(ip), Offset: 0, Reason: fmt.Sprintf("stale index: %d records, the manifest records %d for %s", len(entries), info.Records, display), Err: tfrecord.ErrStaleIndex}
	}
	return len(entries), entries, nil
}

// plainIndex reads a shard's .idx without checking it against the shard
// (the skip policy, once the check failed): entries past the shard's end
// are bad samples when read.
func (l *Loader) plainIndex(name string) ([]tfrecord.IndexEntry, error) {
	ip := indexName(name)
	h, err := l.fs.open(context.Background(), ip)
	if err != nil {
		return nil, fmt.Errorf("global shuffle needs an .idx index beside every shard: %w", err)
	}
	defer h.Close()
	entries, err := tfrecord.ReadIndex(h, l.fs.display(ip))
	if err != nil {
		return nil, err
	}
	if entries == nil {
		entries = []tfrecord.IndexEntry{}
	}
	return entries, nil
}

// readerSize is the size of a file opened for random access.
func readerSize(ra io.ReaderAt) (int64, error) {
	switch f := ra.(type) {
	case interface{ Size() int64 }:
		return f.Size(), nil
	case interface{ Stat() (os.FileInfo, error) }:
		st, err := f.Stat()
		if err != nil {
			return 0, err
		}
		if !st.Mode().IsRegular() {
			return 0, fmt.Errorf("not a regular file (%s)", st.Mode().Type())
		}
		return st.Size(), nil
	}
	return 0, errors.New("size unknown")
}

// maxRecordSize is the largest TFRecord record read as one sample: the
// cap on one sample's file plus room for its features.
const maxRecordSize = source.MaxFileSize + 1<<20

// remoteReadBudget caps the concurrent random reads of records from a
// storage URL (GlobalShuffle over s3://, gs://, http(s)://).
const remoteReadBudget = 32

func indexName(shardName string) string { return strings.TrimSuffix(shardName, ".tfrecord") + ".idx" }

// recordFile is the dataset of one shard's samples, read in order.
type recordFile struct {
	fs   shardFS
	name string
	id   uint64
	skip bool // bad-data policy: resynchronise after corruption
}

func (r recordFile) Iter(ctx context.Context) iter.Seq2[Sample, error] {
	return func(yield func(Sample, error) bool) {
		f, err := r.fs.open(ctx, r.name)
		if err != nil {
			yield(Sample{}, err)
			return
		}
		defer f.Close()
		path := r.fs.display(r.name)
		rd := tfrecord.NewReader(f, tfrecord.WithName(path), tfrecord.WithMaxRecordSize(maxRecordSize))
		for i := uint64(0); ; i++ {
			if err := ctx.Err(); err != nil {
				yield(Sample{}, err)
				return
			}
			off := rd.Offset()
			rec, err := rd.ReadRecord(nil) // the sample keeps it: no reuse
			if err == io.EOF {
				return
			}
			if err != nil {
				if !r.skip || !isBadData(err) {
					yield(Sample{}, err)
					return
				}
				if !yield(Sample{pos: -1, bad: badOf(err, path, off, "")}, nil) {
					return
				}
				at, ok := f.(io.ReaderAt) // a local file: resync on it
				if !ok {
					if at, err = r.fs.openAt(ctx, r.name); err != nil {
						yield(Sample{}, err)
						return
					}
				}
				if _, _, err := rd.Resync(at); err == io.EOF {
					return
				} else if err != nil {
					yield(Sample{}, err)
					return
				}
				continue
			}
			s, err := exampleSample(rec, path, off, r.id|i)
			s.pos, s.path, s.off = -1, path, off
			if err != nil && r.skip && isBadData(err) {
				s.bad, err = badOf(err, path, off, s.Key), nil
			}
			if !yield(s, err) || err != nil {
				return
			}
		}
	}
}

// fileSet keeps shard files open for concurrent random reads (ReadAt).
type fileSet struct {
	fs    shardFS
	names []string
	mu    sync.Mutex
	open  []io.ReaderAt
}

func (fs *fileSet) get(i int) (io.ReaderAt, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.open[i] == nil {
		f, err := fs.fs.openAt(context.Background(), fs.names[i])
		if err != nil {
			return nil, err
		}
		fs.open[i] = f
	}
	return fs.open[i], nil
}

func (fs *fileSet) close() error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var first error
	for i, f := range fs.open {
		if c, ok := f.(io.Closer); ok {
			if err := c.Close(); err != nil && first == nil {
				first = err
			}
		}
		fs.open[i] = nil
	}
	return first
}

// recordTable finds a record of all shards by its global index: the
// shards' parsed indexes as they are (16 bytes a record, the index's own
// offset and size) and the first global index of each shard (a word a
// shard), searched in O(log shards). No table of references per record.
type recordTable struct {
	indexes [][]tfrecord.IndexEntry
	first   []int // first[f] = global index of shard f's record 0; first[len] = total
}

func newRecordTable(indexes [][]tfrecord.IndexEntry) recordTable {
	t := recordTable{indexes: indexes, first: make([]int, len(indexes)+1)}
	for f, idx := range indexes {
		t.first[f+1] = t.first[f] + len(idx)
	}
	return t
}

func (t recordTable) len() int { return t.first[len(t.indexes)] }

// at returns the shard, the record within it and its index entry.
func (t recordTable) at(i int) (file, rec int, e tfrecord.IndexEntry) {
	file = sort.Search(len(t.indexes), func(f int) bool { return t.first[f+1] > i })
	rec = i - t.first[file]
	return file, rec, t.indexes[file][rec]
}

// initIndexed reads shards through their indexes: one global permutation of
// all records per epoch (shuffled by index), sharded across ranks by
// stride, each record fetched with one ReadAt.
func (l *Loader) initIndexed(files []string, indexes [][]tfrecord.IndexEntry, sizes []int64) error {
	for fi, f := range files {
		if indexes[fi] == nil {
			return fmt.Errorf("%s: global shuffle needs an .idx index beside every shard", f)
		}
	}
	table := newRecordTable(indexes)
	l.files = &fileSet{fs: l.fs, names: files, open: make([]io.ReaderAt, len(files))}
	return l.initIndexedSource("shards", table.len(), l.labels, func(i int) (Sample, error) {
		var r struct {
			file, rec int
			e         tfrecord.IndexEntry
		}
		r.file, r.rec, r.e = table.at(i)
		name := l.fs.display(files[r.file])
		f, err := l.files.get(r.file)
		if err != nil {
			return Sample{}, err
		}
		if r.e.Size > maxRecordSize {
			return Sample{path: name, off: r.e.Offset}, &tfrecord.CorruptError{Path: name, Offset: r.e.Offset, Reason: fmt.Sprintf("record of %d bytes, above the %d-byte cap on one sample", r.e.Size, maxRecordSize)}
		}
		if size := sizes[r.file]; r.e.Offset > size-r.e.Size { // a stale index under the skip policy
			return Sample{path: name, off: r.e.Offset}, &tfrecord.CorruptError{Path: name, Offset: r.e.Offset, Reason: fmt.Sprintf("truncated record: %d of %d bytes present", max(size-r.e.Offset, 0), r.e.Size), Err: io.ErrUnexpectedEOF}
		}
		buf := make([]byte, r.e.Size)
		if n, err := f.ReadAt(buf, r.e.Offset); err != nil {
			if err == io.EOF {
				err = &tfrecord.CorruptError{Path: name, Offset: r.e.Offset, Reason: fmt.Sprintf("truncated record: %d of %d bytes present", n, r.e.Size), Err: io.ErrUnexpectedEOF}
				return Sample{path: name, off: r.e.Offset}, err
			}
			return Sample{}, fmt.Errorf("%s: offset %d: %w", name, r.e.Offset, err)
		}
		data, _, err := tfrecord.Unframe(buf, name, r.e.Offset)
		if err != nil {
			return Sample{path: name, off: r.e.Offset}, err
		}
		s, err := exampleSample(data, name, r.e.Offset, uint64(r.file)<<32|uint64(r.rec))
		s.path, s.off = name, r.e.Offset
		return s, err
	})
}

// exampleSample decodes a tf.train.Example record into a Sample. It reads
// the keys of our packer, which are those of TensorFlow's ImageNet scripts
// (build_imagenet_data.py): image/encoded, image/class/label,
// image/filename, and image/class/synset when present. A record without
// an image or a label is damaged (a *tfrecord.CorruptError at off): a
// sample must not become class 0 for lack of its label.
func exampleSample(rec []byte, path string, off int64, id uint64) (Sample, error) {
	s := Sample{ID: id}
	var hasData, hasLabel bool
	err := tfexample.Fields(rec, func(key, feat []byte) error {
		switch string(key) {
		case shard.KeyEncoded:
			s.Data, hasData = tfexample.FirstBytes(feat)
		case shard.KeyFilename:
			k, _ := tfexample.FirstBytes(feat)
			s.Key = string(k)
		case shard.KeyLabel:
			var l int64
			l, hasLabel = tfexample.FirstInt64(feat)
			s.Label = int(l)
			if int64(s.Label) != l {
				hasLabel = false
			}
		case keySynset:
			k, _ := tfexample.FirstBytes(feat)
			s.synset = string(k)
		}
		return nil
	})
	if err != nil {
		return Sample{}, fmt.Errorf("%s: offset %d: %w", path, off, err)
	}
	missing := ""
	switch {
	case !hasData:
		missing = "no " + shard.KeyEncoded + " bytes"
	case !hasLabel:
		missing = "no " + shard.KeyLabel + " int64"
	}
	if missing != "" {
		if s.Key != "" {
			missing += " (" + s.Key + ")"
		}
		return s, &tfrecord.CorruptError{Path: path, Offset: off, Reason: "record has " + missing}
	}
	return s, nil
}

// keySynset is the WordNet id of the class in TensorFlow's ImageNet
// shards ("n01440764").
const keySynset = "image/class/synset"
