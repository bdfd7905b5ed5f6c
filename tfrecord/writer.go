package tfrecord

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
)

// ErrClosed is returned by a Writer used after Close.
var ErrClosed = errors.New("tfrecord: writer closed")

// Writer writes framed records to an io.Writer. It buffers; call Flush or
// Close to push the bytes out. Close does not close the underlying writer.
type Writer struct {
	bw   *bufio.Writer
	off  int64
	err  error // sticky
	hdr  [HeaderSize]byte
	foot [FooterSize]byte
}

// NewWriter returns a Writer appending records to w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{bw: bufio.NewWriterSize(w, 256<<10)}
}

// Offset returns the number of bytes written so far, which is the offset
// of the next record when the stream starts a file.
func (w *Writer) Offset() int64 { return w.off }

// Write writes data as one record.
func (w *Writer) Write(data []byte) error {
	if w.err != nil {
		return w.err
	}
	binary.LittleEndian.PutUint64(w.hdr[:8], uint64(len(data)))
	binary.LittleEndian.PutUint32(w.hdr[8:], MaskedCRC(w.hdr[:8]))
	binary.LittleEndian.PutUint32(w.foot[:], MaskedCRC(data))
	if _, err := w.bw.Write(w.hdr[:]); err != nil {
		w.err = err
		return err
	}
	if _, err := w.bw.Write(data); err != nil {
		w.err = err
		return err
	}
	if _, err := w.bw.Write(w.foot[:]); err != nil {
		w.err = err
		return err
	}
	w.off += int64(len(data)) + FrameSize
	return nil
}

// Flush writes buffered data to the underlying writer.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = err
	}
	return w.err
}

// Close flushes the Writer; later writes return ErrClosed. It does not
// close the underlying writer.
func (w *Writer) Close() error {
	if err := w.Flush(); err != nil {
		return err
	}
	w.err = ErrClosed
	return nil
}
