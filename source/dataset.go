package source

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
)

// A dataset, as a loader reads it, is one of two kinds, whatever its
// container format:
//
//   - Indexed: random access by position (ImageFolder, LMDB, WebDataset,
//     TFRecord shards read through their .idx indexes). Record(i) is safe
//     for concurrent use, so a loader can draw a global permutation per
//     epoch and resume at an exact position.
//   - Streaming: a list of files of records, each read in order (TFRecord
//     shards), with per-file record counts that may be unknown. A loader
//     shards and shuffles the files, interleaves their readers and shuffles
//     within a buffer.
//
// Package shard's Open is the one function that opens a path or URL as
// either; the container formats live here and in shard, so a loader
// built over these interfaces knows none of them.

// Record is one sample as a dataset yields it: encoded bytes and what the
// container says of them, before any decoding.
type Record struct {
	Key   string // path relative to the dataset (ImageFolder), image/filename (shards), …
	Label int    // as stored (a loader applies its own offset)
	Data  []byte // the encoded image; the record owns it (no reuse)
	// Buf, when not nil, is the pooled memory Data lies in (see Buffer).
	// Whoever is done with Data, and has given it to no one, may Release
	// it for the next read; otherwise the garbage collector takes it.
	Buf *Buffer
	// ID is stable across epochs and ranks and seeds the sample's
	// augmentation: the global index of an indexed source, file<<32|record
	// of TFRecord shards (streamed or indexed). It must not change.
	ID uint64
	// Path and Offset say where the record is, for errors and quarantine
	// lists: the file (or LMDB) and the byte offset (-1 when the format
	// names records by key).
	Path   string
	Offset int64
	// Synset is a TensorFlow ImageNet record's image/class/synset
	// ("n01440764"), which names the class in a label error; "" if none.
	Synset string
	// Bad, set by a streaming reader under the skip policy, is the damage
	// that makes this record unusable (not a sample: Key, Path and Offset
	// say where it is); the reader has moved past it and goes on. Without
	// the skip policy damage is the reader's error instead.
	Bad error
}

// Dataset is what both kinds of dataset share.
type Dataset interface {
	// Kind names the container: "imagefolder", "lmdb", "wds" or "shards".
	Kind() string
	// Classes returns the class names, indexed by stored label, if known.
	Classes() []string
	// Close releases the files the dataset keeps open.
	Close() error
}

// Indexed is a dataset read by position.
type Indexed interface {
	Dataset
	// Len is the number of records.
	Len() int
	// Record reads record i (0 <= i < Len()). It is safe for concurrent
	// use. Damage (a record failing its checks, a file that is no regular
	// file) is an error for which IsDamage holds; the Record
	// returned with it still names where (Key, Path, Offset).
	Record(i int) (Record, error)
}

// Streaming is a dataset of files of records read in order.
type Streaming interface {
	Dataset
	// Files names the files, in the dataset's order. A loader shards and
	// shuffles these names; Open takes a position in this list.
	Files() []string
	// Counts returns each file's record count, -1 where unknown.
	Counts() []int
	// Open returns a reader of file i's records, reading under ctx.
	Open(ctx context.Context, i int) (RecordReader, error)
}

// RecordReader reads one file's records in order, as archive/tar's Reader
// reads members: Next returns the next record, io.EOF after the last. Its
// error is sticky: after the first failure every call returns it. It is
// not safe for concurrent use; Close releases the file.
type RecordReader interface {
	Next() (Record, error)
	Close() error
}

// Remote is implemented by datasets read over a network (a storage URL
// without a local cache): their reads wait on the network, not the CPU,
// and are worth keeping many in flight.
type Remote interface {
	Remote() bool
}

var (
	_ Indexed = (*ImageFolder)(nil)
	_ Indexed = (*LMDB)(nil)
	_ Indexed = (*WDS)(nil)
)

// Len returns the number of images.
func (d *ImageFolder) Len() int { return len(d.items) }

// Record reads image i's file as it is (no format check: the decoder
// judges it). A path that is no regular file, or above the size cap, is a
// *FileError (ErrBadFile).
func (d *ImageFolder) Record(i int) (Record, error) {
	it := d.items[i]
	p := filepath.Join(d.root, filepath.FromSlash(it.Key))
	data, buf, err := readFileInto(p, 0)
	if errors.Is(err, fs.ErrNotExist) {
		// Listed when the dataset was opened, gone now (deleted during
		// the run): a bad sample, which the skip policy skips and lists.
		err = &FileError{Path: p, Reason: "removed since the dataset was listed", Err: err}
	}
	if err != nil {
		return Record{Key: it.Key, Path: p, Offset: -1}, err
	}
	return Record{Key: it.Key, Label: it.Label, Data: data, Buf: buf, ID: uint64(i), Path: p, Offset: -1}, nil
}

// Close does nothing: an ImageFolder keeps no file open.
func (d *ImageFolder) Close() error { return nil }

// Len returns the number of records.
func (db *LMDB) Len() int { return len(db.Items()) }

// Record reads record i's image, named by the environment's path and its
// key: an encoded Datum's image as stored, a raw Datum's pixels as a
// raw-pixel image (package imgcodec/rawpix) that the decoders crop and
// resize from directly, with no encoding in the read (Load encodes them
// as PNG, for consumers that keep files).
func (db *LMDB) Record(i int) (Record, error) {
	s, err := db.pixels(i)
	if err != nil {
		return Record{Key: s.Key, Path: db.Path(), Offset: -1}, err
	}
	return Record{Key: s.Key, Label: s.Label, Data: s.Data, ID: uint64(i), Path: db.Path(), Offset: -1}, nil
}

// Len returns the number of samples.
func (d *WDS) Len() int { return len(d.items) }

// Record reads sample i's image member (see Load), located at its tar
// file and the offset Where gives.
func (d *WDS) Record(i int) (Record, error) {
	path, off := d.Where(i)
	s, err := d.Load(i)
	if err != nil {
		return Record{Key: s.Key, Path: path, Offset: off}, err
	}
	return Record{Key: s.Key, Label: s.Label, Data: s.Data, ID: uint64(i), Path: path, Offset: off}, nil
}
