//go:build linux

package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/faster-training/faster/loader"
)

// FuzzOrderFrames: whatever seed ('S'), order ('O'), epoch ('E') and
// cancel ('C') frames a consumer sends, the session takes them as frames
// or refuses them as ErrProtocol, never panics, and an epoch request
// carries exactly the positions of the order frames before it; prepare
// hands them to the loader, which takes an order only of its dataset's
// positions (else an error naming the index and its place).
func FuzzOrderFrames(f *testing.F) {
	frame := func(typ byte, p []byte) []byte {
		return append(binary.LittleEndian.AppendUint32(nil, uint32(len(p)+1)), append([]byte{typ}, p...)...)
	}
	le := binary.LittleEndian
	f.Add(append(frame('O', le.AppendUint64(le.AppendUint64(nil, 2), 0)), frame('E', le.AppendUint64(nil, 0))...))
	f.Add(append(frame('S', le.AppendUint64(nil, 7)), frame('E', le.AppendUint64(nil, 1))...))
	f.Add(append(frame('O', []byte{1, 2, 3}), frame('O', nil)...))
	f.Add(append(frame('O', le.AppendUint64(nil, 1<<63)), frame('E', le.AppendUint64(nil, 0))...))
	f.Add(frame('S', []byte{1}))
	data := makeTree(f, 1) // 3 images
	l, err := loader.Open(data, loader.Options{Transform: loader.None, Batch: 2, Sampler: loader.SamplerIndices})
	if err != nil {
		f.Fatal(err)
	}
	defer l.Close()
	f.Fuzz(func(t *testing.T, b []byte) {
		s := &session{src: l, o: Options{Sampler: loader.SamplerIndices}, epochs: make(chan epochReq, 1)}
		r := bufio.NewReader(bytes.NewReader(b))
		var sent []int
		for {
			typ, p, err := readFrame(r, nil)
			if err != nil {
				return
			}
			if typ != FrameSeed && typ != FrameOrder && typ != FrameEpoch && typ != FrameCancel {
				continue
			}
			err = s.apply(context.Background(), typ, p)
			if err != nil {
				if !errors.Is(err, ErrProtocol) {
					t.Fatalf("frame %q: %v", typ, err)
				}
				return
			}
			switch typ {
			case FrameOrder:
				for i := 0; i < len(p); i += 8 {
					sent = append(sent, int(int64(le.Uint64(p[i:]))))
				}
			case FrameEpoch:
				req := <-s.epochs
				if len(req.order) != len(sent) || !bytes.Equal(orderBytes(req.order), orderBytes(sent)) {
					t.Fatalf("epoch request with %d positions, %d sent", len(req.order), len(sent))
				}
				if req.refuse == nil {
					if err := s.prepare(req); err != nil && req.order != nil {
						ok := false
						for _, v := range req.order {
							ok = ok || v < 0 || v >= 3
						}
						if !ok {
							t.Fatalf("order %v refused: %v", req.order, err)
						}
					}
				}
				s.finished = s.requested
				sent = nil
			}
		}
	})
}

func orderBytes(o []int) []byte {
	var b []byte
	for _, v := range o {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return b
}
