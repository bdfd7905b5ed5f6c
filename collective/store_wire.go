package collective

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// The store's wire protocol is that of torch 1.13's TCPStore (c10d), so
// that torch's clients and servers and ours talk to each other. A client
// connects and sends queries; there is no greeting. A query is one byte of
// type and its arguments; integers are little-endian (torch sends them in
// host order, and every platform it runs on is little-endian); a string or
// byte string is a uint64 length and its bytes:
//
//	qSet        key, value                   no answer
//	qCompareSet key, expected, desired       the value now held
//	qGet        key                          its value (the key must exist)
//	qAdd        key, int64 delta             int64 sum; the value is the decimal text
//	qCheck      uint64 n, n keys             byte: checkReady or checkNotReady
//	qWait       uint64 n, n keys             byte waitStop once every key exists
//	qNumKeys                                 int64
//	qWatchKey   key                          (torch's callback socket; refused here)
//	qDeleteKey  key                          int64: keys deleted, 0 or 1
//
// The server answers a connection's queries in order, except that a wait
// answers when its keys appear, later queries of the connection being
// answered meanwhile. torch's client has no way to cancel a wait: on its
// timeout it stops reading. Ours closes that connection and dials a new
// one for its next call.
//
// torch's Python TCPStore puts "/" in front of every key (its keyPrefix_);
// Store does the same, so the keys a torch client and ours name agree.
//
// torch 2.x changed the protocol: a client first sends a validation query
// (type 0, then the uint32 qValidateMagic) and the types are renumbered
// from it (set is 1, …). The server recognises that first query (as a set
// its key length would be over a gigabyte) and closes the connection; a
// torch 2.x server closes ours on its first query
// (the number-of-keys probe of DialStore), which DialStore reports as such.
// These constants are the wire format and must not change.
const (
	qSet        = 0
	qCompareSet = 1
	qGet        = 2
	qAdd        = 3
	qCheck      = 4
	qWait       = 5
	qNumKeys    = 6
	qWatchKey   = 7
	qDeleteKey  = 8

	checkReady    = 0
	checkNotReady = 1
	waitStop      = 0

	// qValidateMagic follows query type 0 in torch 2.x's first query.
	qValidateMagic = 0x3C85F7CE

	// maxStoreValue bounds a value, and the keys of one wait or check
	// together; maxStoreKey a key; maxStoreKeys the keys of one wait or
	// check.
	maxStoreValue = 16 << 20
	maxStoreKey   = 4 << 10
	maxStoreKeys  = 1 << 16
)

// errFrame marks a malformed query or answer.
var errFrame = errors.New("collective: store: malformed message")

// errTorch2 marks the first query of a torch 2.x client.
var errTorch2 = errors.New("collective: store: a torch 2.x client (validation query): this store speaks torch 1.13's TCPStore protocol")

// query is a decoded query.
type query struct {
	typ     byte
	key     string
	keys    []string // qCheck, qWait
	value   []byte   // qSet; qCompareSet: the expected value
	desired []byte   // qCompareSet
	delta   int64    // qAdd
}

// appendString appends a torch string: uint64 length, bytes.
func appendString(dst []byte, s string) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(s)))
	return append(dst, s...)
}

func appendBytes(dst []byte, b []byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(b)))
	return append(dst, b...)
}

// appendQuery appends q in wire form to dst.
func appendQuery(dst []byte, q *query) ([]byte, error) {
	if len(q.key) > maxStoreKey {
		return dst, fmt.Errorf("collective: store: key of %d bytes exceeds %d", len(q.key), maxStoreKey)
	}
	if len(q.value) > maxStoreValue || len(q.desired) > maxStoreValue {
		return dst, fmt.Errorf("collective: store: value of %d bytes exceeds %d", max(len(q.value), len(q.desired)), maxStoreValue)
	}
	if len(q.keys) > maxStoreKeys {
		return dst, fmt.Errorf("collective: store: %d keys exceed %d", len(q.keys), maxStoreKeys)
	}
	total := 0
	for _, k := range q.keys {
		if len(k) > maxStoreKey {
			return dst, fmt.Errorf("collective: store: key of %d bytes exceeds %d", len(k), maxStoreKey)
		}
		total += len(k)
	}
	if total > maxStoreValue {
		return dst, fmt.Errorf("collective: store: keys of %d bytes exceed %d", total, maxStoreValue)
	}
	dst = append(dst, q.typ)
	switch q.typ {
	case qSet:
		dst = appendString(dst, q.key)
		dst = appendBytes(dst, q.value)
	case qCompareSet:
		dst = appendString(dst, q.key)
		dst = appendBytes(dst, q.value)
		dst = appendBytes(dst, q.desired)
	case qGet, qWatchKey, qDeleteKey:
		dst = appendString(dst, q.key)
	case qAdd:
		dst = appendString(dst, q.key)
		dst = binary.LittleEndian.AppendUint64(dst, uint64(q.delta))
	case qCheck, qWait:
		dst = binary.LittleEndian.AppendUint64(dst, uint64(len(q.keys)))
		for _, k := range q.keys {
			dst = appendString(dst, k)
		}
	case qNumKeys:
	default:
		return dst[:len(dst)-1], fmt.Errorf("collective: store: unknown query type %d", q.typ)
	}
	return dst, nil
}

