package tfrecord

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// IndexEntry locates one framed record in a TFRecord file: Offset is the
// byte offset of its length field and Size the whole framed record
// (len(data)+FrameSize), as in DALI's tfrecord2idx.
type IndexEntry struct {
	Offset int64
	Size   int64
}

// DataSize returns the length of the record's data.
func (e IndexEntry) DataSize() int64 { return e.Size - FrameSize }

// WriteIndex writes entries in tfrecord2idx format: "offset size\n" lines.
func WriteIndex(w io.Writer, entries []IndexEntry) error {
	bw := bufio.NewWriter(w)
	var line []byte
	for _, e := range entries {
		line = strconv.AppendInt(line[:0], e.Offset, 10)
		line = append(line, ' ')
		line = strconv.AppendInt(line, e.Size, 10)
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ReadIndex parses a tfrecord2idx index. name is used in errors, which are
// *CorruptError with the byte offset of the bad line. Entries must be in
// increasing, non-overlapping order with Size >= FrameSize.
func ReadIndex(r io.Reader, name string) ([]IndexEntry, error) {
	br := bufio.NewReader(r)
	var entries []IndexEntry
	var off int64
	next := int64(0)
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF && line == "" {
			return entries, nil
		}
		if err != nil && err != io.EOF {
			return entries, fmt.Errorf("%s: %w", name, err)
		}
		lineOff := off
		off += int64(len(line))
		s := strings.TrimSpace(line)
		if s == "" {
			continue
		}
		bad := func(reason string) error {
			return &CorruptError{Path: name, Offset: lineOff, Reason: fmt.Sprintf("index line %d: %s", len(entries)+1, reason)}
		}
		f := strings.Fields(s)
		if len(f) != 2 {
			return entries, bad(fmt.Sprintf("want \"offset size\", got %q", s))
		}
		o, err1 := strconv.ParseInt(f[0], 10, 64)
		sz, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || o < 0 {
			return entries, bad(fmt.Sprintf("bad numbers in %q", s))
		}
		if sz < FrameSize {
			return entries, bad(fmt.Sprintf("record size %d below the %d-byte frame", sz, FrameSize))
		}
		if o < next {
			return entries, bad(fmt.Sprintf("offset %d overlaps the previous record ending at %d", o, next))
		}
		next = o + sz
		entries = append(entries, IndexEntry{Offset: o, Size: sz})
	}
}

// BuildIndex scans a TFRecord stream, checking every record's CRCs, and
// returns its index.
func BuildIndex(r io.Reader, opts ...Option) ([]IndexEntry, error) {
	rd := NewReader(r, opts...)
	var entries []IndexEntry
	var buf []byte
	for {
		off := rd.Offset()
		rec, err := rd.ReadRecord(buf[:0])
		if err == io.EOF {
			return entries, nil
		}
		if err != nil {
			return entries, err
		}
		buf = rec
		entries = append(entries, IndexEntry{Offset: off, Size: int64(len(rec)) + FrameSize})
	}
}
