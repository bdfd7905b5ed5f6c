package downscale

import (
	"encoding/binary"
	"testing"

	"github.com/faster-training/faster/imgcodec"
)

func TestOrientation(t *testing.T) {
	jpg := photo(t, 16, 8)
	if o := Orientation(jpg); o != 1 {
		t.Errorf("no EXIF: %d", o)
	}
	for o := 1; o <= 8; o++ {
		for _, bo := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			data := withOrientation(jpg, o, bo)
			if got := Orientation(data); got != o {
				t.Errorf("orientation %d (%v): got %d", o, bo, got)
			}
			if _, err := imgcodec.Decode(data, nil); err != nil {
				t.Fatalf("test JPEG with EXIF does not decode: %v", err)
			}
		}
	}
	for _, bad := range [][]byte{nil, {0xFF}, {0xFF, 0xD8}, {0xFF, 0xD8, 0xFF, 0xE1, 0xFF, 0xFF}, withOrientation(jpg, 9, binary.BigEndian)[:30]} {
		if got := Orientation(bad); got != 1 {
			t.Errorf("Orientation(%x) = %d, want 1", bad, got)
		}
	}
}

// TestOrient checks where the corner pixels of a 3x2 image go under each
// orientation (EXIF 2.3, table of Orientation).
func TestOrient(t *testing.T) {
	src := imgcodec.NewImage(3, 2, 1)
	copy(src.Pix, []uint8{1, 2, 3, 4, 5, 6}) // row 0: 1 2 3; row 1: 4 5 6
	want := map[int][]uint8{
		1: {1, 2, 3, 4, 5, 6},
		2: {3, 2, 1, 6, 5, 4},
		3: {6, 5, 4, 3, 2, 1},
		4: {4, 5, 6, 1, 2, 3},
		5: {1, 4, 2, 5, 3, 6},
		6: {4, 1, 5, 2, 6, 3},
		7: {6, 3, 5, 2, 4, 1},
		8: {3, 6, 2, 5, 1, 4},
	}
	for o, w := range want {
		got := orient(src, o)
		if string(got.Pix[:6]) != string(w) {
			t.Errorf("orientation %d: %v, want %v", o, got.Pix[:6], w)
		}
	}
}

func FuzzOrientation(f *testing.F) {
	jpg := photo(f, 8, 8)
	f.Add(jpg[:64])
	f.Add(withOrientation(jpg, 6, binary.BigEndian)[:64])
	f.Add(withOrientation(jpg, 3, binary.LittleEndian)[:64])
	f.Fuzz(func(t *testing.T, data []byte) {
		if o := Orientation(data); o < 1 || o > 8 {
			t.Fatalf("orientation %d", o)
		}
	})
}
