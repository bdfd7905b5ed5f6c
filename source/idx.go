package source

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// IDXFile is a parsed IDX file: an n-dimensional array of unsigned bytes
// (type code 0x08), the element type MNIST and Fashion-MNIST use.
type IDXFile struct {
	Dims []int
	Data []byte
}

// ErrBadIDX marks data that is not a valid IDX file.
var ErrBadIDX = errors.New("bad IDX file")

// maxIDXBytes bounds what an IDX header may claim (1 GiB of pixels is far
// above MNIST-style datasets), against forged dimensions.
const maxIDXBytes = 1 << 30

// ReadIDX parses an IDX file of unsigned bytes from r, gunzipping it when it
// starts with the gzip magic. name is used in errors. It never allocates
// more than the header claims and maxIDXBytes allows, and fails when the
// data is shorter or longer than the header claims.
func ReadIDX(r io.Reader, name string) (*IDXFile, error) {
	br := bufio.NewReader(r)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		defer zr.Close()
		br = bufio.NewReader(zr)
	}
	bad := func(off int, format string, a ...any) error {
		return fmt.Errorf("%s: offset %d: %w: %s", name, off, ErrBadIDX, fmt.Sprintf(format, a...))
	}
	var hdr [4]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return nil, bad(0, "short header: %v", err)
	}
	if hdr[0] != 0 || hdr[1] != 0 {
		return nil, bad(0, "magic %x, want 0000 type ndims", hdr)
	}
	if hdr[2] != 0x08 {
		return nil, bad(2, "element type %#x, only unsigned bytes (0x08) are supported", hdr[2])
	}
	nd := int(hdr[3])
	if nd == 0 {
		return nil, bad(3, "zero dimensions")
	}
	f := &IDXFile{Dims: make([]int, nd)}
	total := int64(1)
	for i := range f.Dims {
		var d [4]byte
		if _, err := io.ReadFull(br, d[:]); err != nil {
			return nil, bad(4+4*i, "short dimension list: %v", err)
		}
		f.Dims[i] = int(binary.BigEndian.Uint32(d[:]))
		total *= int64(f.Dims[i])
		if total > maxIDXBytes {
			return nil, bad(4+4*i, "dimensions %v exceed %d bytes", f.Dims[:i+1], maxIDXBytes)
		}
	}
	// Read the first MiB, then (only if the data goes on) allocate the
	// whole size once: a forged header costs at most a MiB, real data
	// its size, never twice its size as a growing buffer would.
	off := 4 + 4*nd
	data := make([]byte, min(total, 1<<20))
	n, err := io.ReadFull(br, data)
	if err == nil && int64(n) < total {
		all := make([]byte, total)
		copy(all, data)
		var m int
		m, err = io.ReadFull(br, all[n:])
		data, n = all, n+m
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return nil, bad(off+n, "data truncated: %d of %d bytes", n, total)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// Reading on to the end also makes gzip check its CRC.
	if k, err := br.Read(make([]byte, 1)); k > 0 {
		return nil, bad(off+int(total), "trailing data after %d bytes", total)
	} else if err != nil && err != io.EOF {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	f.Data = data
	return f, nil
}

// ReadIDXFile reads an IDX file from disk.
func ReadIDXFile(path string) (*IDXFile, error) {
	fh, _, err := OpenFile(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return ReadIDX(fh, path)
}

// FashionMNISTClasses are Fashion-MNIST's class names, by label.
var FashionMNISTClasses = []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

// IDX is an MNIST-style dataset: an images file (N x H x W) and a labels
// file (N), for one split. Items are PNG-encoded on Load.
type IDX struct {
	dir     string
	split   string
	classes []string
	images  *IDXFile
	labels  []byte
	items   []Item
	damaged map[int]error // items whose label is outside the classes
	stamp   string        // FileStamps of the two files (Stamp)
	pngPool sync.Pool
}

// OpenIDX opens the split ("train" or "test") of the IDX dataset in dir:
// files train-images-idx3-ubyte[.gz] and train-labels-idx1-ubyte[.gz], or
// t10k-… for test. Class names are torchvision's: FashionMNIST's when the
// directory's name (or, for root/FashionMNIST/raw, its parent's) mentions
// "fashion", else MNIST's ("0 - zero" … "9 - nine").
func OpenIDX(dir, split string) (*IDX, error) {
	if d, err := FindIDX(dir); err != nil {
		return nil, err
	} else if d != "" {
		dir = d // torchvision's root/MNIST/raw
	}
	prefix := map[string]string{"train": "train", "": "train", "test": "t10k", "t10k": "t10k"}[split]
	if prefix == "" {
		return nil, fmt.Errorf("%s: no split %q: an IDX dataset (MNIST's layout) has the splits train and test", dir, split)
	}
	if split == "" || split == "t10k" {
		split = map[string]string{"train": "train", "t10k": "test"}[prefix]
	}
	find := func(kind string) (string, error) {
		for _, ext := range []string{"", ".gz"} {
			p := filepath.Join(dir, prefix+"-"+kind+"-ubyte"+ext)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
		return "", fmt.Errorf("%s: no %s-%s-ubyte[.gz]", dir, prefix, kind)
	}
	ip, err := find("images-idx3")
	if err != nil {
		return nil, err
	}
	lp, err := find("labels-idx1")
	if err != nil {
		return nil, err
	}
	// The files' stamps before they are read (IDX.Stamp): a file changed
	// after this changes its stamp.
	var stamp string
	for _, p := range []string{ip, lp} {
		st, err := FileStamp(p)
		if err != nil {
			return nil, err
		}
		stamp += st + ";"
	}
	images, err := ReadIDXFile(ip)
	if err != nil {
		return nil, err
	}
	labels, err := ReadIDXFile(lp)
	if err != nil {
		return nil, err
	}
	if len(images.Dims) != 3 || len(labels.Dims) != 1 || images.Dims[0] != labels.Dims[0] {
		return nil, fmt.Errorf("%s: images %v and labels %v do not match (want N×H×W and N)", dir, images.Dims, labels.Dims)
	}
	// torchvision's names: FashionMNIST's when the directory (or, for
	// torchvision's root/FashionMNIST/raw, its parent) says fashion.
	classes := MNISTClasses
	name := filepath.Base(filepath.Clean(dir))
	if name == "raw" {
		name = filepath.Base(filepath.Dir(filepath.Clean(dir)))
	}
	if strings.Contains(strings.ToLower(name), "fashion") {
		classes = FashionMNISTClasses
	}
	d := &IDX{dir: dir, split: split, classes: classes, images: images, labels: labels.Data, stamp: stamp}
	d.items = make([]Item, images.Dims[0])
	where := "" // the offset of a gzipped file is in its uncompressed bytes
	if strings.HasSuffix(lp, ".gz") {
		where = " (offset in the uncompressed data)"
	}
	for i := range d.items {
		l := int(labels.Data[i])
		d.items[i] = Item{Key: fmt.Sprintf("%s/%05d.png", split, i), Label: l}
		if l >= len(classes) {
			// A damaged sample, as a record failing its CRC: Load
			// reports it, a skipping reader skips it.
			if d.damaged == nil {
				d.damaged = map[int]error{}
			}
			d.damaged[i] = &CorruptError{Path: lp, Key: d.items[i].Key, Offset: int64(8 + i),
				Reason: fmt.Sprintf("label %d of image %d outside the %d classes%s", l, i, len(classes), where)}
		}
	}
	return d, nil
}

// Damage returns the damage of item i (*CorruptError: a label outside the
// classes, naming the labels file and the label's offset), or nil. Load
// returns the same error for it.
func (d *IDX) Damage(i int) error { return d.damaged[i] }

// Kind returns "idx".
func (d *IDX) Kind() string { return "idx" }

// Classes returns the class names.
func (d *IDX) Classes() []string { return d.classes }

// Items returns one item per image, keys "<split>/<index>.png". An item
// whose Damage is not nil holds its label as stored, outside the classes.
func (d *IDX) Items() []Item { return d.items }

// Pixels returns image i's raw H×W grayscale pixels (aliasing the file).
func (d *IDX) Pixels(i int) []byte {
	n := d.images.Dims[1] * d.images.Dims[2]
	return d.images.Data[i*n : (i+1)*n]
}

// Size returns the images' height and width.
func (d *IDX) Size() (h, w int) { return d.images.Dims[1], d.images.Dims[2] }

type pngEncoder struct {
	enc png.Encoder
	buf bytes.Buffer
}

type encoderPool struct{ b *png.EncoderBuffer }

func (p *encoderPool) Get() *png.EncoderBuffer  { return p.b }
func (p *encoderPool) Put(b *png.EncoderBuffer) { p.b = b }

// Load encodes image i as a grayscale PNG. An image whose label is
// outside the classes is damaged: Load returns its Damage.
func (d *IDX) Load(i int) (Sample, error) {
	if err := d.damaged[i]; err != nil {
		return Sample{Item: d.items[i]}, err
	}
	h, w := d.Size()
	img := &image.Gray{Pix: d.Pixels(i), Stride: w, Rect: image.Rect(0, 0, w, h)}
	e, _ := d.pngPool.Get().(*pngEncoder)
	if e == nil {
		e = &pngEncoder{enc: png.Encoder{CompressionLevel: png.DefaultCompression, BufferPool: &encoderPool{}}}
	}
	e.buf.Reset()
	if err := e.enc.Encode(&e.buf, img); err != nil {
		return Sample{}, err
	}
	data := bytes.Clone(e.buf.Bytes())
	d.pngPool.Put(e)
	it := d.items[i]
	it.Size = int64(len(data))
	return Sample{Item: it, Data: data, Format: "png", Width: w, Height: h}, nil
}
