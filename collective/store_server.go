package collective

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// StoreServer serves a rendezvous store in torch's TCPStore protocol (see
// store_wire.go): the launcher (or rank 0, when no launcher serves one)
// runs it at MASTER_ADDR:MASTER_PORT and every rank talks to it through a
// Store; torch's TCPStore clients may use it too. Keys live until deleted
// or Close.
//
// The server runs one goroutine to accept connections and two for each
// connection (one reads queries, one answers them, so that a pending wait
// does not hold the connection's later queries); Close stops and joins
// them all.
//
// A pending wait is indexed by its keys and counts those still missing: a
// key that appears or goes touches only the waits that name it, so no
// change rescans the waits (400 waits of 65,536 keys rescanned on every
// change held the lock for seconds). Pending waits hold at most
// maxStoreKeys keys on one connection and maxPendingKeys keys
// (maxPendingBytes bytes) on the server; a wait beyond is refused: the
// server hangs up on its connection.
type StoreServer struct {
	ln   net.Listener
	done chan struct{} // closed by Close
	wg   sync.WaitGroup

	mu      sync.Mutex
	data    map[string][]byte
	conns   map[net.Conn]struct{}
	closed  bool
	waiters map[string]map[*pendingWait]struct{} // the pending waits naming each key
	pending struct{ keys, bytes int }            // of all pending waits
	limits  struct{ conn, keys, bytes int }      // maxStoreKeys, maxPendingKeys, maxPendingBytes (tests lower them)
	touched int                                  // wait entries visited on key changes, for tests
}

// Bounds of the keys of the waits pending on a server (see StoreServer).
const (
	maxPendingKeys  = 1 << 18
	maxPendingBytes = 32 << 20
)

// pendingWait is a wait whose keys are not all set yet.
type pendingWait struct {
	c       *storeConn
	keys    []string // distinct
	bytes   int
	missing int // keys not set
}

// storeConn is a connection's share of the server's state, under s.mu.
type storeConn struct {
	waits  map[*pendingWait]struct{}
	keys   int           // of its pending waits
	ready  int           // waits whose keys all appeared, not yet answered
	notify chan struct{} // capacity 1: ready grew
}

// ListenStore starts a store server listening on addr (host:port; port 0
// picks a free one, see Addr). A port already in use is a clear error.
func ListenStore(addr string) (*StoreServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("collective: store: %s is already in use (another job on MASTER_PORT?): %w", addr, err)
		}
		return nil, fmt.Errorf("collective: store: listen: %w", err)
	}
	s := &StoreServer{
		ln:      ln,
		done:    make(chan struct{}),
		data:    map[string][]byte{},
		conns:   map[net.Conn]struct{}{},
		waiters: map[string]map[*pendingWait]struct{}{},
	}
	s.limits.conn, s.limits.keys, s.limits.bytes = maxStoreKeys, maxPendingKeys, maxPendingBytes
	s.wg.Go(s.accept)
	return s, nil
}

// Addr is the address the server listens on.
func (s *StoreServer) Addr() net.Addr { return s.ln.Addr() }

// Close stops the server: it closes the listener and every connection, so
// that the calls of clients fail with ErrPeer, and waits for its goroutines
// to exit. Close is idempotent.
func (s *StoreServer) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	err := s.ln.Close()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func (s *StoreServer) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.done:
				return
			default:
			}
			// Out of descriptors or the like: back off, then retry.
			select {
			case <-s.done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

// serve answers the queries of one connection until it fails or the
// server closes. A reader goroutine decodes the queries; this one answers
// them and the waits, whose answers go out when their keys appear.
func (s *StoreServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	queries := make(chan query) // unbuffered: the reader waits for each answer
	readerDone := make(chan struct{})
	quit := make(chan struct{}) // closed when the answers stop
	s.wg.Go(func() {
		defer close(readerDone)
		br := bufio.NewReader(c)
		for first := true; ; first = false {
			q, err := readQuery(br, first)
			if err != nil {
				return // EOF, a broken connection, a malformed query: hang up
			}
			select {
			case queries <- q:
			case <-quit:
				return
			}
		}
	})
	// After the answers stop, close the connection so that the reader
	// stops too, and wait for it.
	defer func() { close(quit); c.Close(); <-readerDone }()
	sc := &storeConn{waits: map[*pendingWait]struct{}{}, notify: make(chan struct{}, 1)}
	defer func() {
		s.mu.Lock()
		for w := range sc.waits {
			s.unregisterLocked(w)
		}
		s.mu.Unlock()
	}()

	var out []byte
	for {
		select {
		case q := <-queries:
			var ok bool
			if out, ok = s.answer(out[:0], &q, sc); !ok {
				return
			}
		case <-sc.notify:
			// Answer the waits whose keys all appeared.
			s.mu.Lock()
			n := sc.ready
			sc.ready = 0
			s.mu.Unlock()
			out = out[:0]
			for range n {
				out = append(out, waitStop)
			}
		case <-readerDone:
			return
		case <-s.done:
			return
		}
		if len(out) > 0 {
			if _, err := c.Write(out); err != nil {
				return
			}
			out = out[:0]
		}
	}
}

// addWaitLocked registers a wait for keys, some of them missing; false when
// it would pass the bounds on pending waits. s.mu is held.
func (s *StoreServer) addWaitLocked(sc *storeConn, keys []string) bool {
	w := &pendingWait{c: sc}
	seen := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		if _, dup := seen[k]; dup {
			continue
		}
		seen[k] = struct{}{}
		w.keys = append(w.keys, k)
		w.bytes += len(k)
		if _, ok := s.data[k]; !ok {
			w.missing++
		}
	}
	if sc.keys+len(w.keys) > s.limits.conn || s.pending.keys+len(w.keys) > s.limits.keys || s.pending.bytes+w.bytes > s.limits.bytes {
		return false
	}
	for _, k := range w.keys {
		ws := s.waiters[k]
		if ws == nil {
			ws = map[*pendingWait]struct{}{}
			s.waiters[k] = ws
		}
		ws[w] = struct{}{}
	}
	sc.waits[w] = struct{}{}
	sc.keys += len(w.keys)
	s.pending.keys += len(w.keys)
	s.pending.bytes += w.bytes
	return true
}

