package shard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/storage"
	"github.com/faster-training/faster/tfexample"
	"github.com/faster-training/faster/tfrecord"
)

// maxRecordSize is the largest TFRecord record read as one sample: the
// cap on one sample's file plus room for its features.
const maxRecordSize = source.MaxFileSize + 1<<20

// KeySynset is the WordNet id of the class in TensorFlow's ImageNet
// shards ("n01440764").
const KeySynset = "image/class/synset"

// shards is a set of TFRecord shards (local or under a storage URL) with
// what their indexes and the manifest say of them.
type shards struct {
	fs      shardFS
	files   []string
	counts  []int // -1 unknown
	classes []string
	skip    bool
	// count counts local shards that have neither an index nor a
	// manifest entry (nil for shards under a URL: their counts stay
	// unknown); countErr is the first damage it met.
	count    *counter
	countErr error
	// wantIndex: an index is needed (global shuffle); a shard that has
	// none is scanned into one by its length headers.
	wantIndex bool
	// sizes and mtimes are what each shard was when the dataset was
	// opened and checked (mtime zero where the store has none): every
	// epoch reopens a shard by name, and one replaced or cut since is
	// refused, not served as it now is (changed).
	sizes  []int64
	mtimes []time.Time
}

// changed reports a shard that is no longer what Open checked: another
// size or modification time (a copy cut at a record boundary, a shard
// replaced), before any of its records is read.
func (s *shards) changed(i int, f any) error {
	if s.sizes == nil || s.sizes[i] < 0 {
		return nil
	}
	var size int64
	var mtime time.Time
	switch f := f.(type) {
	case interface{ Stat() (os.FileInfo, error) }:
		st, err := f.Stat()
		if err != nil {
			return nil
		}
		size, mtime = st.Size(), st.ModTime()
	case interface{ Size() int64 }:
		size = f.Size()
	default:
		return nil
	}
	if size != s.sizes[i] || (!s.mtimes[i].IsZero() && !mtime.IsZero() && !mtime.Equal(s.mtimes[i])) {
		return &tfrecord.CorruptError{Path: s.fs.display(s.files[i]), Offset: min(size, s.sizes[i]), Reason: fmt.Sprintf(
			"changed since the dataset was opened (%d bytes, modified %s; now %d bytes, modified %s): a shard must not be rewritten while it is read; reopen the dataset",
			s.sizes[i], s.mtimes[i].Format(time.RFC3339Nano), size, mtime.Format(time.RFC3339Nano))}
	}
	return nil
}

// streaming reads TFRecord shards file by file (source.Streaming).
type streaming struct{ shards }

// indexed reads TFRecord shards record by record through their indexes
// (source.Indexed).
type indexed struct {
	shards
	table recordTable
	sizes []int64
	open  *fileSet
}

var (
	_ source.Streaming = (*streaming)(nil)
	_ source.Indexed   = (*indexed)(nil)
)

