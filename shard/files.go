package shard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/storage"
)

// shardFS opens the files of a shard dataset: local paths through the
// os package, URLs (s3://, gs://, http(s)://) through package storage,
// with read-ahead, range reads and retries that resume at the exact byte,
// and optionally a local cache of whole files (cachedFiles).
type shardFS interface {
	// open returns a sequential reader of the file.
	open(ctx context.Context, name string) (io.ReadCloser, error)
	// openAt returns a random-access reader of the file.
	openAt(ctx context.Context, name string) (io.ReaderAt, error)
	// display names the file in errors and quarantine lists.
	display(name string) string
	// manifest reads the manifest of the dataset the file belongs to.
	manifest(ctx context.Context, name string) (*Manifest, error)
	close() error
}

type localFiles struct{}

// Only regular files are read (a FIFO would block the reader forever).
func (localFiles) open(_ context.Context, name string) (io.ReadCloser, error) {
	f, _, err := source.OpenFile(name)
	return f, err
}
func (localFiles) openAt(_ context.Context, name string) (io.ReaderAt, error) {
	f, _, err := source.OpenFile(name)
	return f, err // an *os.File: its owner closes it (io.Closer)
}
func (localFiles) display(name string) string { return name }
func (localFiles) manifest(_ context.Context, name string) (*Manifest, error) {
	return LoadManifest(filepath.Dir(name))
}
func (localFiles) close() error { return nil }

// storeFiles reads a dataset under a storage URL; names are relative to
// the store's root.
type storeFiles struct {
	s    *storage.Store
	memo *manifestMemo // the manifest, fetched once per open (nil: every time)
}

// manifestMemo is a dataset's manifest, fetched at most once.
type manifestMemo struct {
	once sync.Once
	m    *Manifest
	err  error
}

// newStoreFiles returns the files of s; m, when it lists splits, is the
// manifest the caller read already.
func newStoreFiles(s *storage.Store, m *Manifest) storeFiles {
	f := storeFiles{s: s, memo: &manifestMemo{}}
	if m != nil && len(m.Splits) > 0 {
		f.memo.once.Do(func() { f.memo.m = m })
	}
	return f
}

func (f storeFiles) open(ctx context.Context, name string) (io.ReadCloser, error) {
	return f.s.NewReader(ctx, name)
}
func (f storeFiles) openAt(ctx context.Context, name string) (io.ReaderAt, error) {
	return f.s.OpenReaderAt(ctx, name)
}
func (f storeFiles) display(name string) string { return f.s.URL(name) }
func (f storeFiles) manifest(ctx context.Context, _ string) (*Manifest, error) {
	if f.memo == nil {
		return f.fetchManifest(ctx)
	}
	f.memo.once.Do(func() { f.memo.m, f.memo.err = f.fetchManifest(ctx) })
	return f.memo.m, f.memo.err
}

func (f storeFiles) fetchManifest(ctx context.Context) (*Manifest, error) {
	r, err := f.s.NewReader(ctx, ManifestName)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, MaxManifestSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.s.URL(ManifestName), err)
	}
	if len(b) > MaxManifestSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", f.s.URL(ManifestName), MaxManifestSize)
	}
	return ParseManifest(b, f.s.URL(ManifestName))
}
func (f storeFiles) close() error { return f.s.Close() }

// remoteShards opens a packed dataset (or a directory of *.tfrecord files)
// at a storage URL and lists the shards of split.
func remoteShards(ctx context.Context, url, split string, known *Manifest) (storeFiles, []string, error) {
	s, err := storage.Open(ctx, url, nil)
	if err != nil {
		return storeFiles{}, nil, err
	}
	f := newStoreFiles(s, known)
	m, err := f.manifest(ctx, "")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.Close()
		return f, nil, err // an unreadable manifest is an error, never "no manifest"
	}
	if m != nil && len(m.Splits) > 0 {
		sp := m.Splits[split]
		if sp == nil {
			s.Close()
			return f, nil, fmt.Errorf("%s: manifest has no split %q", url, split)
		}
		if !sp.Complete {
			s.Close()
			return f, nil, fmt.Errorf("%s: split %q: this pack did not finish: rerun faster pack", url, split)
		}
		var names []string
		for _, sh := range sp.Shards {
			names = append(names, sh.Name)
		}
		return f, names, nil
	}
	objs, err := s.List(ctx, "")
	if err != nil {
		s.Close()
		return f, nil, err
	}
	// As in a local directory: the split's <split>-NNNNN-of-NNNNN shards
	// (with or without an extension), else every *.tfrecord.
	var names []string
	bySplit := map[string][]string{}
	for _, o := range objs {
		if sp := splitOf(path.Base(o.Name)); sp != "" && !strings.HasSuffix(o.Name, ".tar") {
			bySplit[sp] = append(bySplit[sp], o.Name)
		}
		if strings.HasSuffix(o.Name, ".tfrecord") {
			names = append(names, o.Name)
		}
	}
	if len(bySplit) > 0 {
		if names, err = pickSplit(bySplit, split, url); err != nil {
			s.Close()
			return f, nil, err
		}
		if err := checkComplete(url, split, names); err != nil {
			s.Close()
			return f, nil, err // all N of -of-N, or none read
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		s.Close()
		return f, nil, fmt.Errorf("%s: no manifest.json, no <split>-NNNNN-of-NNNNN shards and no *.tfrecord objects", url)
	}
	return f, names, nil
}
