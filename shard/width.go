package shard

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/faster-training/faster/storage"
	"github.com/faster-training/faster/tfexample"
	"github.com/faster-training/faster/tfrecord"
)

// LoadManifestAt reads the manifest of the packed dataset at a local
// directory or a storage URL (s3://, gs://, http(s)://): one without
// splits where there is none, an error where there is one that cannot be
// read.
func LoadManifestAt(ctx context.Context, pathOrURL string) (*Manifest, error) {
	return manifestAt(ctx, pathOrURL, nil, nil)
}

// PackedWidth is the image width recorded in the first record of shard
// i (modulo their number) of split in the packed dataset at pathOrURL, or
// 0 when unknown. Rank r of n is given shards r, r+n, …, so rank r asking
// for shard r reads none of another rank's shards to learn it.
func PackedWidth(ctx context.Context, pathOrURL, split string, i int) int {
	return PackedWidthOf(ctx, pathOrURL, nil, split, i)
}

// PackedWidthOf is PackedWidth with the dataset's manifest m read already
// (nil: read it).
func PackedWidthOf(ctx context.Context, pathOrURL string, m *Manifest, split string, i int) int {
	width := 0
	manifestAt(ctx, pathOrURL, m, func(f shardFS, m *Manifest) {
		sp := m.Splits[split]
		if sp == nil || len(sp.Shards) == 0 {
			return
		}
		name := sp.Shards[i%len(sp.Shards)].Name
		if _, local := f.(localFiles); local {
			name = filepath.Join(pathOrURL, name)
		}
		r, err := f.open(ctx, name)
		if err != nil {
			return
		}
		defer r.Close()
		rec, err := tfrecord.NewReader(r, tfrecord.WithMaxRecordSize(maxRecordSize)).Next()
		if err != nil {
			return
		}
		ex, err := tfexample.Unmarshal(rec)
		if err != nil {
			return
		}
		w, _ := ex.Int64(KeyWidth)
		width = int(w)
	})
	return width
}

// manifestAt opens the dataset's files, reads its manifest (known, when
// not nil, is it, read already) and, if with is set, calls it with the
// files and the manifest before closing them.
func manifestAt(ctx context.Context, pathOrURL string, known *Manifest, with func(shardFS, *Manifest)) (*Manifest, error) {
	var f shardFS = localFiles{}
	name := filepath.Join(pathOrURL, ManifestName)
	if storage.IsURL(pathOrURL) {
		s, err := storage.Open(ctx, pathOrURL, nil)
		if err != nil {
			return nil, err
		}
		f, name = newStoreFiles(s, known), ManifestName
	}
	defer f.close()
	m, err := f.manifest(ctx, name)
	if errors.Is(err, fs.ErrNotExist) {
		return &Manifest{Splits: map[string]*Split{}}, nil
	}
	if err != nil {
		return nil, err
	}
	if with != nil {
		with(f, m)
	}
	return m, nil
}
