package collective

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// storeGrace is how long past a call's own timeout a client waits for the
// server's answer before it gives the connection up.
const storeGrace = 5 * time.Second

// Store is a client of a rendezvous store in torch's TCPStore protocol: a
// StoreServer, torchrun's agent store, or a torch.distributed.TCPStore
// with is_master=True. Its methods may be called from several goroutines;
// they take turns on one connection. When the server dies or goes silent
// the call fails with an error wrapping ErrPeer, and so does every later
// call. A wait that times out leaves the store usable (on a new
// connection: torch's protocol cannot cancel a wait).
type Store struct {
	addr    string
	timeout time.Duration
	closed  atomic.Bool

	// live is the connection in use, for Close (which must not wait for
	// a call in progress: closing the connection is what ends it).
	live atomic.Pointer[liveConn]

	mu   sync.Mutex // guards the fields below and the use of conn
	conn net.Conn   // nil after a timed-out wait, until the next call
	br   *bufio.Reader
	buf  []byte
	err  error // sticky
	// local is the local address of the first connection.
	local net.Addr
}

// DialStore connects to the store server at addr (host:port), retrying
// until timeout so that ranks may start in any order. The timeout also
// bounds each later call.
func DialStore(addr string, timeout time.Duration) (*Store, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	s := &Store{addr: addr, timeout: timeout}
	if err := s.connect(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	s.local = s.conn.LocalAddr()
	return s, nil
}

// connect dials until deadline and probes the server with a query that
// every TCPStore answers (the number of keys). s.mu is held, or s is new.
func (s *Store) connect(deadline time.Time) error {
	backoff := 10 * time.Millisecond
	var last error
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("collective: store at %s did not answer within %v (last error: %v): %w", s.addr, s.timeout, last, ErrPeer)
		}
		conn, err := net.DialTimeout("tcp", s.addr, left)
		if err == nil {
			if err = s.probe(conn, deadline); err == nil {
				return nil
			}
			conn.Close()
			if errors.Is(err, errNotStore) {
				return err
			}
		}
		last = err
		time.Sleep(min(backoff, time.Until(deadline)))
		backoff = min(2*backoff, 250*time.Millisecond)
	}
}

var errNotStore = errors.New("not a TCPStore server")

func (s *Store) probe(conn net.Conn, deadline time.Time) error {
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	conn.SetDeadline(deadline)
	defer conn.SetDeadline(time.Time{})
	if _, err := conn.Write([]byte{qNumKeys}); err != nil {
		return err
	}
	br := bufio.NewReader(conn)
	n, err := (wireReader{br}).uint64()
	if err == nil && n > 1<<40 {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], n)
		return fmt.Errorf("collective: store at %s: %w: it answered a number-of-keys query with %q", s.addr, errNotStore, b[:])
	}
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
			// Accepted, then closed on the first query: not a TCPStore of
			// torch 1.13's protocol (a torch 2.x store refuses clients that
			// do not validate first).
			return fmt.Errorf("collective: store at %s: %w: it closed the connection on a number-of-keys query (a torch 2.x store? this client speaks torch 1.13's TCPStore protocol)", s.addr, errNotStore)
		}
		return err
	}
	s.conn, s.br = conn, br
	s.live.Store(&liveConn{conn})
	return nil
}

type liveConn struct{ net.Conn }

func isReset(err error) bool {
	var se *os.SyscallError
	return errors.As(err, &se) && strings.Contains(se.Error(), "reset")
}

// LocalAddr is the local address of the connection to the server: an
// address of this host that the server's host can reach.
func (s *Store) LocalAddr() net.Addr { return s.local }

// Timeout is the timeout the store was dialed with.
func (s *Store) Timeout() time.Duration { return s.timeout }

// wireKey is the key torch's TCPStore sends for key.
func wireKey(key string) string { return "/" + key }

// Set sets key to a copy of v. It returns once the server has applied it
// (torch's set has no answer: a number-of-keys query follows on the same
// connection, and its answer comes after the set was applied), so a rank
// that sets a key and then meets the others in a collective knows they
// can read it.
func (s *Store) Set(key string, v []byte) error {
	return s.do(func() error {
		if err := s.send(&query{typ: qSet, key: wireKey(key), value: v}, &query{typ: qNumKeys}); err != nil {
			return err
		}
		_, err := s.readUint64(s.timeout)
		return err
	})
}

// Get returns the value of key, waiting until some rank sets it or the
// timeout passes.
func (s *Store) Get(key string) ([]byte, error) {
	var v []byte
	err := s.do(func() error {
		if err := s.wait([]string{key}, s.timeout); err != nil {
			return err
		}
		if err := s.send(&query{typ: qGet, key: wireKey(key)}); err != nil {
			return err
		}
		var err error
		v, err = s.readBytes(s.timeout)
		return err
	})
	return v, err
}

// Wait waits until every key is set or the timeout passes.
func (s *Store) Wait(keys []string) error {
	return s.WaitTimeout(keys, s.timeout)
}

