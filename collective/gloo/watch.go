//go:build cgo && !faster_serveonly

package gloo

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// A watch notices that a peer died, on connections of its own apart from
// Gloo's: every pair of ranks of a group holds one more TCP connection
// that carries nothing but one goodbye byte, which a rank sends when it
// closes its group (the last Close of its communicators). When a process
// ends without that — killed, crashed, exited without Close — its kernel
// closes the connection, the other end reads EOF with no goodbye, and the
// watch reports the rank lost. A goodbye is not a loss: in a group of
// three a rank may finish a broadcast and leave while the root still
// sends to the third. An operation Gloo is finishing when a loss is seen
// gets watchGrace to end by itself (comm.do).
//
// Gloo 0.0~git20220518 notices most deaths itself (the write or read on
// its pair fails), but not all: an unbound-buffer send queued on a pair
// whose write failed with EPIPE or ECONNRESET is not among the operations
// the pair fails when it closes (Pair::signalException walks the posted
// sends by their bound buffer, which an unbound send has not), so a
// broadcast from rank 0 to a rank killed at that moment waited out the
// whole collective timeout (TestTrainDDPRankDies failed so about one run
// in ten on a loaded machine). With the watch the operation returns
// ErrPeer naming the rank within watchGrace either way.
type watch struct {
	conns []net.Conn // to every other rank, by rank (nil at this rank)
	dead  chan struct{}

	mu      sync.Mutex
	lost    int // the first rank lost, -1 before
	lostErr error
	closing bool
	wg      sync.WaitGroup
}

const goodbye = 'B'

// watchGrace is how long an operation in progress when a peer is lost
// may still take to end by itself (its data may already be here) before
// it fails with the lost rank.
const watchGrace = time.Second

// newWatch connects the watch connections of rank among size ranks
// through store keys under prefix: each rank listens on host, publishes
// the address, and dials every rank below it; it accepts the ranks above.
func newWatch(g *group, prefix string) (*watch, error) {
	w := &watch{conns: make([]net.Conn, g.size), dead: make(chan struct{}), lost: -1}
	if g.size == 1 {
		return w, nil
	}
	fail := func(err error) (*watch, error) {
		for _, c := range w.conns {
			if c != nil {
				c.Close()
			}
		}
		return nil, fmt.Errorf("collective: gloo watch (rank %d of %d): %w", g.rank, g.size, err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(g.host, "0"))
	if err != nil {
		return fail(err)
	}
	defer ln.Close()
	key := func(r int) string { return prefix + "watch/" + strconv.Itoa(r) }
	if err := g.store.Set(key(g.rank), []byte(ln.Addr().String())); err != nil {
		return fail(err)
	}
	deadline := time.Now().Add(g.timeout)
	// Accept the ranks above this one while dialing the ranks below.
	accepted := make(chan error, 1)
	go func() {
		for n := g.size - 1 - g.rank; n > 0; n-- {
			ln.(*net.TCPListener).SetDeadline(deadline)
			c, err := ln.Accept()
			if err != nil {
				accepted <- err
				return
			}
			c.SetReadDeadline(deadline)
			var b [4]byte
			if _, err := io.ReadFull(c, b[:]); err != nil {
				c.Close()
				accepted <- err
				return
			}
			c.SetReadDeadline(time.Time{})
			r := int(binary.BigEndian.Uint32(b[:]))
			if r <= g.rank || r >= g.size || w.conns[r] != nil {
				c.Close()
				accepted <- fmt.Errorf("watch connection from rank %d", r)
				return
			}
			w.conns[r] = c
		}
		accepted <- nil
	}()
	var dialErr error
	for r := range g.rank {
		addr, err := g.store.Get(key(r))
		if err != nil {
			dialErr = err
			break
		}
		c, err := net.DialTimeout("tcp", string(addr), time.Until(deadline))
		if err != nil {
			dialErr = err
			break
		}
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(g.rank))
		if _, err := c.Write(b[:]); err != nil {
			c.Close()
			dialErr = err
			break
		}
		w.conns[r] = c
	}
	if dialErr != nil {
		ln.Close() // ends the accepting goroutine
		<-accepted
		return fail(dialErr)
	}
	if err := <-accepted; err != nil {
		return fail(err)
	}
	for r, c := range w.conns {
		if c != nil {
			w.wg.Add(1)
			go w.read(r, c)
		}
	}
	return w, nil
}

// read waits for rank r's goodbye or the end of its connection.
func (w *watch) read(r int, c net.Conn) {
	defer w.wg.Done()
	var b [1]byte
	n, err := c.Read(b[:])
	if n == 1 && b[0] == goodbye {
		return
	}
	if err == nil {
		err = fmt.Errorf("unexpected byte %#x", b[0])
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closing || w.lost >= 0 {
		return
	}
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		err = errors.New("its process ended without closing its communicator (its connections closed)")
	}
	w.lost, w.lostErr = r, err
	close(w.dead)
}

// lostRank returns the first rank lost and why, or -1.
func (w *watch) lostRank() (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lost, w.lostErr
}

// close says goodbye to every peer, closes the connections and waits for
// the readers.
func (w *watch) close() {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	for _, c := range w.conns {
		if c != nil {
			c.SetWriteDeadline(time.Now().Add(time.Second))
			c.Write([]byte{goodbye}) // a dead peer's error is of no use here
			c.Close()
		}
	}
	w.wg.Wait()
}
