package source

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// TarGz is a set of WebDataset shards compressed with gzip (.tar.gz,
// .tgz), read as webdataset reads them: in order, member by member, since
// gzip has no random access. It is a Streaming dataset: each file's
// samples, grouped by key and labeled as in an uncompressed tar (see
// WDS), are read by a RecordReader. Offsets in records and errors are
// byte offsets in the decompressed tar.
type TarGz struct {
	files  []string
	counts []int
	wrong  []func(got string) error // per file, set by SetKeptCount
	opts   TarGzOptions
}

// TarGzOptions configure OpenTarGz. The zero value stops at the first
// damaged sample and reads labeled data.
type TarGzOptions struct {
	WDSOptions
	// Skip returns a damaged sample as a Record with Bad set and goes on
	// (damage in the gzip stream or a tar header ends the file: gzip
	// cannot be resynchronised); without it damage is the reader's
	// (sticky) error.
	Skip bool
}

var _ Streaming = (*TarGz)(nil)

// OpenTarGz opens gzip-compressed tar shards. Their sample counts are
// unknown (-1) until Count is called: counting reads every file whole.
func OpenTarGz(files []string, o TarGzOptions) (*TarGz, error) {
	if len(files) == 0 {
		return nil, errors.New("webdataset: no tar files")
	}
	t := &TarGz{files: files, counts: make([]int, len(files)), opts: o}
	for i, f := range files {
		fh, _, err := OpenFile(f)
		if err != nil {
			return nil, err
		}
		fh.Close()
		t.counts[i] = -1
	}
	return t, nil
}

