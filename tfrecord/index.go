package tfrecord

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
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
// increasing, non-overlapping order with Size >= FrameSize, and no entry
// may end past the largest int64. ReadIndex does not know the data file:
// before allocating or reading by an entry's size, check the index against
// the file with ReadIndexFor.
func ReadIndex(r io.Reader, name string) ([]IndexEntry, error) {
	return readIndex(r, name, nil)
}

// ReadIndexFor parses the index of the data file dataName, dataSize bytes
// long, and checks it against the file: the records must tile the file
// exactly (the first at offset 0, each where the previous ends, the last
// ending at dataSize). An index that disagrees is stale (written for
// another version of the shard) and gives a *CorruptError naming the index
// line, the data file and the offset where they part; so no size read from
// the index is larger than the file.
func ReadIndexFor(r io.Reader, name, dataName string, dataSize int64) ([]IndexEntry, error) {
	c := &indexCheck{data: dataName, size: dataSize}
	entries, err := readIndex(r, name, c)
	if err != nil {
		return entries, err
	}
	if c.next != dataSize {
		return entries, &CorruptError{Path: name, Offset: c.end, Reason: fmt.Sprintf("stale index: its %d records end at offset %d of %s, which has %d bytes", len(entries), c.next, dataName, dataSize), Err: ErrStaleIndex}
	}
	return entries, nil
}

// ErrStaleIndex is the cause (errors.Is) of an index that disagrees with
// its data file.
var ErrStaleIndex = errors.New("index does not match its data file")

// indexCheck is the data file an index is checked against while parsed.
type indexCheck struct {
	data string
	size int64
	next int64 // where the next record must start
	end  int64 // byte offset of the end of the index
}

func readIndex(r io.Reader, name string, c *indexCheck) ([]IndexEntry, error) {
	br := bufio.NewReader(r)
	var entries []IndexEntry
	var off int64
	next := int64(0)
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF && line == "" {
			if c != nil {
				c.next, c.end = next, off
			}
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
			return entries, bad(fmt.Sprintf("want \"offset size\", got %q", truncate(s, 80)))
		}
		o, err1 := strconv.ParseInt(f[0], 10, 64)
		sz, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || o < 0 {
			return entries, bad(fmt.Sprintf("bad numbers in %q", truncate(s, 80)))
		}
		if sz < FrameSize {
			return entries, bad(fmt.Sprintf("record size %d below the %d-byte frame", sz, FrameSize))
		}
		if sz > math.MaxInt64-o {
			return entries, bad(fmt.Sprintf("record at offset %d of size %d ends past the largest file offset", o, sz))
		}
		if o < next {
			return entries, bad(fmt.Sprintf("offset %d overlaps the previous record ending at %d", o, next))
		}
		if c != nil {
			if o != next {
				e := bad(fmt.Sprintf("stale index: record at offset %d of %s, but the previous record ends at %d", o, c.data, next))
				e.(*CorruptError).Err = ErrStaleIndex
				return entries, e
			}
			if sz > c.size-o {
				e := bad(fmt.Sprintf("stale index: record at offset %d of %s has %d bytes, past the file's end at %d", o, c.data, sz, c.size))
				e.(*CorruptError).Err = ErrStaleIndex
				return entries, e
			}
		}
		next = o + sz
		entries = append(entries, IndexEntry{Offset: o, Size: sz})
	}
}

// truncate shortens s to at most n bytes for an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
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
