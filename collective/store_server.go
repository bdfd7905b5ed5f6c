package collective

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// StoreServer serves a rendezvous store: rank 0 runs it at
// MASTER_ADDR:MASTER_PORT and every rank, rank 0 included, talks to it
// through a Store. Keys are never deleted; values live until Close.
//
// The server runs one goroutine to accept connections and one for each
// connection; Close stops and joins them all.
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
	s.wg.Add(1)
	go s.accept()
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
	defer s.wg.Done()
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

// serve answers the requests of one connection until it fails or the
// server closes.
func (s *StoreServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	var magic [len(storeMagic)]byte
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, magic[:]); err != nil || magic != storeMagic {
		return
	}
	if _, err := c.Write(storeMagic[:]); err != nil {
		return
	}
	c.SetDeadline(time.Time{})
	br := bufio.NewReader(c)
	var in, out []byte
	for {
		body, err := readFrame(br, in)
		if err != nil {
			return
		}
		in = body
		req, err := decodeRequest(body)
		if err != nil {
			out, _ = appendResponse(out[:0], statusError, []byte(err.Error()))
			c.Write(out)
			return
		}
		status, payload := s.handle(&req)
		if status == statusHangUp {
			return
		}
		if out, err = appendResponse(out[:0], status, payload); err != nil {
			return
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// handle runs one request and returns the response status and payload.
func (s *StoreServer) handle(req *storeRequest) (byte, []byte) {
	switch req.op {
	case opSet:
		s.mu.Lock()
		s.data[req.key] = append([]byte(nil), req.value...)
		s.notifyLocked()
		s.mu.Unlock()
		return statusOK, nil
	case opAdd:
		s.mu.Lock()
		defer s.mu.Unlock()
		var v int64
		if old, ok := s.data[req.key]; ok {
			if len(old) != 8 {
				return statusError, []byte(fmt.Sprintf("key %q holds %d bytes, not a counter", req.key, len(old)))
			}
			v = int64(binary.BigEndian.Uint64(old))
		}
		v += req.delta
		s.data[req.key] = binary.BigEndian.AppendUint64(nil, uint64(v))
		s.notifyLocked()
		return statusOK, binary.BigEndian.AppendUint64(nil, uint64(v))
	case opGet, opWait:
		keys := req.keys
		if req.op == opGet {
			keys = []string{req.key}
		}
		missing, ok := s.wait(keys, time.Duration(req.timeout)*time.Millisecond)
		if !ok {
			return statusHangUp, nil
		}
		if missing != "" {
			return statusTimeout, []byte(missing)
		}
		if req.op == opWait {
			return statusOK, nil
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return statusOK, s.data[req.key]
	}
	return statusError, []byte(fmt.Sprintf("unknown op %d", req.op))
}

// notifyLocked wakes the waiters; s.mu is held.
func (s *StoreServer) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// statusHangUp, never sent, tells serve to close the connection.
const statusHangUp = 255

// wait blocks until every key is set and returns "", or returns the first
// missing key after timeout. It returns ok false when the server closes.
func (s *StoreServer) wait(keys []string, timeout time.Duration) (missing string, ok bool) {
	var timer *time.Timer
	for {
		s.mu.Lock()
		missing = ""
		for _, k := range keys {
			if _, ok := s.data[k]; !ok {
				missing = k
				break
			}
		}
		changed := s.changed
		s.mu.Unlock()
		if missing == "" {
			return "", true
		}
		if timer == nil {
			timer = time.NewTimer(timeout)
			defer timer.Stop()
		}
		select {
		case <-changed:
		case <-timer.C:
			return missing, true
		case <-s.done:
			return "", false
		}
	}
}
