// Package source reads datasets in the layouts people already have, as an
// indexed list of samples that can be loaded concurrently:
//
//   - ImageFolder: one directory per class under a root; a class's index is
//     the position of its directory name in sorted order (0-based), exactly
//     as torchvision.datasets.ImageFolder assigns it; files whose extension
//     is an image extension (case-insensitive) are samples, walked in sorted
//     order as torchvision does.
//   - LMDB: Caffe-style databases of Datum values (cgo builds only).
//   - WebDataset: tar shards of samples grouped by key (see OpenWDS).
//   - IDX: the MNIST / Fashion-MNIST file format (optionally gzipped), as the
//     Debian package dataset-fashion-mnist installs under
//     /usr/share/datasets/fashion-mnist, or in torchvision's root/MNIST/raw;
//     one channel (Channeler).
//   - CIFAR: CIFAR-10/100's python batches (cifar.go; pickle.go reads the
//     subset of pickle their files use).
//   - Kaggle's ImageNet validation folder, flat, labelled by its CSV
//     (kaggle.go); a tar of an ImageFolder reads as that ImageFolder
//     (wdsfolder.go).
//
// A Source lists its items up front (cheap: names and labels only) and
// loads one item's bytes on demand; Load is safe for concurrent use, so a
// packer or pipeline can load items from many goroutines.
//
// For reading, a dataset is Indexed (random access by position) or
// Streaming (files of records read in order), yielding Records (see
// dataset.go); ImageFolder, LMDB and WDS are Indexed, and package shard's
// Open opens any layout as one or the other.
package source

import (
	"bytes"
	"fmt"
	"os"
)

// Item names one sample without loading it.
type Item struct {
	Key   string // path relative to the source root (slash-separated)
	Label int    // 0-based class index
	Size  int64  // encoded size in bytes if known before loading, else 0
}

// Sample is a loaded item: its encoded image and what is known of it.
type Sample struct {
	Item
	Data   []byte // encoded image (the file's bytes, unchanged, for ImageFolder; PNG for IDX)
	Format string // "jpeg", "png", "gif", "bmp", "webp", "tiff", "pnm"; "raw" for a raw Datum's pixels (imgcodec/rawpix) from LMDB.Record
	Width  int    // 0 if unknown
	Height int    // 0 if unknown
}

// Source is a dataset as an indexed list of items.
type Source interface {
	// Kind names the source type: "imagefolder", "idx", "lmdb" or "wds".
	Kind() string
	// Classes returns the class names, indexed by label.
	Classes() []string
	// Items returns every item, in the source's canonical order.
	Items() []Item
	// Load reads item i. It is safe for concurrent use. A file that cannot
	// be read or is not an image gives an error wrapping ErrNotImage or the
	// I/O error, naming the file.
	Load(i int) (Sample, error)
}

// ErrNotImage marks a file that is not a readable image.
var ErrNotImage error = &kindError{"not a readable image"}

// Open opens the dataset at path as kind ("imagefolder", "idx", "lmdb",
// "wds", or "" to detect). split selects the IDX files ("train" or "test"); ImageFolder
// ignores it.
func Open(path, kind, split string) (Source, error) {
	if kind == "" {
		var err error
		if kind, err = Detect(path); err != nil {
			return nil, err
		}
	}
	switch kind {
	case "imagefolder":
		return OpenImageFolder(path)
	case "idx":
		return OpenIDX(path, split)
	case "lmdb":
		return OpenLMDB(path)
	case "wds":
		files := WDSFiles(path)
		if len(files) == 0 {
			return nil, fmt.Errorf("%s: no *.tar files", path)
		}
		return OpenWDS(files)
	}
	return nil, fmt.Errorf("unknown source kind %q (want imagefolder, idx, lmdb or wds)", kind)
}

// Detect guesses the kind of dataset at path: "lmdb" for an LMDB
// environment, "wds" for a tar file or a directory of them, "idx" if it
// holds *-idx3-ubyte[.gz] files, else "imagefolder" if it holds
// subdirectories.
func Detect(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if IsLMDB(path) {
		return "lmdb", nil
	}
	if !st.IsDir() && IsTar(path) || st.IsDir() && len(sortedTars(path)) > 0 {
		return "wds", nil
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%s: not a directory", path)
	}
	if d, err := FindIDX(path); err != nil {
		return "", err // a root of several of torchvision's datasets
	} else if d != "" {
		return "idx", nil // its files, or torchvision's root/MNIST/raw
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return "", err
	}
	for _, e := range ents {
		if e.IsDir() {
			return "imagefolder", nil
		}
	}
	return "", fmt.Errorf("%s: neither IDX files nor class folders found (use --from)", path)
}

// Sniff returns the image format of data from its magic bytes, or "".
func Sniff(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte{0xff, 0xd8, 0xff}):
		return "jpeg"
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return "png"
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return "gif"
	case bytes.HasPrefix(data, []byte("BM")) && len(data) > 14:
		return "bmp"
	case len(data) >= 12 && bytes.Equal(data[:4], []byte("RIFF")) && bytes.Equal(data[8:12], []byte("WEBP")):
		return "webp"
	case bytes.HasPrefix(data, []byte("II*\x00")), bytes.HasPrefix(data, []byte("MM\x00*")):
		return "tiff"
	case len(data) > 2 && data[0] == 'P' && data[1] >= '1' && data[1] <= '6':
		return "pnm"
	}
	return ""
}