// unregisterLocked forgets pending wait w. s.mu is held.
func (s *StoreServer) unregisterLocked(w *pendingWait) {
	for _, k := range w.keys {
		ws := s.waiters[k]
		delete(ws, w)
		if len(ws) == 0 {
			delete(s.waiters, k)
		}
	}
	delete(w.c.waits, w)
	w.c.keys -= len(w.keys)
	s.pending.keys -= len(w.keys)
	s.pending.bytes -= w.bytes
}

// setLocked sets key to v, telling the waits that name it when it is new.
// s.mu is held.
func (s *StoreServer) setLocked(key string, v []byte) {
	_, existed := s.data[key]
	s.data[key] = v
	if existed {
		return
	}
	for w := range s.waiters[key] {
		s.touched++
		if w.missing--; w.missing == 0 {
			s.unregisterLocked(w)
			w.c.ready++
			select {
			case w.c.notify <- struct{}{}:
			default: // already signalled
			}
		}
	}
}

// deleteLocked deletes key, which exists; the waits that name it miss it
// again. s.mu is held.
func (s *StoreServer) deleteLocked(key string) {
	delete(s.data, key)
	for w := range s.waiters[key] {
		s.touched++
		w.missing++
	}
}

// hasAllLocked reports whether every key is set; s.mu is held.
func (s *StoreServer) hasAllLocked(keys []string) bool {
	for _, k := range keys {
		if _, ok := s.data[k]; !ok {
			return false
		}
	}
	return true
}

// answer runs query q and appends its answer to out. A wait whose keys are
// missing joins waits instead (answered by serve). ok is false when the
// connection must be closed (a query this server refuses).
func (s *StoreServer) answer(out []byte, q *query, sc *storeConn) (_ []byte, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch q.typ {
	case qSet:
		s.setLocked(q.key, slices.Clone(q.value))
	case qCompareSet:
		old, exists := s.data[q.key]
		switch {
		case !exists && len(q.value) == 0:
			// torch: a missing key counts as holding the empty value.
			s.setLocked(q.key, slices.Clone(q.desired))
			out = appendBytes(out, q.desired)
		case !exists:
			out = appendBytes(out, q.value) // torch answers the expected value
		case string(old) == string(q.value):
			s.setLocked(q.key, slices.Clone(q.desired))
			out = appendBytes(out, q.desired)
		default:
			out = appendBytes(out, old)
		}
	case qGet:
		v, exists := s.data[q.key]
		if !exists {
			return out, false // torch's server fails the same way: clients wait first
		}
		out = appendBytes(out, v)
	case qAdd:
		sum := q.delta
		if old, exists := s.data[q.key]; exists {
			n, err := strconv.ParseInt(string(old), 10, 64)
			if err != nil {
				return out, false // not a counter: torch's server fails too
			}
			sum += n
		}
		s.setLocked(q.key, strconv.AppendInt(nil, sum, 10))
		out = binary.LittleEndian.AppendUint64(out, uint64(sum))
	case qCheck:
		if s.hasAllLocked(q.keys) {
			out = append(out, checkReady)
		} else {
			out = append(out, checkNotReady)
		}
	case qWait:
		if s.hasAllLocked(q.keys) {
			out = append(out, waitStop)
		} else if !s.addWaitLocked(sc, q.keys) {
			return out, false // beyond the bounds on pending waits: hang up
		}
	case qNumKeys:
		out = binary.LittleEndian.AppendUint64(out, uint64(len(s.data)))
	case qDeleteKey:
		n := 0
		if _, exists := s.data[q.key]; exists {
			s.deleteLocked(q.key)
			n = 1
		}
		out = binary.LittleEndian.AppendUint64(out, uint64(n))
	default: // qWatchKey: torch's callback socket is not served
		return out, false
	}
	return out, true
}
