package source

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/faster-training/faster/imgcodec/rawpix"
)

// CIFAR is CIFAR-10 or CIFAR-100 as its python version is distributed
// (https://www.cs.toronto.edu/~kriz/cifar.html): pickled dicts whose
// "data" is an N×3072 uint8 array (each row a 32×32 image, its red plane,
// then green, then blue) and whose "labels" (CIFAR-10) or "fine_labels"
// (CIFAR-100) list the labels; the class names are in batches.meta's
// "label_names" or meta's "fine_label_names". A split's images are those
// of its files in order, as torchvision.datasets.CIFAR10 and CIFAR100
// list them: train is data_batch_1 … data_batch_5 (CIFAR-100: train),
// test is test_batch (CIFAR-100: test). Records are raw pixels
// (imgcodec/rawpix, 32×32 RGB, interleaved).
type CIFAR struct {
	dir     string
	split   string
	classes []string
	files   []string // the split's batch files
	pixels  [][]byte // each file's N×3072 planar pixels
	first   []int    // the index of each file's first image
	items   []Item
}

// CIFAR's files, by version.
var cifarLayouts = []struct {
	name, dir, meta, namesKey, labelsKey string
	splits                               map[string][]string
}{
	{"CIFAR-10", "cifar-10-batches-py", "batches.meta", "label_names", "labels",
		map[string][]string{"train": {"data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5"}, "test": {"test_batch"}}},
	{"CIFAR-100", "cifar-100-python", "meta", "fine_label_names", "fine_labels",
		map[string][]string{"train": {"train"}, "test": {"test"}}},
}

const cifarSide = 32

// FindCIFAR returns the directory of CIFAR's python batches at path: path
// itself (cifar-10-batches-py with batches.meta, or cifar-100-python with
// meta), or its child so named (torchvision's root); "" when path is
// neither. A root holding more than one of torchvision's datasets
// (CIFAR-10, CIFAR-100, MNIST's raw folders) is an error naming them.
func FindCIFAR(path string) (string, error) {
	for _, l := range cifarLayouts {
		if isCIFARDir(path, l.meta) {
			return path, nil
		}
	}
	d, err := torchvisionRoot(path)
	if err != nil || d == "" || hasIDX(d) {
		return "", err
	}
	return d, nil
}

