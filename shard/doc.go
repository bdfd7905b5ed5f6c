// Package shard opens datasets of every layout for reading (Open), packs
// datasets into TFRecord shards (or WebDataset tar shards), verifies and
// inspects them and the other container formats (LMDB), and owns the
// naming and manifest conventions of a packed dataset:
//
//	DST/
//	  manifest.json                      splits, shards, counts, sha256, classes
//	  train-00000-of-00008.tfrecord      tf.train.Example records
//	  train-00000-of-00008.idx           DALI tfrecord2idx index: "offset size" per record
//	  ...
//	  test-00000-of-00008.tfrecord
//
// With format "wds" the shards are <split>-00000-of-00008.tar WebDataset
// shards: per sample the members <key>.jpg (or .png, …: the original
// bytes), <key>.cls (the label as decimal text) and <key>.json
// ({"label", "class", "filename", "format", "width", "height"}), where key
// is the item's path without its extension, dots replaced by "_"
// (webdataset splits member names at the first dot); the .idx beside each
// is DALI's wds2idx index.
//
// Each TFRecord record is a tf.train.Example with the features of TensorFlow's
// image-classification convention: image/encoded (the original file bytes
// for ImageFolder, PNG for IDX), image/format, image/class/label (int64,
// 0-based), image/class/text, image/filename (path relative to the
// source), and image/height, image/width when known.
//
// Open is the one opener of a dataset for reading, from a local path,
// several paths or a storage URL: it tells the layouts apart (ImageFolder,
// LMDB, WebDataset, a packed directory and its splits, TensorFlow's
// <split>-NNNNN-of-NNNNN shards, TFRecord files, globs, s3:// gs://
// http(s):// with an optional local cache), each file's container by its
// first bytes through one registry of formats (formats.go: how each is
// recognised, opened and verified), and returns a source.Indexed
// or a source.Streaming dataset, after the checks each format has (the
// manifest's sizes and counts, .idx against shard and manifest, CRCs as
// records are read). Damage is reported to the caller: Open's error, or,
// under a skip policy (OpenOptions.Skip), one call per damaged shard or
// region and records marked Bad. IsDamage and DamageOf are the one
// definition of container damage. Readers and datasets keep no
// goroutines; an indexed dataset's Record is safe for concurrent use.
//
// Packing is parallel, every file is written atomically (temporary file,
// fsync, rename), and the manifest is rewritten after each finished shard,
// so an interrupted run leaves no shard that looks complete and a rerun
// with the same inputs keeps the shards the manifest lists as complete.
package shard

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Feature keys written by Pack. They follow TensorFlow's object-detection
// and slim conventions and must not change.
const (
	KeyEncoded   = "image/encoded"
	KeyFormat    = "image/format"
	KeyLabel     = "image/class/label"
	KeyClassText = "image/class/text"
	KeyFilename  = "image/filename"
	KeyHeight    = "image/height"
	KeyWidth     = "image/width"
)

// Formats of a packed dataset.
const (
	FormatTFRecord = "tfrecord" // TFRecord shards of tf.train.Example, with .idx indexes
	FormatWDS      = "wds"      // WebDataset tar shards, with DALI wds2idx indexes
)

// Name returns the file name of TFRecord shard i of n of a split:
// "<split>-00007-of-00128.tfrecord".
func Name(split string, i, n int) string {
	return fmt.Sprintf("%s-%05d-of-%05d.tfrecord", split, i, n)
}

// FormatName returns the file name of shard i of n of a split in format
// ("tfrecord" or "wds"): "<split>-00007-of-00128.tfrecord" or ".tar".
func FormatName(format, split string, i, n int) string {
	if format == FormatWDS {
		return fmt.Sprintf("%s-%05d-of-%05d.tar", split, i, n)
	}
	return Name(split, i, n)
}

// IndexName returns the index file name for a shard file name (TFRecord
// or tar): the name without its extension, plus ".idx".
func IndexName(shard string) string {
	return strings.TrimSuffix(strings.TrimSuffix(shard, ".tfrecord"), ".tar") + ".idx"
}

var nameRE = regexp.MustCompile(`^(.+)-(\d{5,})-of-(\d{5,})\.(?:tfrecord|tar)$`)

// ParseName splits a shard file name (.tfrecord or .tar) into split, index and count.
func ParseName(name string) (split string, i, n int, ok bool) {
	m := nameRE.FindStringSubmatch(name)
	if m == nil {
		return "", 0, 0, false
	}
	i, _ = strconv.Atoi(m[2])
	n, _ = strconv.Atoi(m[3])
	return m[1], i, n, i < n
}
