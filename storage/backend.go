package storage

import (
	"context"
	"io"
	"time"
)

// ObjectInfo describes one object under a Store's root.
type ObjectInfo struct {
	Name    string // relative to the root, slash-separated
	Size    int64
	ModTime time.Time
}

// backend is one kind of storage. Keys are full object keys (the root's
// prefix already joined); every method makes one attempt, retries live above.
type backend interface {
	// list returns the objects whose key starts with prefix, sorted by key.
	list(ctx context.Context, prefix string) ([]ObjectInfo, error)
	stat(ctx context.Context, key string) (ObjectInfo, error)
	// open starts one ranged read of [off, off+n), n < 0 meaning to the end,
	// and returns the body with the whole object's size and modification time.
	open(ctx context.Context, key string, off, n int64) (io.ReadCloser, ObjectInfo, error)
	close() error
}
