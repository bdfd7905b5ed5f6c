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
type StoreServer struct {
	ln   net.Listener
	done chan struct{} // closed by Close
	wg   sync.WaitGroup

	mu      sync.Mutex
	data    map[string][]byte
	changed chan struct{} // closed and replaced whenever data changes
	conns   map[net.Conn]struct{}
	closed  bool
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
		changed: make(chan struct{}),
		conns:   map[net.Conn]struct{}{},
	}
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

	var out []byte
	var waits [][]string // pending waits, in the order they came
	for {
		var changed chan struct{}
		if len(waits) > 0 {
			s.mu.Lock()
			changed = s.changed
			// Answer the waits whose keys are all set now.
			kept := waits[:0]
			for _, keys := range waits {
				if s.hasAllLocked(keys) {
					out = append(out, waitStop)
				} else {
					kept = append(kept, keys)
				}
			}
			waits = kept
			s.mu.Unlock()
			if len(out) > 0 {
				if _, err := c.Write(out); err != nil {
					return
				}
				out = out[:0]
			}
			if len(waits) == 0 {
				changed = nil
			}
		}
		select {
		case q := <-queries:
			var ok bool
			if out, ok = s.answer(out[:0], &q, &waits); !ok {
				return
			}
			if len(out) > 0 {
				if _, err := c.Write(out); err != nil {
					return
				}
				out = out[:0]
			}
		case <-changed:
		case <-readerDone:
			return
		case <-s.done:
			return
		}
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

// notifyLocked wakes the waiters; s.mu is held.
func (s *StoreServer) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// answer runs query q and appends its answer to out. A wait whose keys are
// missing joins waits instead (answered by serve). ok is false when the
// connection must be closed (a query this server refuses).
func (s *StoreServer) answer(out []byte, q *query, waits *[][]string) (_ []byte, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch q.typ {
	case qSet:
		s.data[q.key] = slices.Clone(q.value)
		s.notifyLocked()
	case qCompareSet:
		old, exists := s.data[q.key]
		switch {
		case !exists && len(q.value) == 0:
			// torch: a missing key counts as holding the empty value.
			s.data[q.key] = slices.Clone(q.desired)
			s.notifyLocked()
			out = appendBytes(out, q.desired)
		case !exists:
			out = appendBytes(out, q.value) // torch answers the expected value
		case string(old) == string(q.value):
			s.data[q.key] = slices.Clone(q.desired)
			s.notifyLocked()
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
		s.data[q.key] = strconv.AppendInt(nil, sum, 10)
		s.notifyLocked()
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
		} else {
			*waits = append(*waits, q.keys)
		}
	case qNumKeys:
		out = binary.LittleEndian.AppendUint64(out, uint64(len(s.data)))
	case qDeleteKey:
		n := 0
		if _, exists := s.data[q.key]; exists {
			delete(s.data, q.key)
			n = 1
			s.notifyLocked()
		}
		out = binary.LittleEndian.AppendUint64(out, uint64(n))
	default: // qWatchKey: torch's callback socket is not served
		return out, false
	}
	return out, true
}
