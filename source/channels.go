package source

import (
	"os"
	"path/filepath"

	"github.com/faster-training/faster/imgcodec/rawpix"
)

// Channeler is implemented by datasets whose images all have the same
// number of channels, known before any is decoded: MNIST and
// Fashion-MNIST's IDX images are one channel (torchvision serves them as
// 1×H×W). A loader serves such data with that many channels unless its
// transform says otherwise (Grayscale(3)); a dataset that does not
// implement it is served as RGB.
type Channeler interface {
	// Channels returns the images' channel count: 1 or 3.
	Channels() int
}

var _ Channeler = (*IDX)(nil)

// Channels returns 1: IDX images are grayscale.
func (d *IDX) Channels() int { return 1 }

// MNISTClasses are torchvision's MNIST class names, by label.
var MNISTClasses = []string{"0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven", "8 - eight", "9 - nine"}

// idxLayouts are the folders under torchvision's root that hold its IDX
// datasets' files (root/MNIST/raw, root/FashionMNIST/raw).
var idxLayouts = []string{"MNIST", "FashionMNIST", "KMNIST"}

// FindIDX returns the directory of IDX files at path: path itself (it
// holds train- or t10k-images-idx3-ubyte, gzipped or not), its raw/
// (torchvision's root/MNIST), or root/MNIST/raw, root/FashionMNIST/raw
// (torchvision's root); "" when none holds them. A root holding more than
// one of torchvision's datasets is an error naming them (see FindCIFAR).
func FindIDX(path string) (string, error) {
	if d := FindIDXIn(path); d != "" {
		return d, nil
	}
	d, err := torchvisionRoot(path)
	if err != nil || d == "" || !hasIDX(d) {
		return "", err
	}
	return d, nil
}

// FindIDXIn returns path when it holds IDX files, its raw/ when that does
// (torchvision's root/MNIST), else "".
func FindIDXIn(path string) string {
	if hasIDX(path) {
		return path
	}
	if d := filepath.Join(path, "raw"); hasIDX(d) {
		return d
	}
	return ""
}

func hasIDX(dir string) bool {
	for _, prefix := range []string{"train", "t10k"} {
		for _, ext := range []string{"", ".gz"} {
			if st, err := os.Stat(filepath.Join(dir, prefix+"-images-idx3-ubyte"+ext)); err == nil && st.Mode().IsRegular() {
				return true
			}
		}
	}
	return false
}

var _ Indexed = (*IDX)(nil)

// Len returns the number of images.
func (d *IDX) Len() int { return len(d.items) }

// Record returns image i as a one-channel raw-pixel image
// (imgcodec/rawpix), or its Damage (a label outside the classes).
func (d *IDX) Record(i int) (Record, error) {
	it := d.items[i]
	if err := d.damaged[i]; err != nil {
		return Record{Key: it.Key, Path: d.dir, Offset: -1}, err
	}
	h, w := d.Size()
	px := d.Pixels(i)
	b := rawpix.Header{Width: w, Height: h, Channels: 1, Layout: rawpix.Interleaved}.Append(make([]byte, 0, rawpix.HeaderSize+len(px)))
	return Record{Key: it.Key, Label: it.Label, Data: append(b, px...), ID: uint64(i), Path: d.dir, Offset: -1}, nil
}

// Close releases nothing: the images are in memory.
func (d *IDX) Close() error { return nil }
