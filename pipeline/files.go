package pipeline

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"slices"
)

// ErrNoFiles is returned by Glob when no pattern matches a file.
var ErrNoFiles = errors.New("pipeline: no files match")

// FileList is a source of file names: the usual first stage of a sharded
// pipeline (file names → Interleave(open) → records). It shards and
// shuffles its list itself, always shard first, then shuffle, whatever the
// order of the setter calls, so every rank shards the same canonical list.
type FileList struct {
	stage
	files   []string
	shardN  int
	shardI  int
	shuffle bool
	seed    uint64
}

// Files returns a source over the given file names, in that order (copied).
func Files(names ...string) *FileList {
	f := &FileList{files: slices.Clone(names), shardN: 1}
	f.init("files", RoleIO)
	f.recordShard = f.RecordShard
	return f
}

// Glob returns a source over the files matching any of the patterns
// (filepath.Match syntax), sorted and without duplicates, so that every rank
// lists the same files in the same order. It returns ErrNoFiles if nothing
// matches.
func Glob(patterns ...string) (*FileList, error) {
	var all []string
	for _, p := range patterns {
		m, err := filepath.Glob(p)
		if err != nil {
			return nil, fmt.Errorf("pipeline: glob %q: %w", p, err)
		}
		all = append(all, m...)
	}
	slices.Sort(all)
	all = slices.Compact(all)
	if len(all) == 0 {
		return nil, fmt.Errorf("%w %q", ErrNoFiles, patterns)
	}
	return Files(all...), nil
}

// Named sets the stage name shown in Stats.
func (f *FileList) Named(name string) *FileList { f.name = name; return f }

// Shard makes this list rank i's part of n ranks, with tf.data's AUTO policy:
// when there are at least n files, rank i keeps files i, i+n, i+2n, … (file
// counts differ by at most one between ranks); with fewer files than ranks,
// every rank keeps all files and the records are sharded instead: the
// Interleave reading this list (directly or through stages with one input)
// keeps its elements i, i+n, i+2n, …. Use RecordShard to apply the record
// shard yourself when records are read some other way.
func (f *FileList) Shard(n, i int) *FileList {
	if n < 1 || i < 0 || i >= n {
		f.err = configError("files", "shard %d of %d", i, n)
		return f
	}
	f.shardN, f.shardI = n, i
	return f
}

// Shuffle shuffles the (sharded) list at the start of every epoch with a
// generator seeded by seed and the epoch its context names (EpochFrom):
// each epoch has a different order, the same on every run. All ranks must use the same seed.
func (f *FileList) Shuffle(seed uint64) *FileList {
	f.shuffle, f.seed = true, seed
	return f
}

// RecordShard reports whether the list has fewer files than shards, so that
// its records must be sharded n ways, keeping those at index i mod n.
func (f *FileList) RecordShard() (n, i int, ok bool) {
	if f.shardN > 1 && len(f.files) < f.shardN {
		return f.shardN, f.shardI, true
	}
	return 1, 0, false
}

// Len returns the number of files each epoch yields.
func (f *FileList) Len() int { return len(f.epochFiles(0)) }

func (f *FileList) epochFiles(epoch int64) []string {
	var out []string
	if f.shardN > 1 && len(f.files) >= f.shardN {
		for j := f.shardI; j < len(f.files); j += f.shardN {
			out = append(out, f.files[j])
		}
	} else {
		out = slices.Clone(f.files)
	}
	if f.shuffle {
		r := epochRand(f.seed, epoch, saltFiles)
		r.Shuffle(len(out), func(a, b int) { out[a], out[b] = out[b], out[a] })
	}
	return out
}

// Iter implements Dataset.
func (f *FileList) Iter(ctx context.Context) iter.Seq2[string, error] {
	if f.err != nil {
		return failSeq[string](f.err)
	}
	return func(yield func(string, error) bool) {
		f.begin()
		epoch := EpochFrom(ctx)
		defer f.end()
		m := meter{s: &f.stage}
		defer m.flush()
		for _, name := range f.epochFiles(epoch) {
			if ctx.Err() != nil {
				yield("", ctxErr(ctx))
				return
			}
			m.items++
			t := nanotime()
			if !yield(name, nil) {
				return
			}
			m.blockedOut += nanotime() - t
			m.tick()
		}
	}
}
