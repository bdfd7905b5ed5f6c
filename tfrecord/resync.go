package tfrecord

import (
	"encoding/binary"
	"io"
)

// resyncWindow is how many bytes Resync scans per read.
const resyncWindow = 1 << 20

// Resync recovers a Reader after corruption: it scans src (the same bytes
// the Reader reads, addressed by the offsets Offset reports, such as the
// *os.File the Reader was opened on) forward from one byte past the start
// of the damaged record for the first offset where a whole record frames
// correctly — its length CRC and its data CRC both verify — and moves the
// Reader there, clearing the sticky error. It returns the offset it
// resumed at and the number of bytes skipped. When no record follows it
// returns io.EOF (and the Reader returns io.EOF from then on). After an
// I/O error (not corruption) Resync returns that error.
//
// A false match needs two 32-bit CRCs to agree by chance.
func (r *Reader) Resync(src io.ReaderAt) (resumed, skipped int64, err error) {
	ce, ok := r.err.(*CorruptError)
	if !ok {
		if r.err == nil {
			return r.off, 0, nil
		}
		return r.off, 0, r.err
	}
	from := ce.Offset + 1
	var win []byte
	for base := from; ; {
		win = win[:0]
		if cap(win) < resyncWindow+HeaderSize {
			win = make([]byte, 0, resyncWindow+HeaderSize)
		}
		n, rerr := src.ReadAt(win[:resyncWindow+HeaderSize], base)
		win = win[:n]
		for i := 0; i+HeaderSize <= len(win); i++ {
			h := win[i : i+HeaderSize]
			if MaskedCRC(h[:8]) != binary.LittleEndian.Uint32(h[8:]) {
				continue
			}
			length := binary.LittleEndian.Uint64(h[:8])
			if length > uint64(r.maxSize) {
				continue
			}
			p := base + int64(i)
			if !frameOK(src, p, length) {
				continue
			}
			r.off, r.err = p, nil
			r.br.Reset(io.NewSectionReader(src, p, 1<<62))
			return p, p - ce.Offset, nil
		}
		if rerr != nil && rerr != io.EOF {
			return r.off, 0, rerr
		}
		if n < resyncWindow+HeaderSize {
			end := base + int64(n)
			r.off, r.err = end, io.EOF
			return end, end - ce.Offset, io.EOF
		}
		base += resyncWindow
	}
}

// frameOK reports whether a record of length bytes at p has a matching data
// CRC in src.
func frameOK(src io.ReaderAt, p int64, length uint64) bool {
	buf := make([]byte, min(length, readChunk)+0)
	var crc uint32
	first := true
	for done := uint64(0); done < length; {
		c := min(length-done, uint64(len(buf)))
		if _, err := src.ReadAt(buf[:c], p+HeaderSize+int64(done)); err != nil {
			return false
		}
		crc = updateCRC(crc, buf[:c], first)
		first = false
		done += c
	}
	var foot [FooterSize]byte
	if _, err := src.ReadAt(foot[:], p+HeaderSize+int64(length)); err != nil {
		return false
	}
	return Mask(crc) == binary.LittleEndian.Uint32(foot[:])
}
