//go:build cgo && !faster_serveonly

package gloo

/*
#cgo CXXFLAGS: -std=c++17 -O2
#cgo LDFLAGS: -lgloo -lstdc++
#include <stdlib.h>
#include "gloo.h"
*/
import "C"

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime/cgo"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/faster-training/faster/collective"
)

func init() {
	collective.Register("gloo", func(c collective.Config) (collective.Comm, error) { return Open(c) })
}

// rootPrefix is the store key prefix of the communicator Open returns,
// after the group's Config.StorePrefix.
const rootPrefix = "gloo/"

// group is what a communicator and its forks share on one rank: the store
// client and, on rank 0, the store server. The last Close closes them.
type group struct {
	rank, size int
	timeout    time.Duration
	host       string   // the address Gloo devices listen on
	iface      string   // or the interface
	hosts      []string // every rank's host, by rank, to name a lost peer
	store      *collective.Store
	server     *collective.StoreServer // rank 0 only, without an agent store
	watch      *watch                  // set once Open has connected

	mu   sync.Mutex
	refs int
}

func (g *group) release() {
	g.mu.Lock()
	g.refs--
	last := g.refs == 0
	g.mu.Unlock()
	if last {
		if g.watch != nil {
			g.watch.close()
		}
		g.store.Close()
		if g.server != nil {
			g.server.Close()
		}
	}
}

// comm is a collective.Comm over a Gloo context.
type comm struct {
	g      *group
	prefix string

	mu     sync.Mutex // held by operations and Close
	c      *C.fg_comm
	err    error          // sticky
	forks  map[string]int // how often each name was forked
	closed bool
	// running is closed when the shim call that a lost peer's error
	// left behind returns (nil when none): c.c is freed after it.
	running chan struct{}
}

var _ collective.Comm = (*comm)(nil)

// Open joins the group that c describes. Rank 0 serves the rendezvous
// store, unless c.AgentStore says a launcher serves it (torchrun's agent
// owns MASTER_PORT then: binding it would fail); Open returns once every
// rank has connected to every other, or fails after c.Timeout (60 s if
// zero).
func Open(c collective.Config) (collective.Comm, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	// Gloo's C++ threads write to peers' sockets; a write to a peer that
	// died raises SIGPIPE on a non-Go thread, which Go's runtime turns into
	// the death of the process ("signal: broken pipe") before the error
	// that names the lost rank is reported. Ignored, the write returns
	// EPIPE and Gloo throws, as it should.
	signal.Ignore(syscall.SIGPIPE)
	g := &group{rank: c.Rank, size: c.Size, timeout: c.EffectiveTimeout(), iface: os.Getenv("GLOO_SOCKET_IFNAME")}
	addr := c.StoreAddr()
	if c.Rank == 0 && !c.AgentStore {
		// Serve on every interface, as torch's TCPStore does, but dial
		// MASTER_ADDR: the local address of that connection is one the
		// other ranks can reach.
		srv, err := collective.ListenStore(net.JoinHostPort("", strconv.Itoa(c.Port)))
		if err != nil {
			return nil, fmt.Errorf("collective: gloo (rank 0 of %d): %w", c.Size, err)
		}
		g.server = srv
		if c.Port == 0 {
			c.Port = srv.Addr().(*net.TCPAddr).Port
			addr = c.StoreAddr()
		}
	}
	store, err := collective.DialStore(addr, g.timeout)
	if err != nil {
		if g.server != nil {
			g.server.Close()
		}
		return nil, fmt.Errorf("collective: gloo rendezvous (rank %d of %d): %w", c.Rank, c.Size, err)
	}
	// Claim the rank first: a second process with this RANK is refused
	// here, before it writes a key the first one's group reads.
	if err := collective.ClaimRank(store, c.StorePrefix+rootPrefix, c.Rank); err != nil {
		store.Close()
		if g.server != nil {
			g.server.Close()
		}
		return nil, fmt.Errorf("collective: gloo rendezvous (rank %d of %d): %w", c.Rank, c.Size, err)
	}
	g.store = store
	if tcp, ok := store.LocalAddr().(*net.TCPAddr); ok {
		g.host = tcp.IP.String()
	} else {
		g.host = c.Addr
	}
	// Publish this rank's host: an error that names a peer's address can
	// then name its rank.
	hostKey := func(r int) string { return c.StorePrefix + rootPrefix + "host/" + strconv.Itoa(r) }
	cm, err := func() (*comm, error) {
		if err := store.Set(hostKey(c.Rank), []byte(g.host)); err != nil {
			return nil, fmt.Errorf("collective: gloo rendezvous (rank %d of %d): %w", c.Rank, c.Size, err)
		}
		// Ranks of different sizes would meet Gloo's "enforce fail".
		if err := collective.AgreeSize(store, c.StorePrefix+rootPrefix, c.Rank, c.Size); err != nil {
			return nil, fmt.Errorf("collective: gloo rendezvous (rank %d of %d): %w", c.Rank, c.Size, err)
		}
		cm, err := g.connect(c.StorePrefix + rootPrefix)
		if err != nil {
			return nil, err
		}
		if g.watch, err = newWatch(g, c.StorePrefix+rootPrefix); err != nil {
			cm.Close()
			return nil, err
		}
		// Every rank set its host before it connected: no wait.
		for r := range c.Size {
			h, err := store.Get(hostKey(r))
			if err != nil {
				cm.Close()
				return nil, fmt.Errorf("collective: gloo rendezvous (rank %d of %d): %w", c.Rank, c.Size, err)
			}
			g.hosts = append(g.hosts, string(h))
		}
		return cm, nil
	}()
	if err != nil {
		store.Close()
		if g.server != nil {
			g.server.Close()
		}
		return nil, err
	}
	return cm, nil
}

