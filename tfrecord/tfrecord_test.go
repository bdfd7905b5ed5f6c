package tfrecord

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
)

// Golden values computed independently: CRC-32C("123456789") is the
// standard check value 0xE3069283 (RFC 3720, B.4).
func TestMaskedCRCGolden(t *testing.T) {
	if got := crc32.Checksum([]byte("123456789"), castagnoli); got != 0xe3069283 {
		t.Fatalf("crc32c check value = %#x", got)
	}
	// RFC 3720 B.4: 32 zero bytes and 32 0xff bytes.
	if got := crc32.Checksum(make([]byte, 32), castagnoli); got != 0x8a9136aa {
		t.Fatalf("crc32c(32 zeros) = %#x", got)
	}
	if got := crc32.Checksum(bytes.Repeat([]byte{0xff}, 32), castagnoli); got != 0x62a8ab43 {
		t.Fatalf("crc32c(32 x 0xff) = %#x", got)
	}
	c := uint32(0xe3069283)
	want := ((c >> 15) | (c << 17)) + 0xa282ead8
	if got := MaskedCRC([]byte("123456789")); got != want {
		t.Fatalf("MaskedCRC = %#x, want %#x", got, want)
	}
	for _, c := range []uint32{0, 1, 0xffffffff, 0xe3069283, 0x12345678} {
		if Unmask(Mask(c)) != c {
			t.Errorf("Unmask(Mask(%#x)) != %#x", c, c)
		}
	}
}

// The frame of an empty record, byte for byte: as TensorFlow writes it.
func TestEmptyRecordGolden(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if err := w.Write(nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// length 0, masked crc32c of 8 zero bytes, no data, masked crc32c of "".
	want, _ := hex.DecodeString("0000000000000000" + le32(Mask(bitwiseCRC32C(make([]byte, 8)))) + le32(Mask(0)))
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("empty record = %x, want %x", buf.Bytes(), want)
	}
}

// bitwiseCRC32C is a bit-at-a-time CRC-32C (reflected polynomial
// 0x82F63B78), independent of hash/crc32's table and SSE4.2 code.
func bitwiseCRC32C(b []byte) uint32 {
	crc := ^uint32(0)
	for _, x := range b {
		crc ^= uint32(x)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0x82f63b78
			} else {
				crc >>= 1
			}
		}
	}
	return ^crc
}

func le32(v uint32) string {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	return hex.EncodeToString(b[:])
}

