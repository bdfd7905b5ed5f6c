package tfrecord

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// readChunk bounds how far a Reader grows its buffer ahead of the bytes it
// has actually read, so a forged length field cannot make it allocate more
// than the input justifies.
const readChunk = 1 << 20

// DefaultMaxRecordSize is the largest record a Reader accepts unless
// WithMaxRecordSize says otherwise (4 GiB).
const DefaultMaxRecordSize = 1 << 32

// Option configures a Reader.
type Option func(*Reader)

// WithName sets the file name reported in errors.
func WithName(name string) Option { return func(r *Reader) { r.name = name } }

// WithVerify turns the data CRC check on (the default) or off. The length
// CRC is always checked: it is cheap and guards the framing.
func WithVerify(verify bool) Option { return func(r *Reader) { r.verify = verify } }

// WithMaxRecordSize rejects records larger than n bytes as corrupt.
func WithMaxRecordSize(n int64) Option { return func(r *Reader) { r.maxSize = n } }

// WithOffset sets the file offset of the reader's first byte, for readers
// that start in the middle of a file, so errors and Offset report file
// offsets.
func WithOffset(off int64) Option { return func(r *Reader) { r.off = off } }

// WithBufferSize sets the read buffer size (default 256 KiB).
func WithBufferSize(n int) Option { return func(r *Reader) { r.bufSize = n } }

// Reader reads records from a TFRecord stream. See the package doc.
type Reader struct {
	br      *bufio.Reader
	name    string
	verify  bool
	maxSize int64
	bufSize int
	off     int64 // offset of the next record
	err     error // sticky
	buf     []byte
	hdr     [HeaderSize]byte
	foot    [FooterSize]byte
}

// NewReader returns a Reader reading records from r.
func NewReader(r io.Reader, opts ...Option) *Reader {
	rd := &Reader{verify: true, maxSize: DefaultMaxRecordSize, bufSize: 256 << 10}
	for _, o := range opts {
		o(rd)
	}
	rd.br = bufio.NewReaderSize(r, rd.bufSize)
	return rd
}

// Offset returns the byte offset of the next record to be read.
func (r *Reader) Offset() int64 { return r.off }

// Next returns the next record's data. The slice is valid until the next
// call on r. At the end of the stream it returns io.EOF.
func (r *Reader) Next() ([]byte, error) {
	rec, err := r.ReadRecord(r.buf[:0])
	if err == nil {
		r.buf = rec
	}
	return rec, err
}

// ReadRecord appends the next record's data to dst and returns the
// extended slice. At the end of the stream it returns dst, io.EOF.
func (r *Reader) ReadRecord(dst []byte) ([]byte, error) {
	n, err := r.readHeader()
	if err != nil {
		return dst, err
	}
	start := len(dst)
	dst, err = r.readData(dst, n)
	if err != nil {
		return dst[:start], r.fail(r.off, "truncated data", err)
	}
	if _, err := io.ReadFull(r.br, r.foot[:]); err != nil {
		return dst[:start], r.fail(r.off, "truncated data CRC", err)
	}
	if r.verify {
		want := binary.LittleEndian.Uint32(r.foot[:])
		if got := MaskedCRC(dst[start:]); got != want {
			return dst[:start], r.fail(r.off, fmt.Sprintf("data CRC mismatch (record of %d bytes)", n), nil)
		}
	}
	r.off += int64(n) + FrameSize
	return dst, nil
}

// Skip moves past the next record without reading or checking its data
// (the length CRC is still checked). It returns io.EOF at the end.
func (r *Reader) Skip() error {
	n, err := r.readHeader()
	if err != nil {
		return err
	}
	want := int64(n) + FooterSize
	got, err := r.br.Discard(int(want))
	if int64(got) < want {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return r.fail(r.off, "truncated record", err)
	}
	r.off += int64(n) + FrameSize
	return nil
}

// readHeader reads and checks a length field, returning io.EOF at a clean
// end of stream.
func (r *Reader) readHeader() (uint64, error) {
	if r.err != nil {
		return 0, r.err
	}
	k, err := io.ReadFull(r.br, r.hdr[:])
	if err != nil {
		if err == io.EOF && k == 0 {
			r.err = io.EOF
			return 0, io.EOF
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return 0, r.fail(r.off, fmt.Sprintf("truncated header (%d of %d bytes)", k, HeaderSize), io.ErrUnexpectedEOF)
		}
		return 0, r.ioFail(err)
	}
	n := binary.LittleEndian.Uint64(r.hdr[:8])
	if want := binary.LittleEndian.Uint32(r.hdr[8:]); MaskedCRC(r.hdr[:8]) != want {
		return 0, r.fail(r.off, "length CRC mismatch", nil)
	}
	if n > uint64(r.maxSize) {
		return 0, r.fail(r.off, fmt.Sprintf("record length %d exceeds limit %d", n, r.maxSize), nil)
	}
	return n, nil
}

// readData appends n bytes to dst, growing it at most readChunk beyond
// what has been read.
func (r *Reader) readData(dst []byte, n uint64) ([]byte, error) {
	for n > 0 {
		c := n
		if uint64(cap(dst)-len(dst)) < n {
			c = min(n, readChunk) // grow only as the bytes arrive
			dst = slices.Grow(dst, int(c))
		}
		k, err := io.ReadFull(r.br, dst[len(dst):len(dst)+int(c)])
		dst = dst[:len(dst)+k]
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return dst, err
		}
		n -= c
	}
	return dst, nil
}

func (r *Reader) fail(off int64, reason string, cause error) error {
	if cause == io.EOF {
		cause = io.ErrUnexpectedEOF
	}
	if cause != nil && cause != io.ErrUnexpectedEOF && !errors.Is(cause, io.ErrUnexpectedEOF) {
		return r.ioFail(cause)
	}
	r.err = &CorruptError{Path: r.name, Offset: off, Reason: reason, Err: cause}
	return r.err
}

func (r *Reader) ioFail(err error) error {
	if r.name != "" {
		err = fmt.Errorf("%s: offset %d: %w", r.name, r.off, err)
	}
	r.err = err
	return err
}

// Unframe parses one framed record at the start of b, checking both CRCs,
// and returns its data (aliasing b) and the bytes after it. off is the
// file offset of b[0], used in errors.
func Unframe(b []byte, name string, off int64) (data, rest []byte, err error) {
	bad := func(reason string, cause error) error {
		return &CorruptError{Path: name, Offset: off, Reason: reason, Err: cause}
	}
	if len(b) < HeaderSize {
		return nil, b, bad(fmt.Sprintf("truncated header (%d of %d bytes)", len(b), HeaderSize), io.ErrUnexpectedEOF)
	}
	n := binary.LittleEndian.Uint64(b[:8])
	if MaskedCRC(b[:8]) != binary.LittleEndian.Uint32(b[8:12]) {
		return nil, b, bad("length CRC mismatch", nil)
	}
	if n > uint64(len(b)-FrameSize) || len(b) < FrameSize {
		return nil, b, bad(fmt.Sprintf("truncated record: length %d, %d bytes present", n, len(b)-HeaderSize), io.ErrUnexpectedEOF)
	}
	data = b[HeaderSize : HeaderSize+n]
	if MaskedCRC(data) != binary.LittleEndian.Uint32(b[HeaderSize+n:]) {
		return nil, b, bad(fmt.Sprintf("data CRC mismatch (record of %d bytes)", n), nil)
	}
	return data, b[FrameSize+n:], nil
}
