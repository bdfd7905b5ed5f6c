package tfrecord

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
)

// readAllSkipping reads every record of b, resynchronising after each
// corruption; it returns the records and the offsets of the damage.
func readAllSkipping(t testing.TB, b []byte) (recs []string, bad []int64) {
	src := bytes.NewReader(b)
	r := NewReader(bytes.NewReader(b), WithName("mem"))
	for guard := 0; guard < 10000; guard++ {
		rec, err := r.ReadRecord(nil)
		if err == io.EOF {
			return recs, bad
		}
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("not corrupt: %v", err)
			}
			bad = append(bad, ce.Offset)
			if _, _, err := r.Resync(src); err == io.EOF {
				return recs, bad
			} else if err != nil {
				t.Fatal(err)
			}
			continue
		}
		recs = append(recs, string(rec))
	}
	t.Fatal("no progress")
	return
}

func frames(n int) ([]byte, []int64) {
	var b []byte
	var offs []int64
	for i := range n {
		offs = append(offs, int64(len(b)))
		b = AppendRecord(b, []byte(fmt.Sprintf("record %d %s", i, bytes.Repeat([]byte{byte('a' + i%26)}, 10+i*7))))
	}
	return b, offs
}

func TestResync(t *testing.T) {
	clean, offs := frames(20)
	for _, tc := range []struct {
		name    string
		damage  func([]byte) []byte
		lost    []int // records lost
		badOffs []int64
	}{
		{"flip data", func(b []byte) []byte { b[offs[5]+HeaderSize+3] ^= 0x40; return b }, []int{5}, []int64{offs[5]}},
		{"flip length", func(b []byte) []byte { b[offs[7]+1] ^= 1; return b }, []int{7}, []int64{offs[7]}},
		{"flip two", func(b []byte) []byte { b[offs[2]+14] ^= 1; b[offs[9]+9] ^= 8; return b }, []int{2, 9}, []int64{offs[2], offs[9]}},
		{"truncated tail", func(b []byte) []byte { return b[:len(b)-5] }, []int{19}, []int64{offs[19]}},
		{"garbage appended", func(b []byte) []byte { return append(b, []byte("garbage garbage garbage")...) }, nil, []int64{int64(len(clean))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.damage(append([]byte(nil), clean...))
			recs, bad := readAllSkipping(t, b)
			if fmt.Sprint(bad) != fmt.Sprint(tc.badOffs) {
				t.Fatalf("bad at %v, want %v", bad, tc.badOffs)
			}
			if len(recs) != 20-len(tc.lost) {
				t.Fatalf("%d records, want %d", len(recs), 20-len(tc.lost))
			}
		})
	}
}

func FuzzResync(f *testing.F) {
	clean, _ := frames(6)
	f.Add(clean, uint16(20), byte(1))
	f.Add(clean[:len(clean)-3], uint16(0), byte(0))
	f.Add(append(append([]byte(nil), clean...), 1, 2, 3), uint16(90), byte(0xff))
	f.Fuzz(func(t *testing.T, b []byte, at uint16, x byte) {
		b = append([]byte(nil), b...)
		if len(b) > 0 {
			b[int(at)%len(b)] ^= x
		}
		recs, _ := readAllSkipping(t, b)
		// Every record served frames correctly at some offset: it
		// round-trips through AppendRecord and appears in the input.
		for _, r := range recs {
			if !bytes.Contains(b, AppendRecord(nil, []byte(r))) {
				t.Fatalf("record %q not framed in the input", r)
			}
		}
	})
}
