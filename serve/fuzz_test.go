package serve

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

// FuzzReadFrame: whatever a consumer sends, the frame reader returns a
// frame within MaxFrame or an error (a short read, ErrProtocol for a bad
// length), never a panic or an allocation beyond the frame's stated size;
// and what writeFrame writes reads back the same.
func FuzzReadFrame(f *testing.F) {
	for _, seed := range [][]byte{
		{1, 0, 0, 0, 'A'},
		append([]byte{9, 0, 0, 0, 'E'}, binary.LittleEndian.AppendUint64(nil, 3)...),
		append([]byte{20, 0, 0, 0, 'E'}, append(binary.LittleEndian.AppendUint64(nil, 1), []byte(`{"version":2}`)...)...),
		{5, 0, 0, 0, 'F', 1, 0, 0, 0},
		{0, 0, 0, 0, 'X'},
		{0xff, 0xff, 0xff, 0xff, 'R'},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bufio.NewReader(bytes.NewReader(b))
		var buf []byte
		for {
			typ, p, err := readFrame(r, buf)
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrProtocol) {
					t.Fatalf("readFrame: %v", err)
				}
				return
			}
			if len(p)+1 > MaxFrame {
				t.Fatalf("a frame of %d bytes", len(p)+1)
			}
			var w bytes.Buffer
			if err := writeFrame(&w, typ, p); err != nil {
				t.Fatal(err)
			}
			typ2, p2, err := readFrame(bufio.NewReader(&w), nil)
			if err != nil || typ2 != typ || !bytes.Equal(p2, p) {
				t.Fatalf("round trip: %q %q (%v) != %q %q", typ2, p2, err, typ, p)
			}
			buf = p[:0]
		}
	})
}