// golden_node.tfrecord was written by @roboflow/tfrecords (testdata/interop/write.js).
func TestReadGoldenFromIndependentWriter(t *testing.T) {
	data, err := os.ReadFile("testdata/golden_node.tfrecord")
	if err != nil {
		t.Fatal(err)
	}
	r := NewReader(bytes.NewReader(data), WithName("golden"))
	sizes := []int{}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(rec))
	}
	if len(sizes) != 3 {
		t.Fatalf("read %d records, want 3", len(sizes))
	}
	if r.Offset() != int64(len(data)) {
		t.Fatalf("offset %d after reading, file has %d bytes", r.Offset(), len(data))
	}
	// Re-framing the records with our writer gives the identical file.
	var again bytes.Buffer
	w := NewWriter(&again)
	rr := NewReader(bytes.NewReader(data))
	for {
		rec, err := rr.Next()
		if err == io.EOF {
			break
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if !bytes.Equal(again.Bytes(), data) {
		t.Fatal("rewriting the golden file's records does not reproduce it byte for byte")
	}
}

func randomRecords(rng *rand.Rand, n int) [][]byte {
	recs := make([][]byte, n)
	for i := range recs {
		size := rng.IntN(5000)
		if i%17 == 0 {
			size = 0
		}
		if i%23 == 0 {
			size = 300_000 + rng.IntN(2_000_000) // bigger than the read buffer and a read chunk
		}
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		recs[i] = b
	}
	return recs
}

func writeAll(t testing.TB, recs [][]byte) ([]byte, []IndexEntry) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	var idx []IndexEntry
	for _, r := range recs {
		off := w.Offset()
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
		idx = append(idx, IndexEntry{Offset: off, Size: w.Offset() - off})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close = %v, want ErrClosed", err)
	}
	return buf.Bytes(), idx
}

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	recs := randomRecords(rng, 200)
	data, idx := writeAll(t, recs)

	// Next, ReadRecord with reuse, and Skip.
	r := NewReader(bytes.NewReader(data))
	var buf []byte
	for i, want := range recs {
		if i%5 == 4 {
			if err := r.Skip(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if r.Offset() != idx[i].Offset {
			t.Fatalf("record %d: Offset %d, index says %d", i, r.Offset(), idx[i].Offset)
		}
		got, err := r.ReadRecord(buf[:0])
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("record %d differs", i)
		}
		buf = got
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after last record: %v, want io.EOF", err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("EOF is not sticky: %v", err)
	}

	// ReadRecord appends.
	r = NewReader(bytes.NewReader(data))
	got, err := r.ReadRecord([]byte("prefix"))
	if err != nil || !bytes.Equal(got, append([]byte("prefix"), recs[0]...)) {
		t.Fatalf("ReadRecord does not append: %v", err)
	}

	// Index round trip, and BuildIndex agrees with the writer.
	var ib bytes.Buffer
	if err := WriteIndex(&ib, idx); err != nil {
		t.Fatal(err)
	}
	back, err := ReadIndex(bytes.NewReader(ib.Bytes()), "x.idx")
	if err != nil {
		t.Fatal(err)
	}
	built, err := BuildIndex(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(back) != fmt.Sprint(idx) || fmt.Sprint(built) != fmt.Sprint(idx) {
		t.Fatal("index round trip or BuildIndex differs from the writer's offsets")
	}
	// Random access through the index with Unframe.
	for i, e := range idx {
		d, rest, err := Unframe(data[e.Offset:e.Offset+e.Size], "x", e.Offset)
		if err != nil || len(rest) != 0 || !bytes.Equal(d, recs[i]) {
			t.Fatalf("Unframe record %d: %v", i, err)
		}
	}
}

func TestIndexFormat(t *testing.T) {
	var b bytes.Buffer
	WriteIndex(&b, []IndexEntry{{0, 20}, {20, 116}})
	if b.String() != "0 20\n20 116\n" {
		t.Fatalf("index text %q", b.String())
	}
	for _, bad := range []string{"0 20\nx y\n", "0 20\n10 20\n", "0 3\n", "0\n", "-1 20\n"} {
		_, err := ReadIndex(bytes.NewReader([]byte(bad)), "bad.idx")
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Path != "bad.idx" {
			t.Errorf("ReadIndex(%q) = %v, want CorruptError naming the file", bad, err)
		}
	}
	if _, err := ReadIndex(bytes.NewReader([]byte("0 20\n20 116")), "ok"); err != nil {
		t.Errorf("index without final newline: %v", err)
	}
}

// Flipping any single byte of a file is detected, at an offset at or before
// the flipped byte.
func TestEveryByteFlipIsDetected(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	recs := [][]byte{[]byte("hello"), {}, make([]byte, 300), []byte("tail record")}
	for i := range recs[2] {
		recs[2][i] = byte(rng.Uint32())
	}
	data, _ := writeAll(t, recs)
	for pos := range data {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			bad := bytes.Clone(data)
			bad[pos] ^= mask
			err := readAllErr(bad)
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("flip %#x at %d: err = %v, want CorruptError", mask, pos, err)
			}
			if ce.Offset > int64(pos) || ce.Path != "f.tfrecord" {
				t.Fatalf("flip at %d reported at offset %d in %q", pos, ce.Offset, ce.Path)
			}
		}
	}
}

func readAllErr(data []byte) error {
	r := NewReader(bytes.NewReader(data), WithName("f.tfrecord"))
	for {
		_, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			// Sticky: the same error again.
			if _, err2 := r.Next(); err2 != err {
				return fmt.Errorf("error not sticky: %v then %v", err, err2)
			}
			return err
		}
	}
}

