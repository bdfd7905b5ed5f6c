package loader

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/faster-training/faster/shard"
	"github.com/faster-training/faster/storage"
)

// shardFS opens the files of a shard dataset: local paths through the
// os package, URLs (s3://, gs://, http(s)://) through package storage,
// with read-ahead, range reads and retries that resume at the exact byte.
type shardFS interface {
	// open returns a sequential reader of the file.
	open(ctx context.Context, name string) (io.ReadCloser, error)
	// openAt returns a random-access reader of the file.
	openAt(ctx context.Context, name string) (io.ReaderAt, error)
	// display names the file in errors and quarantine lists.
	display(name string) string
	// manifest reads the manifest of the dataset the file belongs to.
	manifest(ctx context.Context, name string) (*shard.Manifest, error)
	close() error
}

type localFiles struct{}

func (localFiles) open(_ context.Context, name string) (io.ReadCloser, error) { return os.Open(name) }
func (localFiles) openAt(_ context.Context, name string) (io.ReaderAt, error) {
	return os.Open(name) // an *os.File: its owner closes it (io.Closer)
}
func (localFiles) display(name string) string { return name }
func (localFiles) manifest(_ context.Context, name string) (*shard.Manifest, error) {
	return shard.LoadManifest(filepath.Dir(name))
}
func (localFiles) close() error { return nil }

// storeFiles reads a dataset under a storage URL; names are relative to
// the store's root.
type storeFiles struct{ s *storage.Store }

func (f storeFiles) open(ctx context.Context, name string) (io.ReadCloser, error) {
	return f.s.NewReader(ctx, name)
}
func (f storeFiles) openAt(ctx context.Context, name string) (io.ReaderAt, error) {
	return f.s.OpenReaderAt(ctx, name)
}
func (f storeFiles) display(name string) string { return f.s.URL(name) }
func (f storeFiles) manifest(ctx context.Context, _ string) (*shard.Manifest, error) {
	r, err := f.s.NewReader(ctx, shard.ManifestName)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var m shard.Manifest
	if err := json.NewDecoder(r).Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %w", f.s.URL(shard.ManifestName), err)
	}
	return &m, nil
}
func (f storeFiles) close() error { return f.s.Close() }

// remoteShards opens a packed dataset (or a directory of *.tfrecord files)
// at a storage URL and lists the shards of split.
func remoteShards(ctx context.Context, url, split string) (storeFiles, []string, error) {
	s, err := storage.Open(ctx, url, nil)
	if err != nil {
		return storeFiles{}, nil, err
	}
	f := storeFiles{s}
	if m, err := f.manifest(ctx, ""); err == nil && len(m.Splits) > 0 {
		sp := m.Splits[split]
		if sp == nil {
			s.Close()
			return f, nil, fmt.Errorf("%s: manifest has no split %q", url, split)
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
	var names []string
	for _, o := range objs {
		if strings.HasSuffix(o.Name, ".tfrecord") {
			names = append(names, o.Name)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		s.Close()
		return f, nil, fmt.Errorf("%s: no manifest.json and no *.tfrecord objects", url)
	}
	return f, names, nil
}
