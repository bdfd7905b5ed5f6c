package collective

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// storeGrace is how long past a request's own timeout a client waits for
// the server's answer before it gives the connection up.
const storeGrace = 5 * time.Second

// Store is a client of a StoreServer, the rendezvous key-value store of a
// group, like torch's TCPStore. Its methods may be called from several
// goroutines; they take turns on one connection. When the server dies or
// goes silent the call fails with an error wrapping ErrPeer, and so does
// every later call.
type Store struct {
	addr    string
	timeout time.Duration
	conn    net.Conn
	closed  atomic.Bool

	mu  sync.Mutex // guards the fields below and the use of conn
	br  *bufio.Reader
	buf []byte
	err error // sticky
}

// DialStore connects to the store server at addr (host:port), retrying
// until timeout so that ranks may start in any order. The timeout also
// bounds each later call.
func DialStore(addr string, timeout time.Duration) (*Store, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	deadline := time.Now().Add(timeout)
	backoff := 10 * time.Millisecond
	var last error
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil, fmt.Errorf("collective: store at %s did not answer within %v (last error: %v): %w", addr, timeout, last, ErrPeer)
		}
		conn, err := net.DialTimeout("tcp", addr, left)
		if err == nil {
			var s *Store
			s, err = handshake(conn, addr, timeout, deadline)
			if err == nil {
				return s, nil
			}
			conn.Close()
			if errors.Is(err, errNotStore) {
				return nil, err
			}
		}
		last = err
		time.Sleep(min(backoff, time.Until(deadline)))
		backoff = min(2*backoff, 250*time.Millisecond)
	}
}

var errNotStore = errors.New("not a faster store server")

func handshake(conn net.Conn, addr string, timeout time.Duration, deadline time.Time) (*Store, error) {
	conn.SetDeadline(deadline)
	if _, err := conn.Write(storeMagic[:]); err != nil {
		return nil, err
	}
	var magic [len(storeMagic)]byte
	if _, err := io.ReadFull(conn, magic[:]); err != nil {
		return nil, err
	}
	if magic != storeMagic {
		return nil, fmt.Errorf("collective: store at %s: %w (it answered %q)", addr, errNotStore, magic[:])
	}
	conn.SetDeadline(time.Time{})
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	return &Store{addr: addr, timeout: timeout, conn: conn, br: bufio.NewReader(conn)}, nil
}

// LocalAddr is the local address of the connection to the server: an
// address of this host that the server's host can reach.
func (s *Store) LocalAddr() net.Addr { return s.conn.LocalAddr() }

// Timeout is the timeout the store was dialed with.
func (s *Store) Timeout() time.Duration { return s.timeout }

// Set sets key to a copy of v.
func (s *Store) Set(key string, v []byte) error {
	_, err := s.call(&storeRequest{op: opSet, key: key, value: v}, s.timeout)
	return err
}

// Get returns the value of key, waiting until some rank sets it or the
// timeout passes.
func (s *Store) Get(key string) ([]byte, error) {
	return s.call(&storeRequest{op: opGet, key: key, timeout: timeoutMillis(s.timeout)}, s.timeout+storeGrace)
}

// Wait waits until every key is set or the timeout passes.
func (s *Store) Wait(keys []string) error {
	return s.WaitTimeout(keys, s.timeout)
}

// WaitTimeout is Wait with its own timeout.
func (s *Store) WaitTimeout(keys []string, timeout time.Duration) error {
	_, err := s.call(&storeRequest{op: opWait, keys: keys, timeout: timeoutMillis(timeout)}, timeout+storeGrace)
	return err
}

// Add adds delta to the counter at key (0 if unset) and returns the sum.
func (s *Store) Add(key string, delta int64) (int64, error) {
	v, err := s.call(&storeRequest{op: opAdd, key: key, delta: delta}, s.timeout)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, s.fail(fmt.Errorf("add %q: answer of %d bytes", key, len(v)))
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// Close closes the connection; calls in progress and later fail.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.conn.Close()
}

// fail records a broken connection; s.mu is held.
func (s *Store) fail(err error) error {
	if s.closed.Load() {
		s.err = fmt.Errorf("collective: store %s: %w", s.addr, net.ErrClosed)
	} else {
		s.err = fmt.Errorf("collective: store %s: %v: %w", s.addr, err, ErrPeer)
	}
	s.conn.Close()
	return s.err
}

// call sends req and returns the payload of a statusOK answer. The answer
// must come within wait.
func (s *Store) call(req *storeRequest, wait time.Duration) ([]byte, error) {
	if len(req.key) > maxStoreKey {
		return nil, fmt.Errorf("collective: store: key of %d bytes exceeds %d", len(req.key), maxStoreKey)
	}
	for _, k := range req.keys {
		if len(k) > maxStoreKey {
			return nil, fmt.Errorf("collective: store: key of %d bytes exceeds %d", len(k), maxStoreKey)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	if s.closed.Load() {
		return nil, s.fail(nil)
	}
	var err error
	if s.buf, err = appendRequest(s.buf[:0], req); err != nil {
		return nil, err
	}
	s.conn.SetDeadline(time.Now().Add(wait))
	if _, err := s.conn.Write(s.buf); err != nil {
		return nil, s.fail(err)
	}
	body, err := readFrame(s.br, s.buf)
	if err != nil {
		return nil, s.fail(err)
	}
	s.buf = body
	if len(body) == 0 {
		return nil, s.fail(fmt.Errorf("%w: empty answer", errFrame))
	}
	switch body[0] {
	case statusOK:
		return append([]byte(nil), body[1:]...), nil
	case statusTimeout:
		return nil, fmt.Errorf("collective: store %s: key %q not set within %v: %w", s.addr, body[1:], time.Duration(req.timeout)*time.Millisecond, ErrPeer)
	case statusError:
		return nil, fmt.Errorf("collective: store %s: server: %s", s.addr, body[1:])
	}
	return nil, s.fail(fmt.Errorf("%w: unknown status %d", errFrame, body[0]))
}
