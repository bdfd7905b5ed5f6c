package shard

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/faster-training/faster/internal/atomicfile"
	"github.com/faster-training/faster/source"
)

// PackOptions configure Pack. The zero value works: split "train", an
// automatic shard count, one worker per CPU, source order.
type PackOptions struct {
	Split   string // output name prefix and manifest key; default "train"
	Shards  int    // number of shards; 0 picks one per ~64 MiB, at least 8 (at most one per record)
	Workers int    // parallel loaders; 0 means runtime.GOMAXPROCS(0)
	Shuffle bool   // shuffle the records across shards with Seed
	Seed    uint64
	Strict  bool // stop at the first unreadable or non-image file instead of skipping it
	// Format is the shard format: "tfrecord" (the default) or "wds"
	// (WebDataset tar shards). A directory holds one format.
	Format string

	// Progress, if set, is called after each record is written, from any
	// goroutine, with the record's encoded size.
	Progress func(records int, bytes int64)

	// TaskCount > 0 packs only task TaskIndex's part of the split (one of
	// TaskCount independent tasks, see part.go): the shards a one-task
	// pack writes at those positions, then a part manifest, create-only.
	// MergeParts makes the split's manifest once every part is there.
	TaskIndex, TaskCount int
}

// AutoShardBytes is the shard size the automatic shard count aims at.
const AutoShardBytes = 64 << 20

// PackResult summarises a Pack run.
type PackResult struct {
	Split      string  `json:"split"`
	Records    int64   `json:"records"`
	Shards     int     `json:"shards"`
	KeptShards int     `json:"kept_shards"` // complete shards reused from an earlier run
	Bytes      int64   `json:"bytes"`
	Skipped    int     `json:"skipped"`
	SkipList   []Skip  `json:"skipped_files"`
	Seconds    float64 `json:"seconds"`
	// SplitShards is the split's shard count, for a task pack (whose
	// Shards are its own: none when there are more tasks than shards).
	SplitShards int `json:"split_shards,omitempty"`
	// Merged says a task pack found its split merged already in
	// manifest.json, from the same source and layout, its shards intact:
	// it wrote nothing.
	Merged bool `json:"merged,omitempty"`
}