// torchvisionRoot returns the one dataset folder under a torchvision
// root (root/cifar-10-batches-py, root/cifar-100-python, root/MNIST/raw,
// root/FashionMNIST/raw, root/KMNIST/raw), "" when there is none, or an
// error naming them when there are several: a root shared by several
// datasets names none of them.
func torchvisionRoot(path string) (string, error) {
	var found []string
	for _, l := range cifarLayouts {
		if d := filepath.Join(path, l.dir); isCIFARDir(d, l.meta) {
			found = append(found, d)
		}
	}
	for _, l := range idxLayouts {
		if d := filepath.Join(path, l, "raw"); hasIDX(d) {
			found = append(found, d)
		}
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%s: the root of %d of torchvision's datasets (%s): give the folder of one as the path", path, len(found), strings.Join(found, ", "))
}

// isCIFARDir: dir holds the meta file, a pickle (it starts with PROTO).
func isCIFARDir(dir, meta string) bool {
	f, err := os.Open(filepath.Join(dir, meta))
	if err != nil {
		return false
	}
	defer f.Close()
	var b [1]byte
	_, err = f.Read(b[:])
	return err == nil && b[0] == 0x80
}

// OpenCIFAR opens split ("train" or "test") of the CIFAR python batches
// in dir (see FindCIFAR for what dir may be). Every file of the split
// must be there; an unknown split is an error naming the two.
func OpenCIFAR(dir, split string) (*CIFAR, error) {
	found, err := FindCIFAR(dir)
	if err != nil {
		return nil, err
	}
	if found == "" {
		return nil, fmt.Errorf("%s: no CIFAR python batches (cifar-10-batches-py/batches.meta or cifar-100-python/meta)", dir)
	}
	dir = found
	l := cifarLayouts[0]
	if !isCIFARDir(dir, l.meta) {
		l = cifarLayouts[1]
	}
	names, ok := l.splits[split]
	if !ok {
		return nil, fmt.Errorf("%s: no split %q: %s has the splits train and test", dir, split, l.name)
	}
	meta, err := readPickleDict(filepath.Join(dir, l.meta))
	if err != nil {
		return nil, err
	}
	classes, err := meta.texts(l.namesKey)
	if err != nil {
		return nil, err
	}
	if len(classes) == 0 {
		return nil, meta.errf(l.namesKey, "no class names")
	}
	c := &CIFAR{dir: dir, split: split, classes: classes}
	for _, name := range names {
		p := filepath.Join(dir, name)
		b, err := readPickleDict(p)
		if err != nil {
			return nil, err
		}
		data, ok := b.m["data"].(*pyArray)
		if !ok {
			return nil, b.errf("data", "not a numpy array (%s)", pyKind(b.m["data"]))
		}
		if len(data.shape) != 2 || data.shape[1] != 3*cifarSide*cifarSide {
			return nil, b.errf("data", "shape %v, want N×3072 (32×32 RGB planes)", data.shape)
		}
		labels, err := b.ints(l.labelsKey)
		if err != nil {
			return nil, err
		}
		if len(labels) != data.shape[0] {
			return nil, b.errf(l.labelsKey, "%d labels for %d images", len(labels), data.shape[0])
		}
		c.files = append(c.files, p)
		c.pixels = append(c.pixels, data.data)
		c.first = append(c.first, len(c.items))
		for j, lab := range labels {
			if lab < 0 || lab >= len(classes) {
				return nil, b.errf(l.labelsKey, "label %d of image %d outside the %d classes", lab, j, len(classes))
			}
			c.items = append(c.items, Item{Key: fmt.Sprintf("%s/%05d", name, j), Label: lab, Size: 3 * cifarSide * cifarSide})
		}
	}
	return c, nil
}

// pickleFile is a pickled dict read from a file.
type pickleFile struct {
	*pyDict
	path string
}

func (f pickleFile) errf(key, format string, a ...any) error {
	return &CorruptError{Path: f.path, Offset: -1, Reason: fmt.Sprintf("key %q: ", key) + fmt.Sprintf(format, a...)}
}

// readPickleDict reads a file holding one pickled dict.
func readPickleDict(path string) (pickleFile, error) {
	b, err := ReadFile(path, 0)
	if err != nil {
		return pickleFile{}, err
	}
	v, err := readPickle(b, path)
	if err != nil {
		return pickleFile{}, err
	}
	d, ok := v.(*pyDict)
	if !ok {
		return pickleFile{}, &CorruptError{Path: path, Offset: 0, Reason: fmt.Sprintf("CIFAR pickle: a %s, want a dict", pyKind(v))}
	}
	return pickleFile{d, path}, nil
}

// texts returns the list of str at key.
func (f pickleFile) texts(key string) ([]string, error) {
	l, ok := f.m[key].(*pyList)
	if !ok {
		return nil, f.errf(key, "not a list (%s)", pyKind(f.m[key]))
	}
	out := make([]string, len(l.items))
	for i, v := range l.items {
		s, ok := pyText(v)
		if !ok {
			return nil, f.errf(key, "item %d is a %s, want str", i, pyKind(v))
		}
		out[i] = s
	}
	return out, nil
}

// ints returns the list of int at key.
func (f pickleFile) ints(key string) ([]int, error) {
	l, ok := f.m[key].(*pyList)
	if !ok {
		return nil, f.errf(key, "not a list (%s)", pyKind(f.m[key]))
	}
	out := make([]int, len(l.items))
	for i, v := range l.items {
		n, ok := v.(int64)
		if !ok {
			return nil, f.errf(key, "item %d is a %s, want int", i, pyKind(v))
		}
		out[i] = int(n)
	}
	return out, nil
}

var _ Indexed = (*CIFAR)(nil)

// Kind returns "cifar".
func (c *CIFAR) Kind() string { return "cifar" }

// Classes returns the class names of the meta file.
func (c *CIFAR) Classes() []string { return c.classes }

// Items returns the images in torchvision's order; keys are
// "<batch file>/<index in it>".
func (c *CIFAR) Items() []Item { return c.items }

// Len returns the number of images.
func (c *CIFAR) Len() int { return len(c.items) }

// Close releases nothing: the pixels are in memory.
func (c *CIFAR) Close() error { return nil }

// Pixels returns image i as 32×32×3 interleaved RGB (HWC), as
// torchvision's CIFAR10.data[i] holds it.
func (c *CIFAR) Pixels(i int) []byte {
	return c.appendPixels(nil, i)
}

func (c *CIFAR) appendPixels(dst []byte, i int) []byte {
	f, _ := slices.BinarySearch(c.first, i+1)
	f--
	const n = cifarSide * cifarSide
	row := c.pixels[f][(i-c.first[f])*3*n:][:3*n]
	for p := range n {
		dst = append(dst, row[p], row[n+p], row[2*n+p])
	}
	return dst
}

// Record returns image i as a raw-pixel image (imgcodec/rawpix).
func (c *CIFAR) Record(i int) (Record, error) {
	it := c.items[i]
	f, _ := slices.BinarySearch(c.first, i+1)
	b := rawpix.Header{Width: cifarSide, Height: cifarSide, Channels: 3, Layout: rawpix.Interleaved}.Append(make([]byte, 0, rawpix.HeaderSize+3*cifarSide*cifarSide))
	b = c.appendPixels(b, i)
	return Record{Key: it.Key, Label: it.Label, Data: b, ID: uint64(i), Path: c.files[f-1], Offset: -1}, nil
}
