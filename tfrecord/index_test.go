package tfrecord

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestReadIndexFor: every field of an index is bounded by its data file;
// an index that does not tile the file exactly is stale.
func TestReadIndexFor(t *testing.T) {
	data, _ := writeAllF([][]byte{[]byte("a"), {}, []byte("bcd")}) // 17+16+19 bytes
	good, _ := BuildIndex(bytes.NewReader(data))
	var gb bytes.Buffer
	WriteIndex(&gb, good)
	if got, err := ReadIndexFor(bytes.NewReader(gb.Bytes()), "x.idx", "x.tfrecord", int64(len(data))); err != nil || len(got) != 3 {
		t.Fatalf("good index: %v, %d entries", err, len(got))
	}
	for _, tc := range []struct {
		name, idx string
		stale     bool
	}{
		{"empty", "", true},
		{"missing last record", "0 17\n17 16\n", true},
		{"gap", "0 17\n20 16\n", true},
		{"not at 0", "17 16\n33 19\n", true},
		{"past the end", "0 17\n17 16\n33 20\n", true},
		{"huge size", "0 4611686018427387904\n", true},
		{"overflow", "9223372036854775800 100\n", false},
		{"extra record", "0 17\n17 16\n33 19\n52 16\n", true},
		{"negative", "-1 17\n", false},
		{"garbage", "0 17 3\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadIndexFor(strings.NewReader(tc.idx), "x.idx", "x.tfrecord", int64(len(data)))
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Path != "x.idx" {
				t.Fatalf("want a *CorruptError naming x.idx, got %v", err)
			}
			if errors.Is(err, ErrStaleIndex) != tc.stale {
				t.Fatalf("stale = %v, want %v: %v", errors.Is(err, ErrStaleIndex), tc.stale, err)
			}
			if tc.stale && !strings.Contains(err.Error(), "x.tfrecord") {
				t.Fatalf("a stale-index error names the data file: %v", err)
			}
		})
	}
	// Without the data file, ReadIndex still refuses an end past int64.
	if _, err := ReadIndex(strings.NewReader("9223372036854775800 100\n"), "x.idx"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("overflowing entry accepted: %v", err)
	}
}

// FuzzReadIndex: whatever the index says, ReadIndexFor either fails with a
// *CorruptError or returns entries that tile the data file exactly, and a
// good index round-trips through WriteIndex.
func FuzzReadIndex(f *testing.F) {
	f.Add([]byte("0 17\n17 16\n33 19\n"), int64(52))
	f.Add([]byte("0 4611686018427387904\n"), int64(100))
	f.Add([]byte("9223372036854775800 100\n"), int64(1<<40))
	f.Add([]byte(""), int64(0))
	f.Add([]byte("0 16\n\n16 16"), int64(32))
	f.Fuzz(func(t *testing.T, idx []byte, size int64) {
		if size < 0 {
			size = -size
			if size < 0 {
				size = 0
			}
		}
		entries, err := ReadIndexFor(bytes.NewReader(idx), "f.idx", "f.tfrecord", size)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("not a corrupt-data error: %v", err)
			}
			return
		}
		var next int64
		for _, e := range entries {
			if e.Offset != next || e.Size < FrameSize || e.Size > size-e.Offset {
				t.Fatalf("entry %+v does not tile %d bytes", e, size)
			}
			next = e.Offset + e.Size
		}
		if next != size {
			t.Fatalf("entries end at %d of %d", next, size)
		}
		var b bytes.Buffer
		WriteIndex(&b, entries)
		back, err := ReadIndexFor(&b, "f.idx", "f.tfrecord", size)
		if err != nil || len(back) != len(entries) {
			t.Fatalf("round trip: %v", err)
		}
		// ReadIndex (unchecked) agrees on a good index.
		if plain, err := ReadIndex(bytes.NewReader(idx), "f.idx"); err != nil || len(plain) != len(entries) {
			t.Fatalf("ReadIndex disagrees: %v", err)
		}
	})
}