// openShards checks each shard against its index and the manifest and
// returns the shards as a streaming dataset, or an indexed one with
// GlobalShuffle. It closes fs on error.
func openShards(ctx context.Context, sfs shardFS, files []string, o OpenOptions) (_ source.Dataset, err error) {
	defer func() {
		if err != nil {
			sfs.close()
		}
	}()
	m, err := sfs.manifest(ctx, files[0])
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err // an unreadable manifest is an error, never "no manifest"
	}
	s := shards{fs: sfs, files: files, counts: make([]int, len(files)), skip: o.Skip != nil, wantIndex: o.GlobalShuffle}
	if _, local := sfs.(localFiles); local {
		s.count = newCounter()
		defer s.count.save()
	}
	infos := map[string]*ShardInfo{}
	if m != nil {
		if sp := m.Splits[o.Split]; sp != nil {
			s.classes = sp.Classes
		}
		for _, sp := range m.Splits {
			for i := range sp.Shards {
				infos[sp.Shards[i].Name] = &sp.Shards[i]
			}
		}
	}
	indexes := make([][]tfrecord.IndexEntry, len(files))
	sizes := make([]int64, len(files))
	damaged := make([]bool, len(files))
	known := true
	for i, f := range files {
		info := infos[path.Base(filepath.ToSlash(f))]
		n, idx, size, err := s.shardIndex(ctx, f, info)
		if err != nil {
			if o.Skip == nil || !source.IsDamage(err) {
				return nil, err
			}
			// The skip policy: list the shard's damage and read it
			// without trusting its counts: its records are CRC-checked
			// as they are read, and the bad ones listed too.
			hint := 1
			if info != nil {
				hint = max(int(info.Records), 1)
			}
			if qerr := o.Skip(source.DamageOf(err, sfs.display(f), 0, ""), hint); qerr != nil {
				return nil, qerr
			}
			// Steps are planned from the manifest's count, the same on
			// every rank; what the damage costs is made up by repeats.
			// Its size and count are not checked again (changed).
			n, idx = -1, nil
			damaged[i] = true
			if info != nil {
				n = int(info.Records)
			}
			if o.GlobalShuffle {
				if idx, err = s.plainIndex(ctx, f); err != nil {
					return nil, err
				}
			}
		}
		if n < 0 {
			known = false
		}
		s.counts[i], indexes[i], sizes[i] = n, idx, size
	}
	if total := 0; known {
		for _, n := range s.counts {
			total += n
		}
		if total == 0 {
			// Shards of no records serve an empty epoch: no dataset (as
			// an ImageFolder of no images, a tar of no samples).
			return nil, fmt.Errorf("%s: no records in %d shards (every one empty)", sfs.display(files[0]), len(files))
		}
	}
	if !known && o.Ranks > 1 {
		if s.countErr != nil {
			return nil, fmt.Errorf("the shards' record counts are unknown: every rank must know every shard's count to take the same number of steps; counting the records of a shard without an index failed: %w", s.countErr)
		}
		return nil, fmt.Errorf("%s: the shards' record counts are unknown (no .idx index beside each shard and no manifest): every rank must know every shard's count to take the same number of steps; write the indexes (faster pack writes them)", files[0])
	}
	if !o.GlobalShuffle {
		s.sizes, s.mtimes = slices.Clone(sizes), make([]time.Time, len(files))
		_, local := sfs.(localFiles)
		for i, f := range files {
			if damaged[i] {
				s.sizes[i] = -1
			} else if st, err := os.Stat(f); local && err == nil && st.Size() == sizes[i] {
				s.mtimes[i] = st.ModTime()
			}
		}
		return &streaming{s}, nil
	}
	for fi, f := range files {
		if indexes[fi] == nil {
			if s.countErr != nil {
				return nil, fmt.Errorf("%s: global shuffle needs an .idx index beside every shard, or a shard whose records can be indexed: %w", f, s.countErr)
			}
			return nil, fmt.Errorf("%s: global shuffle needs an .idx index beside every shard", f)
		}
	}
	return &indexed{shards: s, table: newRecordTable(indexes), sizes: sizes,
		open: &fileSet{fs: sfs, names: files, open: make([]io.ReaderAt, len(files))}}, nil
}

// Kind returns "shards".
func (s *shards) Kind() string { return "shards" }

// Classes returns the split's class names from the manifest, if any.
func (s *shards) Classes() []string { return s.classes }

// CacheStats returns the counters of the local cache of a dataset under
// a storage URL, or nil without one (OpenOptions.CacheDir).
func (s *shards) CacheStats() *storage.CacheStats {
	if cf, ok := s.fs.(*cachedFiles); ok {
		return cf.c.Stats()
	}
	return nil
}

// Remote reports whether the shards are read from a storage URL without
// a local cache.
func (s *shards) Remote() bool {
	_, ok := s.fs.(storeFiles)
	return ok
}

// Files returns the shard names as listed (object names under a URL).
func (s *streaming) Files() []string { return s.files }

// Counts returns each shard's record count, -1 where neither an index
// nor the manifest gives it.
func (s *streaming) Counts() []int { return s.counts }

// Close closes the store of a dataset under a URL.
func (s *streaming) Close() error { return s.fs.close() }