// wireReader reads the fields of queries and answers from a stream.
type wireReader struct {
	r *bufio.Reader
}

func (w wireReader) uint64() (uint64, error) {
	var b [8]byte
	if _, err := io.ReadFull(w.r, b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// bytes reads a length-prefixed field of at most limit bytes. It grows its
// buffer as the data arrives, a step at a time, so that a length with no
// data behind it costs no more than a step.
func (w wireReader) bytes(limit int) ([]byte, error) {
	n, err := w.uint64()
	if err != nil {
		return nil, err
	}
	if n > uint64(limit) {
		return nil, fmt.Errorf("%w: field of %d bytes exceeds %d", errFrame, n, limit)
	}
	buf := []byte{}
	for len(buf) < int(n) {
		step := min(int(n)-len(buf), wireStep)
		buf = slices.Grow(buf, step)
		m, err := io.ReadFull(w.r, buf[len(buf):len(buf)+step])
		buf = buf[:len(buf)+m]
		if err != nil {
			return nil, unexpected(err)
		}
	}
	return buf, nil
}

// wireStep is how far a reader allocates ahead of the data it has read.
const wireStep = 256 << 10

func (w wireReader) key() (string, error) {
	b, err := w.bytes(maxStoreKey)
	return string(b), err
}

// unexpected turns the end of the stream inside a message into
// io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readQuery reads one query. The end of the stream before a query is
// io.EOF; a malformed query wraps errFrame (or is errTorch2, when first is
// set and the query is torch 2.x's validation).
func readQuery(r *bufio.Reader, first bool) (query, error) {
	typ, err := r.ReadByte()
	if err != nil {
		return query{}, err
	}
	q := query{typ: typ}
	w := wireReader{r}
	if first && typ == 0 {
		if b, err := r.Peek(4); err == nil && binary.LittleEndian.Uint32(b) == qValidateMagic {
			return query{}, errTorch2
		}
	}
	switch typ {
	case qSet:
		if q.key, err = w.key(); err == nil {
			q.value, err = w.bytes(maxStoreValue)
		}
	case qCompareSet:
		if q.key, err = w.key(); err == nil {
			if q.value, err = w.bytes(maxStoreValue); err == nil {
				q.desired, err = w.bytes(maxStoreValue)
			}
		}
	case qGet, qWatchKey, qDeleteKey:
		q.key, err = w.key()
	case qAdd:
		if q.key, err = w.key(); err == nil {
			var d uint64
			d, err = w.uint64()
			q.delta = int64(d)
		}
	case qCheck, qWait:
		var n uint64
		if n, err = w.uint64(); err == nil && n > maxStoreKeys {
			err = fmt.Errorf("%w: %d keys exceed %d", errFrame, n, maxStoreKeys)
		}
		q.keys = []string{}
		total := 0
		for i := uint64(0); err == nil && i < n; i++ {
			var k string
			if k, err = w.key(); err == nil {
				q.keys = append(q.keys, k)
				if total += len(k); total > maxStoreValue {
					err = fmt.Errorf("%w: keys of more than %d bytes", errFrame, maxStoreValue)
				}
			}
		}
	case qNumKeys:
	default:
		return query{}, fmt.Errorf("%w: unknown query type %d", errFrame, typ)
	}
	if err != nil {
		return query{}, unexpected(err)
	}
	return q, nil
}