// lostPeer names the rank an error of Gloo's is about, from the peer
// address Gloo's message gives ("[10.0.0.2]:41234"): the rank on that host
// when it is the only one there, the other rank in a group of two.
func (g *group) lostPeer(msg string) string {
	if g.size == 2 {
		return fmt.Sprintf(" (lost rank %d)", 1-g.rank)
	}
	i := strings.Index(msg, "[")
	j := strings.Index(msg, "]:")
	if i < 0 || j < i {
		return ""
	}
	host := msg[i+1 : j]
	peer := -1
	for r, h := range g.hosts {
		if h == host && r != g.rank {
			if peer >= 0 {
				return "" // several ranks on that host
			}
			peer = r
		}
	}
	if peer < 0 {
		return ""
	}
	return fmt.Sprintf(" (lost rank %d at %s)", peer, host)
}

// connect makes a communicator whose Gloo rendezvous uses the store keys
// under prefix. The group's reference count covers it on success.
func (g *group) connect(prefix string) (*comm, error) {
	view := &storeView{store: g.store, prefix: prefix}
	h := cgo.NewHandle(view)
	defer h.Delete()
	host := C.CString(g.host)
	defer C.free(unsafe.Pointer(host))
	iface := C.CString(g.iface)
	defer C.free(unsafe.Pointer(iface))
	var fc *C.fg_comm
	var cerr *C.char
	rc := C.fg_comm_new(C.int(g.rank), C.int(g.size), host, iface, C.uintptr_t(h), C.int64_t(g.timeout.Milliseconds()), &fc, &cerr)
	if err := g.errorOf("rendezvous", rc, cerr); err != nil {
		if view.err != nil {
			// The store failed: its error says more than Gloo's copy.
			return nil, fmt.Errorf("collective: gloo rendezvous (rank %d of %d): %w", g.rank, g.size, view.err)
		}
		return nil, err
	}
	cm := &comm{g: g, prefix: prefix, c: fc}
	// Once every rank has passed this barrier, every rank has finished its
	// rendezvous: rank 0 may close the store at once.
	if err := cm.Barrier(); err != nil {
		C.fg_comm_free(fc)
		return nil, err
	}
	g.mu.Lock()
	g.refs++
	g.mu.Unlock()
	return cm, nil
}

// errorOf turns a shim result into an error.
func (g *group) errorOf(op string, rc C.int, cerr *C.char) error {
	if rc == C.FG_OK {
		return nil
	}
	msg := "unknown error"
	if cerr != nil {
		msg = C.GoString(cerr)
		C.free(unsafe.Pointer(cerr))
	}
	if rc == C.FG_EIO {
		return fmt.Errorf("collective: gloo %s (rank %d of %d): %s%s: %w", op, g.rank, g.size, msg, g.lostPeer(msg), collective.ErrPeer)
	}
	return fmt.Errorf("collective: gloo %s (rank %d of %d): %s", op, g.rank, g.size, msg)
}

func (c *comm) Rank() int { return c.g.rank }
func (c *comm) Size() int { return c.g.size }

// do runs one shim operation under c.mu with the sticky error. With the
// group's watch it runs the call on a goroutine of its own and returns
// ErrPeer naming the rank when the watch loses one and the call has not
// ended watchGrace later: Gloo may otherwise wait for a dead rank until
// its timeout (see watch). The call left behind ends by Gloo's timeout or
// error; the buffer stays the call's until then, and Close leaves freeing
// the context to it.
func (c *comm) do(op string, f func(errp **C.char) C.int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("collective: gloo %s (rank %d of %d): %w", op, c.g.rank, c.g.size, collective.ErrClosed)
	}
	if c.err != nil {
		return c.err
	}
	w := c.g.watch
	if w == nil || c.g.size == 1 {
		var cerr *C.char
		if err := c.g.errorOf(op, f(&cerr), cerr); err != nil {
			c.err = err
			return err
		}
		return nil
	}
	if err := c.lostErr(op, w); err != nil {
		c.err = err
		return err
	}
	type result struct {
		rc   C.int
		cerr *C.char
	}
	done := make(chan result, 1)
	go func() {
		var cerr *C.char
		rc := f(&cerr)
		done <- result{rc, cerr}
	}()
	var r result
	select {
	case r = <-done:
	case <-w.dead:
		select {
		case r = <-done:
		case <-time.After(watchGrace):
			c.err = c.lostErr(op, w)
			running := make(chan struct{})
			c.running = running
			go func() {
				r := <-done
				if r.cerr != nil {
					C.free(unsafe.Pointer(r.cerr))
				}
				c.mu.Lock()
				defer c.mu.Unlock()
				c.running = nil
				close(running)
				if c.closed && c.c != nil {
					C.fg_comm_free(c.c)
					c.c = nil
				}
			}()
			return c.err
		}
	}
	err := c.g.errorOf(op, r.rc, r.cerr)
	if err != nil {
		if lost := c.lostErr(op, w); lost != nil && !strings.Contains(err.Error(), "lost rank") {
			err = lost // Gloo's error did not name the rank; the watch's does
		}
		c.err = err
	}
	return err
}

