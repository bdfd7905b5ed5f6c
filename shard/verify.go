package shard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/faster-training/faster/internal/lockfile"
	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/tfrecord"
)

// Problem is one thing Verify found wrong: the one record of damage
// (source.Damage), whose Offset is the byte offset in Path where it was
// found, or -1 when the problem is not at an offset (a missing file, a
// count that differs from the manifest).
type Problem = source.Damage

// VerifyReport summarises a Verify run.
type VerifyReport struct {
	Files    int       `json:"shards"`
	Records  int64     `json:"records"`
	Bytes    int64     `json:"bytes"`
	Problems []Problem `json:"problems"`
	Seconds  float64   `json:"seconds"`
}

// OK reports whether no problem was found.
func (r *VerifyReport) OK() bool { return len(r.Problems) == 0 }

// VerifyOptions configure Verify.
type VerifyOptions struct {
	Workers  int               // files checked in parallel; 0 means GOMAXPROCS
	Progress func(bytes int64) // called as bytes are checked, from any goroutine
}

// target is one shard to check, with what the manifest expects of it.
type target struct {
	path string
	want *ShardInfo // nil when no manifest describes it
}

// Verify checks shards: for TFRecord every record's CRCs, for WebDataset
// tar shards every header and member (and nothing but padding after the
// end), the index beside each shard against the records actually present,
// and, where a manifest describes the shard, its record count, size and
// sha256; for a Caffe LMDB, that every value decodes as a Datum holding an
// image. Each shard stops at its first corrupt record. Each path is a
// shard file, an LMDB, or a directory (with a manifest.json: every shard it
// lists; without: every *.tfrecord and *.tar file in it). Problems are collected, not
// returned as errors; the error is for failures to run at all.
func Verify(ctx context.Context, paths []string, opts VerifyOptions) (*VerifyReport, error) {
	start := time.Now()
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	rep := &VerifyReport{Problems: []Problem{}}
	var targets []target
	for _, p := range paths {
		ts, probs, err := expand(p)
		if err != nil {
			return nil, err
		}
		targets = append(targets, ts...)
		rep.Problems = append(rep.Problems, probs...)
	}
	var mu sync.Mutex
	found := map[string]int64{} // records of the shards no manifest describes, read whole
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Workers)
	for _, t := range targets {
		g.Go(func() error {
			records, bytes, probs := verifierOf(t.path)(gctx, t, opts.Progress) // the format's, by its bytes
			mu.Lock()
			defer mu.Unlock()
			rep.Files++
			rep.Records += records
			rep.Bytes += bytes
			rep.Problems = append(rep.Problems, probs...)
			if t.want == nil && len(probs) == 0 {
				found[t.path] = records
			}
			return gctx.Err()
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	rep.Problems = append(rep.Problems, countsProblems(found)...)
	slices.SortStableFunc(rep.Problems, func(a, b Problem) int {
		if a.Path != b.Path {
			if a.Path < b.Path {
				return -1
			}
			return 1
		}
		return int(a.Offset - b.Offset)
	})
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// expand turns a path into shards to check, with manifest problems found
// on the way (missing shards, incomplete splits).
func expand(p string) ([]target, []Problem, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, nil, err
	}
	if source.IsLMDB(p) {
		return []target{{path: p}}, nil, nil
	}
	if !st.IsDir() {
		t := target{path: p}
		// A manifest beside the shard describes it too.
		if m, err := LoadManifest(filepath.Dir(p)); err == nil {
			for _, sp := range m.Splits {
				for i := range sp.Shards {
					if sp.Shards[i].Name == filepath.Base(p) {
						t.want = &sp.Shards[i]
					}
				}
			}
		}
		return []target{t}, nil, nil
	}
	// A pack writing this destination now leaves it unfinished: say so,
	// rather than "interrupted". Verify only reads: it looks at the lock
	// without taking it.
	if held, err := lockfile.Held(filepath.Join(p, LockName)); err != nil {
		return nil, nil, err
	} else if held {
		return nil, []Problem{{Path: p, Offset: -1, Reason: fmt.Sprintf("a faster pack is writing this destination now (%s is locked): verify it once the pack has finished", LockName)}}, nil
	}
	// Splits packed as tasks and not merged: their shards are no dataset
	// yet.
	probs := unmergedProblems(p)
	mp := filepath.Join(p, ManifestName)
	if _, err := os.Stat(mp); errors.Is(err, fs.ErrNotExist) {
		files, err := DataFiles(p) // by their bytes: train-00000-of-01024 too
		if err != nil {
			return nil, nil, err
		}
		if len(files) == 0 && len(probs) == 0 {
			return nil, nil, fmt.Errorf("%s: no manifest.json, no TFRecord or tar files, not an LMDB", p)
		}
		var ts []target
		for _, f := range files {
			ts = append(ts, target{path: f})
		}
		// What the names promise: all N of -of-N, one format a split.
		return ts, append(probs, setProblems(p, files)...), nil
	}
	m, err := LoadManifest(p)
	if err != nil {
		return nil, append(probs, Problem{Path: mp, Offset: -1, Reason: err.Error()}), nil
	}
	var ts []target
	if len(m.Splits) == 0 {
		probs = append(probs, Problem{Path: mp, Offset: -1, Reason: "the manifest lists no splits"})
	}
	names := make([]string, 0, len(m.Splits))
	for name := range m.Splits {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		sp := m.Splits[name]
		if !sp.Complete {
			probs = append(probs, Problem{Path: mp, Offset: -1, Reason: fmt.Sprintf("split %q is incomplete (packing was interrupted; rerun faster pack)", name)})
		}
		var records int64
		for i := range sp.Shards {
			s := &sp.Shards[i]
			records += s.Records
			if !s.Complete {
				if sp.Complete {
					probs = append(probs, Problem{Path: mp, Offset: -1, Reason: fmt.Sprintf("split %q is complete but marks shard %s incomplete", name, s.Name)})
				}
				continue // else reported with the split
			}
			ts = append(ts, target{path: filepath.Join(p, s.Name), want: s})
		}
		if sp.Complete && records != sp.Records {
			probs = append(probs, Problem{Path: mp, Offset: -1, Reason: fmt.Sprintf("split %q: shards hold %d records, split total says %d", name, records, sp.Records)})
		}
	}
	return ts, probs, nil
}

// countsProblems checks the counts files (CountsName) kept beside shards
// without a manifest against the records found in them: an entry that
// holds for its shard (size, modification time, stamp) with another
// count is stale or forged, and named with the counts file.
func countsProblems(found map[string]int64) []Problem {
	c := newCounter()
	var probs []Problem
	for _, p := range slices.Sorted(maps.Keys(found)) {
		dir, name := filepath.Split(p)
		f := c.load(filepath.Clean(dir))
		e, ok := f.Shards[name]
		st, stamp, err := statStamp(p)
		if !ok || f.path == "" || err != nil || !e.holds(st, stamp, 0) || int64(e.Records) == found[p] {
			continue
		}
		probs = append(probs, Problem{Path: f.path, Offset: -1, Reason: fmt.Sprintf(
			"its entry for %s says %d records, the shard holds %d: a stale or forged entry (delete it, or the file: the next open counts the shard)", name, e.Records, found[p])})
	}
	return probs
}

// unwrapPath drops the path an error names (the problem names it).
func unwrapPath(err error) error {
	var fe *source.FileError
	if errors.As(err, &fe) {
		return errors.New(fe.Reason)
	}
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}

// verifyShard reads a shard once, checking CRCs and hashing it, then
// compares its index and the manifest's figures.
func verifyShard(ctx context.Context, t target, progress func(int64)) (records, size int64, probs []Problem) {
	bad := func(off int64, format string, a ...any) {
		probs = append(probs, Problem{Path: t.path, Offset: off, Reason: fmt.Sprintf(format, a...)})
	}
	f, _, err := source.OpenFile(t.path)
	if err != nil {
		bad(-1, "%v", unwrapPath(err))
		return 0, 0, probs
	}
	defer f.Close()
	h := sha256.New()
	cr := &countingReader{r: io.TeeReader(f, h), progress: progress}
	r := tfrecord.NewReader(cr, tfrecord.WithName(t.path))
	var found []tfrecord.IndexEntry
	var buf []byte
	var readErr error
	for {
		if ctx.Err() != nil {
			return records, cr.n, probs
		}
		off := r.Offset()
		rec, err := r.ReadRecord(buf[:0])
		if err == io.EOF {
			break
		}
		if err != nil {
			readErr = err
			var ce *tfrecord.CorruptError
			if errors.As(err, &ce) {
				bad(ce.Offset, "%s", ce.Reason)
			} else {
				bad(off, "%v", err)
			}
			break
		}
		buf = rec
		found = append(found, tfrecord.IndexEntry{Offset: off, Size: int64(len(rec)) + tfrecord.FrameSize})
		if p := exampleImageProblem(rec); p != "" {
			bad(off, "record %d: %s", len(found)-1, p)
		}
	}
	records = int64(len(found))
	if readErr != nil {
		return records, cr.n, probs // later checks would only repeat the damage
	}
	size = cr.n

	// The index beside the shard.
	ip := t.indexPath(IndexName(filepath.Base(t.path)))
	if t.want == nil {
		// X.idx, else X.tfrecord.idx (DALI's naming), as Open looks.
		for _, n := range tfrecordIndexNames(t.path) {
			if _, err := os.Stat(n); err == nil {
				ip = n
				break
			}
		}
	}
	if idxf, _, err := source.OpenFile(ip); err == nil {
		entries, err := tfrecord.ReadIndex(idxf, ip)
		idxf.Close()
		if err != nil {
			var ce *tfrecord.CorruptError
			if errors.As(err, &ce) {
				probs = append(probs, Problem{Path: ip, Offset: ce.Offset, Reason: ce.Reason})
			} else {
				probs = append(probs, Problem{Path: ip, Offset: -1, Reason: err.Error()})
			}
		} else {
			probs = append(probs, compareIndex(ip, entries, found)...)
		}
	} else if t.want != nil {
		probs = append(probs, Problem{Path: ip, Offset: -1, Reason: "index file missing"})
	}

	probs = append(probs, t.checkManifest("records", records, size, h.Sum(nil))...)
	return records, size, probs
}

// indexPath is where the shard's index is: the manifest's name for it, or
// def beside the shard.
func (t target) indexPath(def string) string {
	if t.want != nil && t.want.Index != "" {
		def = t.want.Index
	}
	return filepath.Join(filepath.Dir(t.path), def)
}

// checkManifest compares what was found in a shard with the manifest's
// figures, if a manifest describes it; unit names what records counts.
func (t target) checkManifest(unit string, records, size int64, sum []byte) []Problem {
	w := t.want
	if w == nil {
		return nil
	}
	var probs []Problem
	bad := func(format string, a ...any) {
		probs = append(probs, Problem{Path: t.path, Offset: -1, Reason: fmt.Sprintf(format, a...)})
	}
	if w.Records != records {
		bad("%d %s, manifest says %d", records, unit, w.Records)
	}
	if w.Bytes != size {
		bad("%d bytes, manifest says %d", size, w.Bytes)
	}
	if got := hex.EncodeToString(sum); w.SHA256 != got {
		bad("sha256 %s, manifest says %s", got, w.SHA256)
	}
	return probs
}

func compareIndex(ip string, entries, found []tfrecord.IndexEntry) []Problem {
	for i := range min(len(entries), len(found)) {
		if entries[i] != found[i] {
			return []Problem{{Path: ip, Offset: -1, Reason: fmt.Sprintf("entry %d says offset %d size %d, shard has offset %d size %d",
				i, entries[i].Offset, entries[i].Size, found[i].Offset, found[i].Size)}}
		}
	}
	if len(entries) != len(found) {
		return []Problem{{Path: ip, Offset: -1, Reason: fmt.Sprintf("%d entries, shard has %d records", len(entries), len(found))}}
	}
	return nil
}

type countingReader struct {
	r        io.Reader
	n        int64
	progress func(int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.progress != nil && n > 0 {
		c.progress(int64(n))
	}
	return n, err
}
