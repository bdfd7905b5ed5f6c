package shard

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/tfexample"
	"github.com/faster-training/faster/tfrecord"
)

// sink writes one shard's samples in a format and its index.
type sink interface {
	write(s source.Sample) (size int64, err error) // bytes the sample took in the shard
	close() error                                  // ends the shard (tar: end-of-archive blocks)
	writeIndex(w io.Writer) error
	records() int
	offset() int64 // bytes written
}

func newSink(format string, w io.Writer, classes []string) sink {
	if format == FormatWDS {
		cw := &countWriter{w: w}
		return &wdsSink{cw: cw, tw: tar.NewWriter(cw), classes: classes}
	}
	return &tfrecordSink{w: tfrecord.NewWriter(w), classes: classes}
}

type tfrecordSink struct {
	w       *tfrecord.Writer
	classes []string
	index   []tfrecord.IndexEntry
	buf     []byte
}

func (t *tfrecordSink) write(s source.Sample) (int64, error) {
	ex := tfexample.New().
		SetBytes(KeyEncoded, s.Data).
		SetString(KeyFormat, s.Format).
		SetInt64(KeyLabel, int64(s.Label)).
		SetString(KeyClassText, className(t.classes, s.Label)).
		SetString(KeyFilename, s.Key)
	if s.Width > 0 && s.Height > 0 {
		ex.SetInt64(KeyHeight, int64(s.Height)).SetInt64(KeyWidth, int64(s.Width))
	}
	t.buf = ex.Marshal(t.buf[:0])
	off := t.w.Offset()
	if err := t.w.Write(t.buf); err != nil {
		return 0, err
	}
	t.index = append(t.index, tfrecord.IndexEntry{Offset: off, Size: t.w.Offset() - off})
	return t.w.Offset() - off, nil
}

func (t *tfrecordSink) close() error                 { return t.w.Close() }
func (t *tfrecordSink) writeIndex(w io.Writer) error { return tfrecord.WriteIndex(w, t.index) }
func (t *tfrecordSink) records() int                 { return len(t.index) }
func (t *tfrecordSink) offset() int64                { return t.w.Offset() }

func className(classes []string, label int) string {
	if label >= 0 && label < len(classes) {
		return classes[label]
	}
	return strconv.Itoa(label)
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// wdsSink writes WebDataset samples into a tar stream.
type wdsSink struct {
	cw      *countWriter
	tw      *tar.Writer
	classes []string
	index   []source.WDSIndexSample
	keys    map[string]bool // the keys written
}

// WDSKey returns the webdataset key of an item key: its path without the
// extension, with the dots of the base name replaced by "_" (webdataset
// splits a member name at the first dot of its base name), and so is
// white space anywhere (a wds2idx index line separates its fields by
// white space: DALI's reader and ours would split a name holding one);
// an empty base name (a file named .jpg) is "_". The item key is kept
// whole in the sample's .json ("filename").
func WDSKey(itemKey string) string {
	dir, base := path.Split(itemKey)
	base = strings.TrimSuffix(base, path.Ext(base))
	if base == "" {
		base = "_" // a file named .jpg: "cls/" is no sample's key
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return '_'
		}
		return r
	}, dir+strings.ReplaceAll(base, ".", "_"))
}

// wdsExt is a member extension for an image format.
func wdsExt(format string) string {
	switch format {
	case "jpeg":
		return "jpg"
	case "":
		return "bin"
	}
	return format
}

var wdsTime = time.Unix(0, 0)

func (t *wdsSink) member(name string, data []byte) (source.WDSIndexMember, error) {
	// USTAR where it can hold the name (the common case: no PAX records),
	// else a PAX "path" record, as Python's tarfile (PAX by default) and
	// GNU tar --format=pax write a name that is too long for USTAR's 100
	// bytes or not ASCII (USTAR's fields are ASCII: café.jpg).
	hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: wdsTime, Typeflag: tar.TypeReg, Format: tar.FormatUSTAR}
	if !ustarName(name) {
		hdr.Format = tar.FormatPAX
	}
	if err := t.tw.WriteHeader(hdr); err != nil {
		return source.WDSIndexMember{}, fmt.Errorf("tar member %q: %w", name, err)
	}
	off := t.cw.n // the header is written: the data starts here
	if _, err := t.tw.Write(data); err != nil {
		return source.WDSIndexMember{}, err
	}
	ext := name[strings.LastIndexByte(name, '/')+1:]
	if i := strings.IndexByte(ext, '.'); i >= 0 {
		ext = ext[i+1:]
	}
	return source.WDSIndexMember{Ext: ext, Offset: off, Size: int64(len(data)), Name: name}, nil
}

// ustarName reports whether a USTAR header's name field holds name
// whole: at most 100 bytes of ASCII with no NUL.
func ustarName(name string) bool {
	if len(name) > 100 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c == 0 || c >= 0x80 {
			return false
		}
	}
	return true
}

func (t *wdsSink) write(s source.Sample) (int64, error) {
	start := t.cw.n
	if t.keys == nil {
		t.keys = map[string]bool{}
	}
	// Two items with one key (a.b.jpg and a_b.png) are kept apart by a
	// suffix that no other item of the shard has taken: webdataset
	// groups consecutive members of one key into one sample.
	base := WDSKey(s.Key)
	key := base
	for n := 1; t.keys[key]; n++ {
		key = fmt.Sprintf("%s_%d", base, n)
	}
	t.keys[key] = true
	meta, _ := json.Marshal(struct {
		Label    int    `json:"label"`
		Class    string `json:"class"`
		Filename string `json:"filename"`
		Format   string `json:"format"`
		Width    int    `json:"width,omitempty"`
		Height   int    `json:"height,omitempty"`
	}{s.Label, className(t.classes, s.Label), s.Key, s.Format, s.Width, s.Height})
	var smp source.WDSIndexSample
	for _, m := range []struct {
		ext  string
		data []byte
	}{{wdsExt(s.Format), s.Data}, {"cls", []byte(strconv.Itoa(s.Label))}, {"json", meta}} {
		im, err := t.member(key+"."+m.ext, m.data)
		if err != nil {
			return 0, err
		}
		smp.Members = append(smp.Members, im)
	}
	if err := t.tw.Flush(); err != nil { // pad the last member to its block
		return 0, err
	}
	t.index = append(t.index, smp)
	return t.cw.n - start, nil
}

func (t *wdsSink) close() error                 { return t.tw.Close() }
func (t *wdsSink) writeIndex(w io.Writer) error { return source.WriteWDSIndex(w, t.index) }
func (t *wdsSink) records() int                 { return len(t.index) }
func (t *wdsSink) offset() int64                { return t.cw.n }