// Count learns every file's sample count by reading it through; damage is
// the error (a *CorruptError at its offset in the decompressed tar).
func (t *TarGz) Count(ctx context.Context) error {
	for i := range t.files {
		if _, err := t.CountFile(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// CountFile learns file i's sample count by reading it through.
func (t *TarGz) CountFile(ctx context.Context, i int) (int, error) {
	n, err := t.count(ctx, i)
	if err != nil {
		return 0, err
	}
	t.counts[i] = n
	return n, nil
}

// SetCount records file i's sample count, known from elsewhere (a count
// kept from an earlier read of the same file).
func (t *TarGz) SetCount(i, n int) { t.counts[i] = n }

// SetKeptCount records file i's sample count, kept from an earlier read
// and so checked as the file is read: a file that holds a sample past n,
// or ends before it, fails its reader with wrong's error (got says how
// the file disagrees), never an epoch cut at the count.
func (t *TarGz) SetKeptCount(i, n int, wrong func(got string) error) {
	t.counts[i] = n
	if t.wrong == nil {
		t.wrong = make([]func(string) error, len(t.files))
	}
	t.wrong[i] = wrong
}

func (t *TarGz) count(ctx context.Context, i int) (int, error) {
	f, _, err := OpenFile(t.files[i])
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s, err := newTarGzStream(ctx, t.files[i], f)
	if err != nil {
		return 0, err
	}
	n, last := 0, ""
	for {
		h, _, err := s.next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
		if key, ok := memberKey(h); ok && (n == 0 || key != last) {
			n, last = n+1, key
		}
	}
}

// Kind returns "wds".
func (t *TarGz) Kind() string { return "wds" }

// Classes returns nil: the classes are not known without reading every
// file.
func (t *TarGz) Classes() []string { return nil }

// Close does nothing: each reader owns its file.
func (t *TarGz) Close() error { return nil }

// Files returns the files.
func (t *TarGz) Files() []string { return t.files }

// Counts returns each file's sample count, -1 until Count learned it.
func (t *TarGz) Counts() []int { return t.counts }

// Open returns a reader of file i's samples, in tar order, with IDs
// i<<32|sample.
func (t *TarGz) Open(ctx context.Context, i int) (RecordReader, error) {
	f, _, err := OpenFile(t.files[i])
	if err != nil {
		return nil, err
	}
	s, err := newTarGzStream(ctx, t.files[i], f)
	if err != nil {
		if t.opts.Skip && errors.Is(err, ErrCorrupt) {
			return &tarGzReader{f: f, bad: err, err: io.EOF}, nil
		}
		f.Close()
		return nil, err
	}
	r := &tarGzReader{s: s, f: f, id: uint64(i) << 32, opts: t.opts}
	if t.wrong != nil && t.wrong[i] != nil {
		r.want, r.wrong = t.counts[i], t.wrong[i]
	}
	return r, nil
}

// ErrNoLabel and ErrNoImageMember are the causes of a WebDataset sample's
// damage (errors.Is: a *CorruptError wraps them) when it has no label
// member (see WDSOptions.Unlabeled) or no image member: damage to a
// loader, not to a summary of the tar (faster inspect).
var (
	ErrNoLabel       = errors.New("webdataset: sample has no label member")
	ErrNoImageMember = errors.New("webdataset: sample has no image member")
)

// tarGzStream walks the members of a gzip-compressed tar, keeping the
// offsets in the decompressed stream.
type tarGzStream struct {
	ctx     context.Context
	path    string
	cr      *countReader
	tr      *tar.Reader
	nextHdr int64 // where the next header starts
}

func newTarGzStream(ctx context.Context, path string, f io.Reader) (*tarGzStream, error) {
	zr, err := gzip.NewReader(bufio.NewReaderSize(f, 256<<10))
	if err != nil {
		return nil, &CorruptError{Path: path, Offset: 0, Reason: "gzip: " + err.Error(), Err: err}
	}
	cr := &countReader{r: zr}
	return &tarGzStream{ctx: ctx, path: path, cr: cr, tr: tar.NewReader(cr)}, nil
}

// next returns the next member's header and the offset of its first
// header block (in the decompressed tar); damage is a *CorruptError.
func (s *tarGzStream) next() (*tar.Header, int64, error) {
	if err := s.ctx.Err(); err != nil {
		return nil, 0, err
	}
	hdrOff := s.nextHdr
	h, err := s.tr.Next()
	if err == io.EOF {
		return nil, 0, io.EOF
	}
	if err != nil {
		return nil, 0, s.damage(hdrOff, err, "tar header")
	}
	s.nextHdr = s.cr.n + (h.Size+511)/512*512
	return h, hdrOff, nil
}

// damage describes a failure to read at off: a broken gzip stream or tar.
func (s *tarGzStream) damage(off int64, err error, what string) error {
	reason := fmt.Sprintf("%s: %v", what, err)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		reason = what + ": the gzip stream ends early (truncated)"
	case errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader):
		reason = fmt.Sprintf("%s: gzip: %v", what, err)
	}
	return &CorruptError{Path: s.path, Offset: off, Reason: reason + " (offset in the decompressed tar)", Err: err}
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// memberKey is the webdataset key of a member, and whether it belongs to
// a sample (a regular file whose base name does not start with a dot).
func memberKey(h *tar.Header) (string, bool) {
	if h.Typeflag != tar.TypeReg {
		return "", false
	}
	key, _ := wdsSplit(h.Name)
	return key, key != "" && !strings.HasSuffix(key, "/")
}

// tarGzReader reads one file's samples.
type tarGzReader struct {
	s    *tarGzStream
	f    *os.File
	id   uint64
	i    uint64
	opts TarGzOptions
	cur  *gzSample
	bad  error // damage to return (Skip) before err
	err  error
	// want is the file's count kept from an earlier read, checked by
	// wrong (nil: no such count) as the samples are read.
	want  int
	wrong func(got string) error
}

// gzSample is a sample being read.
type gzSample struct {
	key   string
	off   int64
	data  []byte
	img   string // the image member's extension, "" if none yet
	label wdsLabel
	exts  []string
	bad   error
}

// Next returns the next sample. Under Skip a damaged sample is returned
// with Bad set and reading goes on; damage in the stream ends the file.
func (r *tarGzReader) Next() (Record, error) {
	if r.bad != nil {
		bad := r.bad
		r.bad = nil
		return Record{Path: r.path(), Offset: offsetOf(bad), Bad: bad}, nil
	}
	if r.err != nil {
		return Record{}, r.err
	}
	for {
		h, off, err := r.s.next()
		if err == io.EOF {
			r.err = io.EOF
			if n := r.i + uint64(btoi(r.cur != nil)); r.wrong != nil && n != uint64(r.want) {
				r.err = r.wrong(fmt.Sprintf("the file ends after %d", n))
				return Record{}, r.err
			}
			if r.cur != nil {
				done := r.cur
				r.cur = nil
				return r.finish(done)
			}
			return Record{}, io.EOF
		}
		if err != nil {
			return r.fail(err)
		}
		key, ok := memberKey(h)
		if !ok {
			continue
		}
		var done *gzSample
		if r.cur != nil && r.cur.key != key {
			done, r.cur = r.cur, nil
		}
		if r.cur == nil {
			r.cur = &gzSample{key: key, off: off}
		}
		if err := r.add(r.cur, h, off); err != nil {
			return r.fail(err)
		}
		if done != nil {
			if r.wrong != nil && r.i+1 >= uint64(r.want) {
				// The last sample the count allows, and another follows:
				// fail now, before an epoch planned by the count ends.
				r.err = r.wrong(fmt.Sprintf("it holds more: a sample at offset %d (in the decompressed tar) past the count", off))
				return Record{}, r.err
			}
			return r.finish(done)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fail ends the file at damage err: the sample being read is lost with
// it.
func (r *tarGzReader) fail(err error) (Record, error) {
	r.cur, r.wrong = nil, nil // damage: the count no longer tells
	if r.opts.Skip && errors.Is(err, ErrCorrupt) {
		r.err = io.EOF
		return Record{Path: r.path(), Offset: offsetOf(err), Bad: err}, nil
	}
	r.err = err
	return Record{}, err
}

func (r *tarGzReader) path() string {
	if r.s == nil {
		return r.f.Name()
	}
	return r.s.path
}

func offsetOf(err error) int64 {
	var ce *CorruptError
	if errors.As(err, &ce) {
		return ce.Offset
	}
	return -1
}

// add reads member h of sample s (its data when s needs it: the first
// image, a label member).
func (r *tarGzReader) add(s *gzSample, h *tar.Header, off int64) error {
	_, ext := wdsSplit(h.Name)
	s.exts = append(s.exts, ext)
	last := ext[strings.LastIndexByte(ext, '.')+1:]
	read := func() ([]byte, error) {
		// The size in the header is not checked against a file's size
		// (the stream's is unknown): the buffer grows as the data comes.
		buf := bytes.NewBuffer(make([]byte, 0, min(h.Size, 1<<20)))
		if n, err := io.CopyN(buf, r.s.tr, h.Size); err != nil || n != h.Size {
			return nil, r.s.damage(off, cmpErr(err, io.ErrUnexpectedEOF), fmt.Sprintf("member %q", h.Name))
		}
		return buf.Bytes(), nil
	}
	switch {
	case s.img == "" && wdsIsImageExt(ext):
		s.img = ext
		if h.Size > MaxFileSize {
			s.bad = &CorruptError{Path: r.s.path, Key: s.key, Offset: off, Reason: fmt.Sprintf("member %s: %d bytes, above the %d-byte cap on one sample", ext, h.Size, MaxFileSize)}
			return nil
		}
		b, err := read()
		if err != nil {
			return err
		}
		s.data = b
	case last == "cls" && h.Size < 64, last == "json" && h.Size < 1<<20:
		b, err := read()
		if err != nil {
			return err
		}
		s.label.add(last, b)
	}
	return nil
}

// cmpErr is err, or def when err is nil.
func cmpErr(err, def error) error {
	if err == nil {
		return def
	}
	return err
}

// finish turns a sample read whole into a Record, or its damage.
func (r *tarGzReader) finish(s *gzSample) (Record, error) {
	id := r.id | r.i
	r.i++
	rec := Record{Key: s.key, ID: id, Path: r.s.path, Offset: s.off}
	if s.img != "" {
		rec.Key = s.key + "." + s.img
	}
	label, filename, why := s.label.result(r.opts.Unlabeled, s.exts)
	if filename != "" {
		rec.Key = filename
	}
	err := s.bad
	switch {
	case err != nil:
	case s.img == "":
		err = &CorruptError{Path: r.s.path, Key: s.key, Offset: s.off, Reason: "sample has no image member", Err: ErrNoImageMember}
	case why != "":
		var cause error
		if s.label.label == nil && s.label.bad == "" {
			cause = ErrNoLabel
		}
		err = &CorruptError{Path: r.s.path, Key: s.key, Offset: s.off, Reason: why, Err: cause}
	case label > MaxLabel:
		err = labelError(r.s.path, s.key, s.off, label)
	case Sniff(s.data) == "":
		err = &CorruptError{Path: r.s.path, Key: s.key, Offset: s.off, Reason: fmt.Sprintf("member %s: not an image", s.img), Err: ErrNotImage}
	}
	if err != nil {
		if r.opts.Skip {
			rec.Bad = err
			return rec, nil
		}
		r.err = err
		return rec, err
	}
	rec.Label, rec.Data = label, s.data
	return rec, nil
}

// Close closes the file.
func (r *tarGzReader) Close() error {
	if r.err == nil {
		r.err = errors.New("webdataset: reader closed")
	}
	return r.f.Close()
}

// wdsLabel gathers a sample's label from its members, by webdataset's
// conventions: a .cls member (decimal text) or a .json member's "label";
// a .json's "filename" names the item.
type wdsLabel struct {
	label    *int
	filename string
	bad      string
}

// add reads member data b of extension last ("cls" or "json").
func (l *wdsLabel) add(last string, b []byte) {
	switch last {
	case "cls":
		if l.label != nil {
			return
		}
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			l.label = &v
		} else {
			l.bad = fmt.Sprintf("member cls: label %q is not an integer", shorten(strings.TrimSpace(string(b))))
		}
	case "json":
		var meta struct {
			Label    *int   `json:"label"`
			Filename string `json:"filename"`
		}
		if err := json.Unmarshal(b, &meta); err == nil {
			if l.label == nil && meta.Label != nil {
				l.label = meta.Label
			}
			l.filename = meta.Filename
		} else if l.label == nil {
			l.bad = fmt.Sprintf("member json: %v", err)
		}
	}
}

// result returns the label, the item's filename ("" if none) and why the
// label is unusable ("" if it is fine): a sample without a label member
// is damaged unless unlabeled.
func (l *wdsLabel) result(unlabeled bool, exts []string) (label int, filename, why string) {
	switch {
	case l.label != nil && *l.label < 0:
		return 0, l.filename, fmt.Sprintf("negative label %d", *l.label)
	case l.label != nil:
		return *l.label, l.filename, ""
	case l.bad != "":
		return 0, l.filename, l.bad
	case unlabeled:
		return 0, l.filename, ""
	}
	return 0, l.filename, noLabel(exts)
}

// noLabel is the damage of a sample without a label member.
func noLabel(exts []string) string {
	return fmt.Sprintf("no label: no .cls member and no .json with \"label\" (members: %s); a sample is never class 0 for lack of its label (read unlabeled data with --unlabeled)", strings.Join(exts, ", "))
}
