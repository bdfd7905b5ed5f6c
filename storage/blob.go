package storage

import (
	"context"
	"errors"
	"io"
	"sort"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// blobBackend is gocloud.dev/blob: local directories (fileblob), S3
// (s3blob) and GCS (gcsblob).
type blobBackend struct {
	b       *blob.Bucket
	onClose func() error // releases what the opener created beside the bucket
}

func mapBlobErr(err error) error {
	if err == nil {
		return nil
	}
	if gcerrors.Code(err) == gcerrors.NotFound {
		return &notExistError{err}
	}
	return err
}

func (bb *blobBackend) list(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	var out []ObjectInfo
	it := bb.b.List(&blob.ListOptions{Prefix: prefix})
	for {
		o, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, mapBlobErr(err)
		}
		if o.IsDir || strings.HasSuffix(o.Key, "/") {
			continue
		}
		out = append(out, ObjectInfo{Name: o.Key, Size: o.Size, ModTime: o.ModTime})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (bb *blobBackend) stat(ctx context.Context, key string) (ObjectInfo, error) {
	a, err := bb.b.Attributes(ctx, key)
	if err != nil {
		return ObjectInfo{}, mapBlobErr(err)
	}
	return ObjectInfo{Name: key, Size: a.Size, ModTime: a.ModTime}, nil
}

func (bb *blobBackend) open(ctx context.Context, key string, off, n int64) (io.ReadCloser, ObjectInfo, error) {
	r, err := bb.b.NewRangeReader(ctx, key, off, n, nil)
	if err != nil {
		return nil, ObjectInfo{}, mapBlobErr(err)
	}
	return r, ObjectInfo{Name: key, Size: r.Size(), ModTime: r.ModTime()}, nil
}

func (bb *blobBackend) close() error {
	err := bb.b.Close()
	if bb.onClose != nil {
		err = errors.Join(err, bb.onClose())
	}
	return err
}