// lostErr is the error of op when the watch has lost a rank, else nil.
func (c *comm) lostErr(op string, w *watch) error {
	r, why := w.lostRank()
	if r < 0 {
		return nil
	}
	return fmt.Errorf("collective: gloo %s (rank %d of %d): rank %d: %v (lost rank %d): %w", op, c.g.rank, c.g.size, r, why, r, collective.ErrPeer)
}

func (c *comm) AllReduceF32(x []float32) error {
	return c.do("all-reduce", func(errp **C.char) C.int {
		if len(x) == 0 {
			return C.FG_OK
		}
		return C.fg_allreduce_f32(c.c, (*C.float)(unsafe.Pointer(&x[0])), C.size_t(len(x)), errp)
	})
}

func (c *comm) AllReduceF64(x []float64) error {
	return c.do("all-reduce", func(errp **C.char) C.int {
		if len(x) == 0 {
			return C.FG_OK
		}
		return C.fg_allreduce_f64(c.c, (*C.double)(unsafe.Pointer(&x[0])), C.size_t(len(x)), errp)
	})
}

func (c *comm) Broadcast(x []float32, root int) error {
	if root < 0 || root >= c.g.size {
		return fmt.Errorf("collective: gloo broadcast (rank %d of %d): root %d out of range", c.g.rank, c.g.size, root)
	}
	return c.do("broadcast", func(errp **C.char) C.int {
		if len(x) == 0 {
			return C.FG_OK
		}
		return C.fg_broadcast_f32(c.c, (*C.float)(unsafe.Pointer(&x[0])), C.size_t(len(x)), C.int(root), errp)
	})
}

func (c *comm) Barrier() error {
	return c.do("barrier", func(errp **C.char) C.int { return C.fg_barrier(c.c, errp) })
}

// Fork connects a new Gloo context, with its own connections, through the
// same store: every rank must fork the same names in the same order. The
// store must still be served, so rank 0 must not have closed all of its
// communicators.
func (c *comm) Fork(name string) (collective.Comm, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, fmt.Errorf("collective: gloo fork %q (rank %d of %d): %w", name, c.g.rank, c.g.size, collective.ErrClosed)
	}
	if c.forks == nil {
		c.forks = map[string]int{}
	}
	prefix := c.prefix + name + "#" + strconv.Itoa(c.forks[name]) + "/"
	c.forks[name]++
	c.mu.Unlock()
	return c.g.connect(prefix)
}

// Close closes the connections: a peer waiting on this rank gets an error.
// On rank 0 the last Close of a communicator and its forks also stops the
// store. An operation in progress on another goroutine ends first.
func (c *comm) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.running == nil { // else the call left behind frees it when it ends
		C.fg_comm_free(c.c)
		c.c = nil
	}
	c.g.release()
	return nil
}

// storeView is the store as one communicator's Gloo rendezvous sees it:
// its keys are under prefix.
type storeView struct {
	store  *collective.Store
	prefix string
	err    error // the first error of the store
}

// check records the first error of the store and returns it in C memory
// for the shim to free, or nil.
func (v *storeView) check(err error) *C.char {
	if err == nil {
		return nil
	}
	if v.err == nil {
		v.err = err
	}
	return C.CString(err.Error())
}

func viewOf(h C.uintptr_t) *storeView { return cgo.Handle(h).Value().(*storeView) }

//export fgGoStoreSet
func fgGoStoreSet(h C.uintptr_t, key *C.char, keyLen C.size_t, val *C.char, valLen C.size_t) *C.char {
	v := viewOf(h)
	return v.check(v.store.Set(v.prefix+C.GoStringN(key, C.int(keyLen)), C.GoBytes(unsafe.Pointer(val), C.int(valLen))))
}

//export fgGoStoreGet
func fgGoStoreGet(h C.uintptr_t, key *C.char, keyLen C.size_t, val **C.char, valLen *C.size_t) *C.char {
	v := viewOf(h)
	b, err := v.store.Get(v.prefix + C.GoStringN(key, C.int(keyLen)))
	if err != nil {
		return v.check(err)
	}
	*val = (*C.char)(C.CBytes(b))
	*valLen = C.size_t(len(b))
	return nil
}

//export fgGoStoreWait
func fgGoStoreWait(h C.uintptr_t, key *C.char, keyLen C.size_t) *C.char {
	v := viewOf(h)
	return v.check(v.store.Wait([]string{v.prefix + C.GoStringN(key, C.int(keyLen))}))
}
