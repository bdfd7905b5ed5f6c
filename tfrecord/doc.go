// Package tfrecord reads and writes TFRecord files, byte-compatible with
// TensorFlow's tf.io.TFRecordWriter / TFRecordDataset (uncompressed), and
// their index files in NVIDIA DALI's tfrecord2idx format.
//
// # On-disk layout
//
// A TFRecord file is a plain concatenation of framed records, with no file
// header or trailer. Each record is:
//
//	+----------------+-------------------+----------------+------------------+
//	| length  uint64 | lengthCRC  uint32 | data  [length] | dataCRC   uint32 |
//	+----------------+-------------------+----------------+------------------+
//	  8 bytes LE       4 bytes LE          length bytes     4 bytes LE
//
// lengthCRC is the masked CRC-32C (Castagnoli) of the 8 length bytes and
// dataCRC the masked CRC-32C of the data. The mask is
//
//	masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8   (uint32 arithmetic)
//
// It exists because computing the CRC of a string that itself contains
// embedded CRCs weakens the checksum; rotating and adding a constant makes
// the stored value differ from a plain CRC (the same scheme as LevelDB's
// log and pebble's record format). A framed record therefore takes
// len(data)+16 bytes (HeaderSize + FooterSize).
//
// # Index files
//
// DALI's tfrecord2idx writes one line per record, "offset size\n", both
// decimal, where offset is the byte offset of the record's length field and
// size covers the whole framed record (len(data)+16). WriteIndex and
// ReadIndex use that format; BuildIndex scans a file to produce it.
//
// # Errors
//
// Damage is reported as a *CorruptError carrying the file name and the byte
// offset of the record (or field) where it was found; errors.Is(err,
// ErrCorrupt) holds for every such error, truncation included, at any depth
// of wrapping. A Reader keeps its first error: every later call returns it.
//
// # Usage
//
//	r := tfrecord.NewReader(f, tfrecord.WithName(path))
//	var buf []byte
//	for {
//		rec, err := r.ReadRecord(buf[:0]) // appends to buf's storage
//		if err == io.EOF {
//			break
//		}
//		if err != nil {
//			return err // errors.Is(err, tfrecord.ErrCorrupt) on damage
//		}
//		buf = rec
//	}
//
//	w := tfrecord.NewWriter(f)
//	w.Write(data) // then w.Close() to flush
//
// A Reader or Writer is not safe for concurrent use; use one per goroutine.
// The package imports only the standard library.
package tfrecord
