package shard

import (
	"context"
	"errors"
	"io"
	"path"

	"github.com/faster-training/faster/storage"
)

// cachedFiles reads a dataset under a storage URL through a local cache
// of whole files (OpenOptions.CacheDir): the first open of a shard (or index)
// fetches it to local disk, later opens, in this epoch or the next, in
// this process or another sharing the directory, read the local copy.
// Shards the manifest describes are checked against its size and SHA-256.
// A file that does not fit under the cap is read from the store.
type cachedFiles struct {
	storeFiles
	c    *storage.Cache
	want map[string]storage.Want // by object name, from the manifest
}

func newCachedFiles(ctx context.Context, f storeFiles, dir string, size int64) (*cachedFiles, error) {
	c, err := storage.OpenCache(dir, size)
	if err != nil {
		return nil, err
	}
	cf := &cachedFiles{storeFiles: f, c: c, want: map[string]storage.Want{}}
	if m, err := f.manifest(ctx, ""); err == nil {
		for _, sp := range m.Splits {
			for _, sh := range sp.Shards {
				cf.want[sh.Name] = storage.Want{Size: sh.Bytes, SHA256: sh.SHA256}
			}
		}
	}
	return cf, nil
}

func (f *cachedFiles) wantOf(name string) storage.Want {
	if w, ok := f.want[path.Clean(name)]; ok && w.Size > 0 {
		return w
	}
	return storage.Want{Size: -1}
}

// get opens the cached copy of name, or says to read the store.
func (f *cachedFiles) get(ctx context.Context, name string) (*storage.CachedFile, error) {
	cf, err := f.c.Open(ctx, f.s, name, f.wantOf(name))
	if errors.Is(err, storage.ErrNotCached) {
		return nil, nil
	}
	return cf, err
}

func (f *cachedFiles) open(ctx context.Context, name string) (io.ReadCloser, error) {
	cf, err := f.get(ctx, name)
	if err != nil {
		return nil, err
	}
	if cf == nil {
		return f.storeFiles.open(ctx, name)
	}
	return cf, nil
}

func (f *cachedFiles) openAt(ctx context.Context, name string) (io.ReaderAt, error) {
	cf, err := f.get(ctx, name)
	if err != nil {
		return nil, err
	}
	if cf == nil {
		return f.storeFiles.openAt(ctx, name)
	}
	return cf, nil
}