func TestTruncationIsCorrupt(t *testing.T) {
	data, idx := writeAll(t, [][]byte{[]byte("abc"), make([]byte, 1000)})
	for n := 1; n < len(data); n++ {
		if n == int(idx[1].Offset) {
			continue // a clean record boundary
		}
		err := readAllErr(data[:n])
		if !errors.Is(err, ErrCorrupt) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("truncated at %d: %v, want ErrCorrupt wrapping io.ErrUnexpectedEOF", n, err)
		}
	}
	if err := readAllErr(data[:idx[1].Offset]); err != nil {
		t.Fatalf("cut at a record boundary: %v", err)
	}
}

// A forged huge length with a valid length CRC must not make the reader
// allocate gigabytes: it grows only as bytes actually arrive.
func TestHugeLengthDoesNotAllocate(t *testing.T) {
	var hdr [HeaderSize]byte
	binary.LittleEndian.PutUint64(hdr[:8], 3<<30) // 3 GiB, under the default limit
	binary.LittleEndian.PutUint32(hdr[8:], MaskedCRC(hdr[:8]))
	data := append(hdr[:], make([]byte, 100)...)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err := readAllErr(data)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err = %v, want ErrCorrupt", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Fatalf("allocated %d bytes for a 112-byte input", alloc)
	}
	// Above the limit it is rejected outright.
	binary.LittleEndian.PutUint64(hdr[:8], 1<<62)
	binary.LittleEndian.PutUint32(hdr[8:], MaskedCRC(hdr[:8]))
	if err := readAllErr(hdr[:]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("length 2^62: %v", err)
	}
}

func TestWithVerifyFalseSkipsDataCRC(t *testing.T) {
	data, _ := writeAll(t, [][]byte{[]byte("payload")})
	data[HeaderSize] ^= 1
	r := NewReader(bytes.NewReader(data), WithVerify(false))
	if _, err := r.Next(); err != nil {
		t.Fatalf("WithVerify(false): %v", err)
	}
	if err := readAllErr(data); !errors.Is(err, ErrCorrupt) {
		t.Fatal("default reader accepted a data CRC mismatch")
	}
}

type failingWriter struct{ n int }

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(p), nil
}

func TestWriterStickyError(t *testing.T) {
	w := NewWriter(&failingWriter{})
	big := make([]byte, 1<<20)
	err1 := w.Write(big)
	if err1 == nil {
		err1 = w.Flush()
	}
	if err1 == nil {
		t.Fatal("no error from a failing writer")
	}
	if err := w.Write([]byte("x")); err == nil || err.Error() != err1.Error() {
		t.Fatalf("error not sticky: %v", err)
	}
}

func FuzzReader(f *testing.F) {
	data, _ := os.ReadFile("testdata/golden_node.tfrecord")
	f.Add(data)
	small, _ := writeAllF([][]byte{[]byte("a"), {}, []byte("bcd")})
	f.Add(small)
	f.Add([]byte{})
	f.Add(small[:5])
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(bytes.NewReader(b))
		var total int
		var err error
		for {
			var rec []byte
			rec, err = r.Next()
			if err != nil {
				break
			}
			total += len(rec) + FrameSize
		}
		if err != io.EOF && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("unexpected error kind: %v", err)
		}
		if total > len(b) {
			t.Fatalf("read %d framed bytes from %d", total, len(b))
		}
		if err == io.EOF {
			// A clean read round-trips: re-framing gives back the input.
			var again bytes.Buffer
			w := NewWriter(&again)
			rr := NewReader(bytes.NewReader(b))
			for {
				rec, err := rr.Next()
				if err != nil {
					break
				}
				w.Write(rec)
			}
			w.Close()
			if !bytes.Equal(again.Bytes(), b) {
				t.Fatal("clean read does not round-trip")
			}
		}
		// The index agrees with a scan.
		if idx, err := BuildIndex(bytes.NewReader(b)); err == nil {
			var ib bytes.Buffer
			WriteIndex(&ib, idx)
			back, err := ReadIndex(&ib, "")
			if err != nil || len(back) != len(idx) {
				t.Fatalf("index round trip: %v", err)
			}
		}
	})
}

func writeAllF(recs [][]byte) ([]byte, error) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, r := range recs {
		w.Write(r)
	}
	err := w.Close()
	return buf.Bytes(), err
}
