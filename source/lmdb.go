package source

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
)

// ErrNoCgo marks a format whose reader needs a cgo build.
var ErrNoCgo = errors.New("LMDB support needs cgo (this binary was built with CGO_ENABLED=0)")

// IsLMDB reports whether path looks like an LMDB environment: a directory
// holding data.mdb, or a data.mdb file itself.
func IsLMDB(path string) bool {
	st, err := os.Stat(path)
	if err != nil {
		return false
	}
	if st.IsDir() {
		_, err := os.Stat(filepath.Join(path, "data.mdb"))
		return err == nil
	}
	return filepath.Base(path) == "data.mdb"
}

// checkLMDBFiles refuses an environment whose data or lock file is not a
// regular file (a FIFO would block the C library's open for ever), or
// whose data file is shorter than its meta page says (checkLMDBSize).
func checkLMDBFiles(path string, dir bool) error {
	files := []string{path, path + "-lock"}
	if dir {
		files = []string{filepath.Join(path, "data.mdb"), filepath.Join(path, "lock.mdb")}
	}
	for _, p := range files {
		if st, err := os.Stat(p); err == nil && !st.Mode().IsRegular() {
			return &FileError{Path: p, Reason: "not a regular file (" + modeName(st.Mode()) + ")"}
		}
	}
	return checkLMDBSize(lmdbDataFile(path, dir))
}

// caffeKeyRE matches the keys Caffe's convert_imageset writes:
// "%08d_<path>".
var caffeKeyRE = regexp.MustCompile(`^[0-9]+_`)

// lmdbItemKey turns a Caffe LMDB key into an item key: the path after the
// "%08d_" prefix when there is one, else the key itself.
func lmdbItemKey(k []byte) string {
	if loc := caffeKeyRE.FindIndex(k); loc != nil && loc[1] < len(k) {
		return string(k[loc[1]:])
	}
	return string(k)
}

// lmdbClasses names labels 0 … max by their numbers: Caffe LMDBs carry no
// class names.
// MaxLabel is the largest class label a container may store (about a
// million classes): a larger one is damage, not a class, and makes its
// sample bad instead of making the class list that long.
const MaxLabel = 1<<20 - 1

// labelError is the damage of a label above MaxLabel.
func labelError(path, key string, off int64, label int) error {
	return &CorruptError{Path: path, Key: key, Offset: off, Reason: fmt.Sprintf("label %d above the limit of %d", label, MaxLabel)}
}

func lmdbClasses(maxLabel int) []string {
	c := make([]string, maxLabel+1)
	for i := range c {
		c[i] = strconv.Itoa(i)
	}
	return c
}

// datumSample turns a stored Datum value into a Sample. A Datum without
// a label field is damaged: its sample must not become class 0 for lack of
// its label (as a TFRecord record without image/class/label is damaged).
//
// With pixels, the Sample's Data never aliases val (which may be the
// map's memory): an encoded Datum's image is copied out, and a raw one's
// pixels are handed on as a raw-pixel image (Format "raw", package
// imgcodec/rawpix), which the decoders crop and resize from directly.
// Without, a raw Datum is encoded as PNG, for consumers that store or
// show the image as a file (pack, inspect, verify).
func datumSample(it Item, path string, val []byte, pixels bool) (Sample, error) {
	d, hasLabel, err := decodeDatum(val)
	if err == nil {
		var s Sample
		s.Item = it
		switch {
		case pixels && d.Encoded:
			s.Data, s.Format, s.Width, s.Height, err = d.Image()
			s.Data = bytes.Clone(s.Data)
		case pixels:
			s.Data, err = d.Pixels(nil)
			s.Format, s.Width, s.Height = "raw", d.Width, d.Height
		default:
			s.Data, s.Format, s.Width, s.Height, err = d.Image()
		}
		if err == nil && !hasLabel {
			return Sample{Item: it}, &CorruptError{Path: path, Key: it.Key, Offset: -1, Reason: "datum has no label field"}
		}
		if err == nil && d.Label > MaxLabel {
			return Sample{Item: it}, labelError(path, it.Key, -1, d.Label)
		}
		if err == nil {
			s.Label = d.Label
			s.Size = int64(len(s.Data))
			return s, nil
		}
	}
	return Sample{Item: it}, &CorruptError{Path: path, Key: it.Key, Offset: -1, Reason: err.Error(), Err: err}
}
