package tfrecord

import (
	"encoding/binary"
	"hash/crc32"
)

// Sizes of the frame around each record's data. These are part of the
// TFRecord format and must not change.
const (
	HeaderSize = 12 // uint64 length + uint32 masked CRC of the length
	FooterSize = 4  // uint32 masked CRC of the data
	// FrameSize is the bytes a record takes beyond its data.
	FrameSize = HeaderSize + FooterSize
)

// maskDelta is TensorFlow's CRC mask constant. It must not change.
const maskDelta = 0xa282ead8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MaskedCRC returns the masked CRC-32C of b, as stored in TFRecord frames.
func MaskedCRC(b []byte) uint32 {
	return Mask(crc32.Checksum(b, castagnoli))
}

// Mask applies TensorFlow's CRC mask: rotate right by 15 and add a constant.
func Mask(crc uint32) uint32 {
	return ((crc >> 15) | (crc << 17)) + maskDelta
}

// Unmask inverts Mask.
func Unmask(masked uint32) uint32 {
	rot := masked - maskDelta
	return (rot >> 17) | (rot << 15)
}

// AppendRecord appends the framed form of data to dst and returns it.
func AppendRecord(dst, data []byte) []byte {
	var hdr [HeaderSize]byte
	binary.LittleEndian.PutUint64(hdr[:8], uint64(len(data)))
	binary.LittleEndian.PutUint32(hdr[8:], MaskedCRC(hdr[:8]))
	dst = append(dst, hdr[:]...)
	dst = append(dst, data...)
	return binary.LittleEndian.AppendUint32(dst, MaskedCRC(data))
}

// updateCRC continues a CRC-32C over b (first: start a new one).
func updateCRC(crc uint32, b []byte, first bool) uint32 {
	if first {
		return crc32.Checksum(b, castagnoli)
	}
	return crc32.Update(crc, castagnoli, b)
}