// WaitTimeout is Wait with its own timeout.
func (s *Store) WaitTimeout(keys []string, timeout time.Duration) error {
	return s.do(func() error { return s.wait(keys, timeout) })
}

// Check reports whether every key is set, without waiting.
func (s *Store) Check(keys []string) (bool, error) {
	var ready bool
	err := s.do(func() error {
		wk := make([]string, len(keys))
		for i, k := range keys {
			wk[i] = wireKey(k)
		}
		if err := s.send(&query{typ: qCheck, keys: wk}); err != nil {
			return err
		}
		s.conn.SetReadDeadline(time.Now().Add(s.timeout + storeGrace))
		b, err := s.br.ReadByte()
		if err != nil {
			return err
		}
		if b != checkReady && b != checkNotReady {
			return fmt.Errorf("%w: check answered %d", errFrame, b)
		}
		ready = b == checkReady
		return nil
	})
	return ready, err
}

// Add adds delta to the counter at key (0 if unset) and returns the sum.
// The counter is held as decimal text, as torch's is.
func (s *Store) Add(key string, delta int64) (int64, error) {
	var sum uint64
	err := s.do(func() error {
		if err := s.send(&query{typ: qAdd, key: wireKey(key), delta: delta}); err != nil {
			return err
		}
		var err error
		sum, err = s.readUint64(s.timeout)
		return err
	})
	return int64(sum), err
}

// Close closes the connection; calls in progress and later fail.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	// A call in progress holds s.mu: close its connection under it, so
	// that the call returns.
	if c := s.live.Load(); c != nil {
		return c.Close()
	}
	return nil
}

// timeoutError is a wait that ran out; the connection is given up but the
// store stays usable.
type timeoutError struct{ msg string }

func (e *timeoutError) Error() string { return e.msg }
func (e *timeoutError) Unwrap() error { return ErrPeer }

// do runs one call under s.mu: it reconnects after a timed-out wait, and
// turns a failure of the connection into the sticky error.
func (s *Store) do(call func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if s.closed.Load() {
		return s.fail(nil)
	}
	if s.conn == nil {
		if err := s.connect(time.Now().Add(s.timeout)); err != nil {
			s.err = err
			return err
		}
		if s.closed.Load() { // Close ran while we dialed
			s.conn.Close()
			return s.fail(nil)
		}
	}
	err := call()
	var te *timeoutError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		// The server still holds the wait and will answer it some day:
		// this connection's answers can no longer be matched to queries.
		s.conn.Close()
		s.conn = nil
		return fmt.Errorf("collective: store %s: %w", s.addr, err)
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return err // nothing was sent
	}
	return s.fail(err)
}

// usageError is a call refused before anything was sent.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// fail records a broken connection; s.mu is held.
func (s *Store) fail(err error) error {
	if s.closed.Load() {
		s.err = fmt.Errorf("collective: store %s: %w", s.addr, net.ErrClosed)
	} else {
		s.err = fmt.Errorf("collective: store %s: %v: %w", s.addr, err, ErrPeer)
	}
	if s.conn != nil {
		s.conn.Close()
	}
	return s.err
}

// send writes queries in one write; s.mu is held.
func (s *Store) send(qs ...*query) error {
	s.buf = s.buf[:0]
	for _, q := range qs {
		var err error
		if s.buf, err = appendQuery(s.buf, q); err != nil {
			return &usageError{err}
		}
	}
	s.conn.SetWriteDeadline(time.Now().Add(s.timeout))
	_, err := s.conn.Write(s.buf)
	return err
}

// wait sends a wait for keys and reads its answer within timeout; s.mu is
// held.
func (s *Store) wait(keys []string, timeout time.Duration) error {
	wk := make([]string, len(keys))
	for i, k := range keys {
		wk[i] = wireKey(k)
	}
	if err := s.send(&query{typ: qWait, keys: wk}); err != nil {
		return err
	}
	s.conn.SetReadDeadline(time.Now().Add(timeout))
	b, err := s.br.ReadByte()
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && !s.closed.Load() {
			what := fmt.Sprintf("keys %q not all set", keys)
			if len(keys) == 1 {
				what = fmt.Sprintf("key %q not set", keys[0])
			}
			return &timeoutError{fmt.Sprintf("%s within %v", what, timeout)}
		}
		return err
	}
	if b != waitStop {
		return fmt.Errorf("%w: wait answered %d", errFrame, b)
	}
	return nil
}

// readUint64 reads an int64 answer; s.mu is held.
func (s *Store) readUint64(timeout time.Duration) (uint64, error) {
	s.conn.SetReadDeadline(time.Now().Add(timeout + storeGrace))
	return wireReader{s.br}.uint64()
}

// readBytes reads a byte-string answer; s.mu is held.
func (s *Store) readBytes(timeout time.Duration) ([]byte, error) {
	s.conn.SetReadDeadline(time.Now().Add(timeout + storeGrace))
	return wireReader{s.br}.bytes(maxStoreValue)
}