// Open returns a reader of shard i's records in order, with IDs
// i<<32|record.
func (s *streaming) Open(ctx context.Context, i int) (source.RecordReader, error) {
	name := s.files[i]
	f, err := s.fs.open(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := s.changed(i, f); err != nil {
		f.Close()
		return nil, err
	}
	path := s.fs.display(name)
	want := s.counts[i]
	if s.sizes == nil || s.sizes[i] < 0 {
		want = -1 // damaged at open, read under the skip policy: no count to hold it to
	}
	r := &recordReader{
		ctx: ctx, fs: s.fs, name: name, path: path, f: f, id: uint64(i) << 32, skip: s.skip, want: want,
		rd: tfrecord.NewReader(f, tfrecord.WithName(path), tfrecord.WithMaxRecordSize(maxRecordSize)),
	}
	if want >= 0 && s.count != nil {
		// A count kept in the counts file is a cached fact, checked as
		// the shard is read: a record past it, or the end before it,
		// drops the entry and names the file (countEntry).
		if r.keptIn = s.count.keptIn(name); r.keptIn != "" {
			r.size, r.drop = s.sizes[i], func() { s.count.drop(name) }
		}
	}
	return r, nil
}

// recordReader reads one shard's tf.train.Example records as samples.
type recordReader struct {
	ctx    context.Context
	fs     shardFS
	name   string
	path   string
	f      io.ReadCloser
	at     io.ReaderAt // opened to resynchronise a remote shard
	rd     *tfrecord.Reader
	id     uint64
	i      uint64 // records (good or damaged) returned so far
	skip   bool
	resync bool // the last record was damaged: resynchronise first
	damage bool // a damaged record was skipped: the count no longer tells
	want   int  // records the index or manifest gave when the dataset was opened, -1 unknown
	hint   int  // the last record's size: the next one's buffer
	err    error
	// keptIn is the counts file want was read from ("" when an index,
	// the manifest or a count at open gave it), size the shard's size,
	// drop removes the entry.
	keptIn string
	size   int64
	drop   func()
}

// wrongCount fails the reader on a count from the counts file that the
// shard disagrees with, dropping the entry.
func (r *recordReader) wrongCount(more string) (source.Record, error) {
	r.drop()
	r.err = wrongCount(r.keptIn, r.path, r.want, more)
	return source.Record{}, r.err
}

// Next returns the next record. Under the skip policy a damaged record is
// returned with Bad set (its Key when its Example parsed), and reading
// resumes at the next intact record; without it damage is the (sticky)
// error.
func (r *recordReader) Next() (source.Record, error) {
	if r.err != nil {
		return source.Record{}, r.err
	}
	if r.resync {
		r.resync = false
		at, ok := r.f.(io.ReaderAt) // a local file: resync on it
		if !ok {
			if r.at == nil {
				var err error
				if r.at, err = r.fs.openAt(r.ctx, r.name); err != nil {
					r.err = err
					return source.Record{}, err
				}
			}
			at = r.at
		}
		if _, _, err := r.rd.Resync(at); err != nil {
			r.err = err
			return source.Record{}, err
		}
	}
	off := r.rd.Offset()
	// The sample keeps the record's memory: a pooled buffer (Record.Buf)
	// its consumer may release, sized by the record before.
	buf := source.GetBuffer(r.hint)
	rec, err := r.rd.ReadRecord(buf.B[:0])
	buf.B = rec
	if err != nil {
		buf.Release()
		buf = nil
	} else {
		r.hint = len(rec)
	}
	if err == io.EOF {
		if r.keptIn != "" && !r.damage && r.i != uint64(r.want) {
			return r.wrongCount(fmt.Sprintf("the shard ends after %d", r.i))
		}
		if r.want >= 0 && !r.damage && r.i != uint64(r.want) {
			// The size matched (or the store has none) and yet the shard
			// holds another number of records than its index or the
			// manifest said at open: rewritten since.
			r.err = &tfrecord.CorruptError{Path: r.path, Offset: off, Reason: fmt.Sprintf(
				"%d records, the dataset was opened with %d: changed since (reopen the dataset)", r.i, r.want)}
			return source.Record{}, r.err
		}
		r.err = io.EOF
		return source.Record{}, err
	}
	id := r.id | r.i
	r.i++
	if err == nil && r.keptIn != "" && !r.damage && r.i >= uint64(r.want) && (r.i > uint64(r.want) || r.rd.Offset() < r.size) {
		// The last record the count allows, and the shard goes on: fail
		// now, before an epoch planned by the count ends on it.
		buf.Release()
		return r.wrongCount(fmt.Sprintf("it holds more: a record at offset %d past the count", r.rd.Offset()))
	}
	if err != nil {
		if !r.skip || !source.IsDamage(err) {
			r.err = err
			return source.Record{}, err
		}
		r.resync, r.damage = true, true
		return source.Record{Path: r.path, Offset: off, Bad: err}, nil
	}
	s, err := exampleRecord(rec, r.path, off, id)
	s.Path, s.Offset, s.Buf = r.path, off, buf
	if err != nil {
		if r.skip && source.IsDamage(err) {
			s.Bad = err
			return s, nil
		}
		r.err = err
		return s, err
	}
	return s, nil
}

// Close closes the shard.
func (r *recordReader) Close() error {
	if r.err == nil {
		r.err = errors.New("shard: reader closed")
	}
	err := r.f.Close()
	if c, ok := r.at.(io.Closer); ok {
		err = errors.Join(err, c.Close())
	}
	return err
}

// Len returns the number of records of all shards.
func (x *indexed) Len() int { return x.table.len() }

// Files names the shards, in order (their records are numbered in it).
func (x *indexed) Files() []string { return x.files }

// Close closes the shards kept open and the store of a dataset under a
// URL.
func (x *indexed) Close() error { return errors.Join(x.open.close(), x.fs.close()) }

// Record reads record i of all shards (in shard order) with one ReadAt,
// checked against the shard's size and its CRCs; its ID is
// shard<<32|record.
func (x *indexed) Record(i int) (source.Record, error) {
	file, rec, e := x.table.at(i)
	name := x.fs.display(x.files[file])
	where := source.Record{Path: name, Offset: e.Offset}
	f, err := x.open.get(file)
	if err != nil {
		return source.Record{}, err
	}
	if e.Size > maxRecordSize {
		return where, &tfrecord.CorruptError{Path: name, Offset: e.Offset, Reason: fmt.Sprintf("record of %d bytes, above the %d-byte cap on one sample", e.Size, maxRecordSize)}
	}
	if size := x.sizes[file]; e.Offset > size-e.Size { // a stale index under the skip policy
		return where, &tfrecord.CorruptError{Path: name, Offset: e.Offset, Reason: fmt.Sprintf("truncated record: %d of %d bytes present", max(size-e.Offset, 0), e.Size), Err: io.ErrUnexpectedEOF}
	}
	pooled := source.GetBuffer(int(e.Size))
	buf := pooled.B[:e.Size]
	if n, err := f.ReadAt(buf, e.Offset); err != nil {
		pooled.Release()
		if err == io.EOF {
			return where, &tfrecord.CorruptError{Path: name, Offset: e.Offset, Reason: fmt.Sprintf("truncated record: %d of %d bytes present", n, e.Size), Err: io.ErrUnexpectedEOF}
		}
		return source.Record{}, fmt.Errorf("%s: offset %d: %w", name, e.Offset, err)
	}
	data, _, err := tfrecord.Unframe(buf, name, e.Offset)
	if err != nil {
		pooled.Release()
		return where, err
	}
	s, err := exampleRecord(data, name, e.Offset, uint64(file)<<32|uint64(rec))
	s.Path, s.Offset, s.Buf = name, e.Offset, pooled
	return s, err
}

// shardIndex reads a shard's .idx, checked against the shard's size, and
// checks both against the manifest's record of the shard (info, nil if the
// manifest does not list it). It returns the record count and the index,
// or -1 and nil when there is neither an index nor a manifest entry.
func (s *shards) shardIndex(ctx context.Context, name string, info *ShardInfo) (n int, _ []tfrecord.IndexEntry, size int64, _ error) {
	display := s.fs.display(name)
	ra, err := s.fs.openAt(ctx, name)
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
	n, entries, err := s.checkIndex(ctx, name, display, size, info)
	return n, entries, size, err
}

// checkIndex is shardIndex once the shard's size is known.
func (s *shards) checkIndex(ctx context.Context, name, display string, size int64, info *ShardInfo) (int, []tfrecord.IndexEntry, error) {
	if info != nil {
		if !info.Complete {
			return 0, nil, fmt.Errorf("%s: the manifest marks this shard unfinished: this pack did not finish: rerun faster pack", display)
		}
		if size != info.Bytes {
			return 0, nil, &tfrecord.CorruptError{Path: display, Offset: min(size, info.Bytes), Reason: fmt.Sprintf("%d bytes, the manifest records %d: the shard was cut short or rewritten after packing (rerun faster pack)", size, info.Bytes)}
		}
	}
	h, ip, err := s.openIndex(ctx, name)
	if errors.Is(err, fs.ErrNotExist) {
		if info != nil {
			return int(info.Records), nil, nil
		}
		if s.count == nil {
			return -1, nil, nil
		}
		// Neither index nor manifest: count the records by their length
		// headers (kept in the counts file for the next open), or, for a
		// global shuffle, index them so. Damage leaves the count unknown;
		// the reader reports it where it is.
		var n int
		var entries []tfrecord.IndexEntry
		if s.wantIndex {
			entries, err = s.count.index(ctx, name)
			n = len(entries)
		} else {
			n, _, err = s.count.count(ctx, name) // s.count.keptIn tells whence
		}
		if source.IsDamage(err) {
			if s.countErr == nil {
				s.countErr = err
			}
			return -1, nil, nil
		}
		if err != nil {
			return 0, nil, err
		}
		return n, entries, nil
	}
	if err != nil {
		return 0, nil, err
	}
	defer h.Close()
	entries, err := tfrecord.ReadIndexFor(h, s.fs.display(ip), display, size)
	if err != nil {
		return 0, nil, err
	}
	if entries == nil {
		entries = []tfrecord.IndexEntry{} // an index of an empty shard
	}
	if info != nil && int64(len(entries)) != info.Records {
		return 0, nil, &tfrecord.CorruptError{Path: s.fs.display(ip), Offset: 0, Reason: fmt.Sprintf("stale index: %d records, the manifest records %d for %s", len(entries), info.Records, display), Err: tfrecord.ErrStaleIndex}
	}
	return len(entries), entries, nil
}

// plainIndex reads a shard's .idx without checking it against the shard
// (the skip policy, once the check failed): entries past the shard's end
// are bad samples when read.
func (s *shards) plainIndex(ctx context.Context, name string) ([]tfrecord.IndexEntry, error) {
	h, ip, err := s.openIndex(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("global shuffle needs an .idx index beside every shard: %w", err)
	}
	defer h.Close()
	entries, err := tfrecord.ReadIndex(h, s.fs.display(ip))
	if err != nil {
		return nil, err
	}
	if entries == nil {
		entries = []tfrecord.IndexEntry{}
	}
	return entries, nil
}

// tfrecordIndexNames are the names of the .idx index of a TFRecord
// shard, in the order they are looked for: X.idx beside X.tfrecord (what
// faster pack writes), then X.tfrecord.idx (a common naming with DALI's
// tfrecord2idx); a shard without an extension has one, X.idx.
func tfrecordIndexNames(shardName string) []string {
	stem := strings.TrimSuffix(shardName, ".tfrecord") + ".idx"
	if full := shardName + ".idx"; full != stem {
		return []string{stem, full}
	}
	return []string{stem}
}

// openIndex opens the first index of the shard that exists (see
// tfrecordIndexNames) and returns it with its name; an error for which
// errors.Is(err, fs.ErrNotExist) holds when there is none.
func (s *shards) openIndex(ctx context.Context, name string) (io.ReadCloser, string, error) {
	names := tfrecordIndexNames(name)
	for _, ip := range names {
		h, err := s.fs.open(ctx, ip)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		return h, ip, err
	}
	return nil, "", fmt.Errorf("%s: no index (%s): %w", s.fs.display(name), strings.Join(names, " or "), fs.ErrNotExist)
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

// exampleRecord decodes a tf.train.Example record into a Record. It reads
// the keys of our packer, which are those of TensorFlow's ImageNet scripts
// (build_imagenet_data.py): image/encoded, image/class/label,
// image/filename, and image/class/synset when present. A record without
// an image or a label is damaged (a *tfrecord.CorruptError at off): a
// sample must not become class 0 for lack of its label.
func exampleRecord(rec []byte, path string, off int64, id uint64) (source.Record, error) {
	s := source.Record{ID: id}
	var hasData, hasLabel bool
	err := tfexample.Fields(rec, func(key, feat []byte) error {
		switch string(key) {
		case KeyEncoded:
			s.Data, hasData = tfexample.FirstBytes(feat)
		case KeyFilename:
			k, _ := tfexample.FirstBytes(feat)
			s.Key = string(k)
		case KeyLabel:
			var l int64
			l, hasLabel = tfexample.FirstInt64(feat)
			s.Label = int(l)
			if int64(s.Label) != l {
				hasLabel = false
			}
		case KeySynset:
			k, _ := tfexample.FirstBytes(feat)
			s.Synset = string(k)
		}
		return nil
	})
	if err != nil {
		return source.Record{}, fmt.Errorf("%s: offset %d: %w", path, off, err)
	}
	missing := ""
	switch {
	case !hasData:
		missing = "no " + KeyEncoded + " bytes"
	case !hasLabel:
		missing = "no " + KeyLabel + " int64"
	}
	if missing != "" {
		if s.Key != "" {
			missing += " (" + s.Key + ")"
		}
		return s, &tfrecord.CorruptError{Path: path, Offset: off, Reason: "record has " + missing}
	}
	return s, nil
}
