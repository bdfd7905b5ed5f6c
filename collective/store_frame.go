package collective

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// The store protocol. After a TCP connect the client sends storeMagic and
// the server answers with the same five bytes; then the client sends
// request frames and reads one response frame for each, in order.
//
// A frame is a big-endian uint32 length n followed by n bytes of body; n is
// at most maxStoreFrame. A string or byte string inside a body is a uint32
// length and its bytes. Request bodies, by their first byte:
//
//	opSet  key, value
//	opGet  uint32 timeout in ms, key
//	opWait uint32 timeout in ms, uint32 count, count keys
//	opAdd  int64 delta, key
//
// Response bodies start with a status byte: statusOK is followed by the
// value (opGet: the rest of the body; opAdd: the int64 sum; nothing for
// opSet and opWait); statusTimeout by the first missing key; statusError by
// a message. These constants are the wire format and must not change.
const (
	opSet  = 1
	opGet  = 2
	opWait = 3
	opAdd  = 4

	statusOK      = 0
	statusTimeout = 1
	statusError   = 2

	// maxStoreFrame bounds a frame body, and so a value.
	maxStoreFrame = 16 << 20
	// maxStoreKey bounds a key.
	maxStoreKey = 4 << 10
)

// storeMagic opens every connection: "FSTS" and the protocol version.
var storeMagic = [5]byte{'F', 'S', 'T', 'S', 1}

// errFrame marks a malformed frame.
var errFrame = errors.New("collective: store: malformed frame")

// storeRequest is a decoded request frame.
type storeRequest struct {
	op      byte
	key     string   // opSet, opGet, opAdd
	keys    []string // opWait
	value   []byte   // opSet
	delta   int64    // opAdd
	timeout uint32   // opGet, opWait: milliseconds
}

// timeoutMillis converts d for a request, clamped to the wire's range.
func timeoutMillis(d time.Duration) uint32 {
	ms := d.Milliseconds()
	switch {
	case ms < 1:
		return 1
	case ms > 1<<32-1:
		return 1<<32 - 1
	}
	return uint32(ms)
}

// readFrame reads one frame from r and returns its body, reusing buf when
// it is large enough. A length over maxStoreFrame is an error and is not
// allocated; nor is a length beyond the data that arrives.
func readFrame(r io.Reader, buf []byte) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxStoreFrame {
		return nil, fmt.Errorf("%w: length %d exceeds %d", errFrame, n, maxStoreFrame)
	}
	// Grow buf as the body arrives, a step at a time, so that a length
	// with no data behind it costs no more than one step.
	buf = buf[:0]
	for len(buf) < int(n) {
		step := min(int(n)-len(buf), frameStep)
		buf = slices.Grow(buf, step)
		m, err := io.ReadFull(r, buf[len(buf):len(buf)+step])
		buf = buf[:len(buf)+m]
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}

// frameStep is how far readFrame allocates ahead of the data it has read.
const frameStep = 256 << 10

// beginFrame appends a frame header with a length to be filled in by
// endFrame.
func beginFrame(dst []byte) ([]byte, int) {
	return append(dst, 0, 0, 0, 0), len(dst)
}

// endFrame fills in the length of the frame begun at start.
func endFrame(dst []byte, start int) ([]byte, error) {
	n := len(dst) - start - 4
	if n > maxStoreFrame {
		return dst[:start], fmt.Errorf("collective: store: frame of %d bytes exceeds %d", n, maxStoreFrame)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(n))
	return dst, nil
}

func appendBytes(dst []byte, b []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

func appendString(dst []byte, s string) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

// appendRequest appends req as a frame to dst.
func appendRequest(dst []byte, req *storeRequest) ([]byte, error) {
	dst, start := beginFrame(dst)
	dst = append(dst, req.op)
	switch req.op {
	case opSet:
		dst = appendString(dst, req.key)
		dst = appendBytes(dst, req.value)
	case opGet:
		dst = binary.BigEndian.AppendUint32(dst, req.timeout)
		dst = appendString(dst, req.key)
	case opWait:
		dst = binary.BigEndian.AppendUint32(dst, req.timeout)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(req.keys)))
		for _, k := range req.keys {
			dst = appendString(dst, k)
		}
	case opAdd:
		dst = binary.BigEndian.AppendUint64(dst, uint64(req.delta))
		dst = appendString(dst, req.key)
	default:
		return dst[:start], fmt.Errorf("collective: store: unknown op %d", req.op)
	}
	return endFrame(dst, start)
}

// frameDecoder reads the fields of a frame body.
type frameDecoder struct {
	b   []byte
	err error
}

func (d *frameDecoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{errFrame}, args...)...)
	}
}

func (d *frameDecoder) uint32() uint32 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 4 {
		d.fail("truncated")
		return 0
	}
	v := binary.BigEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *frameDecoder) uint64() uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.fail("truncated")
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

// bytes returns the next length-prefixed field, aliasing the body.
func (d *frameDecoder) bytes(max int) []byte {
	n := d.uint32()
	if d.err != nil {
		return nil
	}
	if uint64(n) > uint64(max) {
		d.fail("field of %d bytes exceeds %d", n, max)
		return nil
	}
	if uint64(n) > uint64(len(d.b)) {
		d.fail("field of %d bytes overruns the frame", n)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *frameDecoder) key() string { return string(d.bytes(maxStoreKey)) }

// decodeRequest decodes a request frame body. The value of an opSet
// request aliases body.
func decodeRequest(body []byte) (storeRequest, error) {
	if len(body) == 0 {
		return storeRequest{}, fmt.Errorf("%w: empty", errFrame)
	}
	req := storeRequest{op: body[0]}
	d := frameDecoder{b: body[1:]}
	switch req.op {
	case opSet:
		req.key = d.key()
		req.value = d.bytes(maxStoreFrame)
	case opGet:
		req.timeout = d.uint32()
		req.key = d.key()
	case opWait:
		req.timeout = d.uint32()
		n := d.uint32()
		// Every key takes at least 4 bytes: bound the count by what is
		// left before allocating for it.
		if d.err == nil && uint64(n) > uint64(len(d.b)/4) {
			d.fail("%d keys overrun the frame", n)
		}
		if d.err == nil {
			req.keys = make([]string, n)
			for i := range req.keys {
				req.keys[i] = d.key()
			}
		}
	case opAdd:
		req.delta = int64(d.uint64())
		req.key = d.key()
	default:
		return storeRequest{}, fmt.Errorf("%w: unknown op %d", errFrame, req.op)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return storeRequest{}, d.err
	}
	return req, nil
}

// appendResponse appends a response frame of status and payload to dst.
func appendResponse(dst []byte, status byte, payload []byte) ([]byte, error) {
	dst, start := beginFrame(dst)
	dst = append(dst, status)
	dst = append(dst, payload...)
	return endFrame(dst, start)
}