// Pack writes the items of src into TFRecord shards under dst, with their
// indexes, and records them in dst/manifest.json (see the package doc).
// srcPath is recorded in the manifest.
func Pack(ctx context.Context, src source.Source, srcPath, dst string, opts PackOptions) (*PackResult, error) {
	start := time.Now()
	if opts.Split == "" {
		opts.Split = "train"
	}
	if err := CheckSplitName(opts.Split); err != nil {
		return nil, err
	}
	if opts.TaskCount < 0 || opts.TaskCount > MaxTasks {
		return nil, fmt.Errorf("task count %d: want 1 to at most %d tasks", opts.TaskCount, MaxTasks)
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.Format == "" {
		opts.Format = FormatTFRecord
	}
	if opts.Format != FormatTFRecord && opts.Format != FormatWDS {
		return nil, fmt.Errorf("format %q: want %s or %s", opts.Format, FormatTFRecord, FormatWDS)
	}
	items := src.Items()
	if len(items) == 0 {
		return nil, fmt.Errorf("%s: no images to pack", srcPath)
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	if opts.Shuffle {
		rng := rand.New(rand.NewPCG(opts.Seed, 0x9e3779b97f4a7c15))
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	n := opts.Shards
	if n <= 0 {
		n = autoShards(items)
	}
	n = min(n, len(items))
	first, last := 0, n // the shards this run writes
	var pt *partTask
	if opts.TaskCount > 0 {
		if opts.TaskIndex < 0 || opts.TaskIndex >= opts.TaskCount {
			return nil, fmt.Errorf("task %d of %d: want 0 <= task < count", opts.TaskIndex, opts.TaskCount)
		}
		first, last = TaskShards(opts.TaskIndex, opts.TaskCount, n)
		pt = &partTask{dst: dst, split: opts.Split, index: opts.TaskIndex, count: opts.TaskCount}
	}

	if err := refuseInside(srcPath, dst); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, err
	}
	fp := fingerprint(src, items, order, n, opts.Format)
	// A one-machine pack holds the destination's lock, a task pack holds
	// it shared and its own task's lock: tasks run at once, but never
	// beside a one-machine pack or a merge, which remove or write what
	// every task shares (before: each removed the other's temporary
	// files).
	var unlock func()
	var err error
	if pt != nil {
		unlock, err = lockDirShared(dst)
	} else {
		unlock, err = lockDir(dst)
	}
	if err != nil {
		return nil, err
	}
	defer unlock()
	if pt != nil {
		if res := pt.merged(fp, n, first, last, start); res != nil {
			return res, nil
		}
		unlockTask, err := pt.lock()
		if err != nil {
			return nil, err
		}
		defer unlockTask()
	}
	var m *Manifest
	if pt != nil {
		pt.removeTemps(opts.Format, n, first, last)
		m, err = pt.loadProgress()
	} else {
		removeTemps(dst)
		m, err = LoadManifest(dst)
	}
	if err != nil {
		return nil, err
	}
	save := func() error {
		if pt != nil {
			return pt.saveProgress(m)
		}
		return m.Save(dst)
	}
	if m.Format == "" || len(m.Splits) == 0 {
		m.Format = opts.Format
	}
	if m.Format != opts.Format {
		return nil, fmt.Errorf("%s: holds %s shards; pack %s shards into another directory", dst, m.Format, opts.Format)
	}
	if pt != nil {
		if res, err := pt.done(fp, start); res != nil || err != nil {
			return res, err
		}
	}
	old := m.Splits[opts.Split]
	sp := &Split{
		SourceKind: src.Kind(), Source: srcPath, Classes: src.Classes(),
		NumShards: n, Shuffle: opts.Shuffle, Seed: opts.Seed, Fingerprint: fp,
		Shards: make([]ShardInfo, n),
	}
	if !opts.Shuffle {
		sp.Seed = 0
	}
	res := &PackResult{Split: opts.Split, Shards: n}
	var todo []int
	byKey := map[string]int{}
	for i, it := range items {
		byKey[it.Key] = i
	}
	for k := range n {
		name := FormatName(opts.Format, opts.Split, k, n)
		sp.Shards[k] = ShardInfo{Name: name, Index: IndexName(name)}
		if k < first || k >= last {
			continue // another task's
		}
		lo, hi := k*len(order)/n, (k+1)*len(order)/n
		if old != nil && old.Fingerprint == fp && k < len(old.Shards) && shardIntact(dst, old.Shards[k]) &&
			!skippedNowReadable(src, byKey, old.Shards[k].Skipped) && sourceStamp(src, order[lo:hi]) == old.Shards[k].SourceStamp {
			sp.Shards[k] = old.Shards[k]
			res.KeptShards++
			if opts.Progress != nil {
				opts.Progress(int(old.Shards[k].Records), old.Shards[k].Bytes)
			}
			continue
		}
		todo = append(todo, k)
	}
	m.Splits[opts.Split] = sp
	if err := save(); err != nil {
		return nil, err
	}

	// Shards run concurrently, each with an ordered pool of loaders, so
	// that few shards still use every worker.
	concurrent := min(opts.Workers, max(len(todo), 1))
	perShard := max(1, (opts.Workers+concurrent-1)/concurrent)
	var mu sync.Mutex // guards sp and the manifest file
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrent)
	for _, k := range todo {
		lo, hi := k*len(order)/n, (k+1)*len(order)/n
		g.Go(func() error {
			info, err := writeShard(gctx, src, dst, sp.Shards[k], order[lo:hi], perShard, opts)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			sp.Shards[k] = info
			return save()
		})
	}
	if err := g.Wait(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	for _, s := range sp.Shards[first:last] {
		sp.Records += s.Records
		sp.Bytes += s.Bytes
		res.SkipList = append(res.SkipList, s.Skipped...)
	}
	sp.Complete = true
	if pt != nil {
		if err := pt.commit(m.Format, sp, first, last); err != nil {
			return nil, err
		}
		res.Shards, res.SplitShards = last-first, n
	} else if err := m.Save(dst); err != nil {
		return nil, err
	}
	res.Records, res.Bytes = sp.Records, sp.Bytes
	if res.SkipList == nil {
		res.SkipList = []Skip{}
	}
	res.Skipped = len(res.SkipList)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

func autoShards(items []source.Item) int {
	var total int64
	for _, it := range items {
		total += max(it.Size, 512) // IDX items have no size before encoding
	}
	return max(8, int((total+AutoShardBytes-1)/AutoShardBytes))
}

// fingerprint identifies what a split's shards hold: the source kind, the
// items in shard order and the shard count. A rerun keeps old shards only
// when it matches.
func fingerprint(src source.Source, items []source.Item, order []int, n int, format string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%s\x00", src.Kind(), n, strings.Join(src.Classes(), "\x00"))
	if format != FormatTFRecord {
		fmt.Fprintf(h, "format=%s\x00", format)
	}
	var b [8]byte
	for _, i := range order {
		io.WriteString(h, items[i].Key)
		binary.LittleEndian.PutUint64(b[:], uint64(items[i].Label))
		h.Write(b[:])
		binary.LittleEndian.PutUint64(b[:], uint64(items[i].Size))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// shardIntact reports whether a shard the manifest lists as complete is
// still there with its recorded size, and its index too. (Contents are
// checked by Verify, not on every rerun.)
func shardIntact(dir string, s ShardInfo) bool {
	if !s.Complete {
		return false
	}
	st, err := os.Stat(filepath.Join(dir, s.Name))
	if err != nil || st.Size() != s.Bytes {
		return false
	}
	_, err = os.Stat(filepath.Join(dir, s.Index))
	return err == nil
}

// sourceStamp digests the stamps of the items idxs of src (see
// source.Stamper), "" when src has none. A shard is kept on a rerun only
// when its digest is the one it was packed with: an input edited in place
// since, even keeping its size and modification time, changes its stamp
// (before: such a shard was kept, holding the old bytes). One stat a file,
// no read: a content check would cost as much as packing again.
func sourceStamp(src source.Source, idxs []int) string {
	st, ok := src.(source.Stamper)
	if !ok {
		return ""
	}
	h := sha256.New()
	for _, i := range idxs {
		s, err := st.Stamp(i)
		if err != nil {
			s = "!" + err.Error()
		}
		io.WriteString(h, s+"\n")
	}
	return hex.EncodeToString(h.Sum(nil))
}

// skippedNowReadable reports whether any input a shard skipped loads now
// (a file that was unreadable for a transient reason: permissions, an I/O
// error, a file still being written): then the shard is packed again.
func skippedNowReadable(src source.Source, byKey map[string]int, skipped []Skip) bool {
	for _, s := range skipped {
		if i, ok := byKey[s.Path]; ok {
			if _, err := loadDecodable(src, i); err == nil {
				return true
			}
		}
	}
	return false
}

// refuseInside refuses a destination inside the source folder: on the
// next run it would be listed as part of the dataset (an ImageFolder
// class of its own, shifting every label after it).
func refuseInside(srcPath, dst string) error {
	st, err := os.Stat(srcPath)
	if err != nil || !st.IsDir() {
		return nil
	}
	absSrc, err1 := realPath(srcPath)
	absDst, err2 := realPath(dst)
	if err1 != nil || err2 != nil {
		return nil
	}
	if rel, err := filepath.Rel(absSrc, absDst); err == nil && filepath.IsLocal(rel) || absSrc == absDst {
		return fmt.Errorf("destination %s is inside the source %s: a rerun would read the shards as part of the dataset; pack into a folder outside it", dst, srcPath)
	}
	return nil
}

// realPath is the absolute path of p with symlinks resolved, for the part
// of p that exists.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for cur := abs; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest), nil
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// removeTemps deletes temporary files left by an interrupted run.
func removeTemps(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if atomicfile.IsTemp(e.Name()) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

type loaded struct {
	s   source.Sample
	err error
}

// writeShard loads the items idxs with par loaders, in order, and writes
// them as one shard (in opts.Format) and its index.
func writeShard(ctx context.Context, src source.Source, dir string, info ShardInfo, idxs []int, par int, opts PackOptions) (ShardInfo, error) {
	f, err := atomicfile.Create(filepath.Join(dir, info.Name), 0o644)
	if err != nil {
		return info, err
	}
	defer f.Abort()
	h := sha256.New()
	w := newSink(opts.Format, io.MultiWriter(f, h), src.Classes())
	info.Skipped = nil
	// The inputs' stamps before any is read: one edited from here on
	// no longer matches, and the next run packs this shard again.
	info.SourceStamp = sourceStamp(src, idxs)
	err = loadOrdered(ctx, src, idxs, par, func(s source.Sample, err error) error {
		if err != nil {
			if opts.Strict {
				return fmt.Errorf("--strict: %w", err)
			}
			info.Skipped = append(info.Skipped, Skip{Path: s.Key, Reason: err.Error()})
			return nil
		}
		n, err := w.write(s)
		if err != nil {
			return err
		}
		if opts.Progress != nil {
			opts.Progress(1, n)
		}
		return nil
	})
	if err != nil {
		return info, err
	}
	if err := w.close(); err != nil {
		return info, err
	}
	idx, err := atomicfile.Create(filepath.Join(dir, info.Index), 0o644)
	if err != nil {
		return info, err
	}
	defer idx.Abort()
	if err := w.writeIndex(idx); err != nil {
		return info, err
	}
	// Index first, then the shard: a shard under its final name always has
	// its index beside it.
	if err := idx.Commit(); err != nil {
		return info, err
	}
	if err := f.Commit(); err != nil {
		return info, err
	}
	info.Records = int64(w.records())
	info.Bytes = w.offset()
	info.SHA256 = hex.EncodeToString(h.Sum(nil))
	info.Complete = true
	return info, nil
}

// loadOrdered loads src items idxs with par goroutines and calls fn with
// each result in idxs order. The queues are bounded by par: a job channel
// feeds the loaders and a channel of per-item result channels keeps the
// order. Every goroutine exits before loadOrdered returns.
func loadOrdered(ctx context.Context, src source.Source, idxs []int, par int, fn func(source.Sample, error) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type job struct {
		i   int
		out chan loaded
	}
	jobs := make(chan job, par)
	results := make(chan chan loaded, par)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // runs before wg.Wait: stop the producer and loaders
	wg.Add(1 + par)
	go func() { // producer
		defer wg.Done()
		defer close(jobs)
		defer close(results)
		for _, i := range idxs {
			out := make(chan loaded, 1)
			select {
			case jobs <- job{i, out}:
			case <-ctx.Done():
				return
			}
			select {
			case results <- out:
			case <-ctx.Done():
				return
			}
		}
	}()
	items := src.Items()
	for range par {
		go func() {
			defer wg.Done()
			for j := range jobs {
				s, err := loadDecodable(src, j.i)
				if err != nil {
					s.Item = items[j.i]
				}
				j.out <- loaded{s, err}
			}
		}()
	}
	for out := range results {
		var r loaded
		select {
		case r = <-out:
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := fn(r.s, r.err); err != nil {
			return err
		}
	}
	return ctx.Err()
}
