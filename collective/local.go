package collective

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
)

// ErrClosed is returned by the operations of a Comm after its own Close.
var ErrClosed = errors.New("collective: communicator closed")

// NewLocal returns the n members of a group whose ranks are goroutines of
// this process; member i has rank i. Each member is used by its own
// goroutine, as a Comm of a multi-process group is.
//
// An all-reduce sums in rank order, ((x0 + x1) + x2) + ..., so that every
// rank gets the same bits and a run repeats exactly; the ranks share the
// work, each summing a slice of the elements. A member's Close makes the
// pending and later operations of the others fail with an error wrapping
// ErrPeer. Fork on every member with the same name gives the members of
// one new group, independent of this one (closing one does not close the
// other). NewLocal panics if n < 1.
func NewLocal(n int) []Comm {
	if n < 1 {
		panic("collective: NewLocal: n < 1")
	}
	g := &localGroup{n: n, broken: make(chan struct{}), closedBy: -1, forks: map[string]*localFork{}}
	comms := make([]Comm, n)
	for i := range comms {
		comms[i] = &localComm{g: g, rank: i}
	}
	return comms
}

// localGroup is the state the members of a local group share.
type localGroup struct {
	n      int
	broken chan struct{} // closed when the first member closes

	mu       sync.Mutex
	cur      *localRound // the round that ranks are arriving at, or nil
	closedBy int         // the first rank to close, or -1
	forks    map[string]*localFork
}

// localRound is one collective operation. Each rank records its operation
// and arrives; once all have arrived (all is closed) each rank does its
// share of the work and leaves; once all have left (fin is closed) the
// buffers are the callers' again.
type localRound struct {
	ops     []localOp
	arrived int
	all     chan struct{}
	left    int
	fin     chan struct{}
}

// localOp is one rank's part in a round.
type localOp struct {
	name  string // "all-reduce", "broadcast", "barrier"
	f32   []float32
	f64   []float64
	isF64 bool
	root  int
}

// localFork is a group made by Fork, waiting for its members to be taken.
type localFork struct {
	comms []Comm
	taken int
}

type localComm struct {
	g      *localGroup
	rank   int
	closed atomic.Bool
	forks  map[string]int // how often each name was forked, for unique keys
}

var _ Comm = (*localComm)(nil)

// InProcess reports that every rank of the group is in this process.
func (c *localComm) InProcess() bool { return true }

func (c *localComm) Rank() int { return c.rank }
func (c *localComm) Size() int { return c.g.n }

func (c *localComm) AllReduceF32(x []float32) error {
	return c.run(localOp{name: "all-reduce", f32: x})
}

func (c *localComm) AllReduceF64(x []float64) error {
	return c.run(localOp{name: "all-reduce", f64: x, isF64: true})
}

func (c *localComm) Broadcast(x []float32, root int) error {
	if root < 0 || root >= c.g.n {
		return c.errorf("broadcast", "root %d out of range", root)
	}
	return c.run(localOp{name: "broadcast", f32: x, root: root})
}

func (c *localComm) Barrier() error {
	return c.run(localOp{name: "barrier"})
}

func (c *localComm) errorf(op, format string, args ...any) error {
	return fmt.Errorf("collective: local %s (rank %d of %d): %s", op, c.rank, c.g.n, fmt.Sprintf(format, args...))
}

// peerError is the error of an operation that a closed peer broke; g.mu
// is held.
func (c *localComm) peerErrorLocked(op string) error {
	return fmt.Errorf("collective: local %s (rank %d of %d): rank %d closed: %w", op, c.rank, c.g.n, c.g.closedBy, ErrPeer)
}

// run takes part in one round.
func (c *localComm) run(op localOp) error {
	g := c.g
	if c.closed.Load() {
		return fmt.Errorf("collective: local %s (rank %d of %d): %w", op.name, c.rank, g.n, ErrClosed)
	}
	g.mu.Lock()
	if g.closedBy >= 0 {
		err := c.peerErrorLocked(op.name)
		g.mu.Unlock()
		return err
	}
	if g.cur == nil {
		g.cur = &localRound{ops: make([]localOp, g.n), all: make(chan struct{}), fin: make(chan struct{})}
	}
	r := g.cur
	r.ops[c.rank] = op
	r.arrived++
	if r.arrived == g.n {
		g.cur = nil
		close(r.all)
	}
	g.mu.Unlock()

	select {
	case <-r.all:
	case <-g.broken:
		select {
		case <-r.all: // every rank arrived: finish the round with them
		default:
			// The round can never complete: no rank arrives after the
			// group broke.
			g.mu.Lock()
			defer g.mu.Unlock()
			return c.peerErrorLocked(op.name)
		}
	}
	if err := c.check(r.ops); err != nil {
		return err // every rank finds the same mismatch and returns
	}
	c.work(r.ops)
	g.mu.Lock()
	r.left++
	if r.left == g.n {
		close(r.fin)
	}
	g.mu.Unlock()
	// The others only do their bounded share of the work: no need to
	// watch g.broken.
	<-r.fin
	return nil
}

// check reports whether the ranks called the same operation on buffers of
// the same length.
func (c *localComm) check(ops []localOp) error {
	me := ops[c.rank]
	for r, o := range ops {
		switch {
		case o.name != me.name || o.isF64 != me.isF64:
			return c.errorf(me.name, "rank %d called %s", r, o.describe())
		case len(o.f32) != len(me.f32) || len(o.f64) != len(me.f64):
			return c.errorf(me.name, "rank %d has %s, rank %d has %s", r, o.describe(), c.rank, me.describe())
		case o.root != me.root:
			return c.errorf(me.name, "rank %d has root %d, rank %d has root %d", r, o.root, c.rank, me.root)
		}
	}
	return nil
}

func (o localOp) describe() string {
	switch {
	case o.name == "barrier":
		return "barrier"
	case o.isF64:
		return o.name + " of " + strconv.Itoa(len(o.f64)) + " float64"
	}
	return o.name + " of " + strconv.Itoa(len(o.f32)) + " float32"
}

// work does this rank's share of a round whose operations all match.
func (c *localComm) work(ops []localOp) {
	me := ops[c.rank]
	switch me.name {
	case "all-reduce":
		if me.isF64 {
			bufs := make([][]float64, len(ops))
			for i, o := range ops {
				bufs[i] = o.f64
			}
			sumShare(bufs, c.rank)
		} else {
			bufs := make([][]float32, len(ops))
			for i, o := range ops {
				bufs[i] = o.f32
			}
			sumShare(bufs, c.rank)
		}
	case "broadcast":
		if c.rank != me.root {
			copy(me.f32, ops[me.root].f32)
		}
	}
}

// sumShare sums share rank of bufs in rank order into bufs[0], then copies
// it to the others. Only this rank touches the share.
func sumShare[T float32 | float64](bufs [][]T, rank int) {
	n := len(bufs[0])
	lo, hi := rank*n/len(bufs), (rank+1)*n/len(bufs)
	acc := bufs[0][lo:hi]
	for _, b := range bufs[1:] {
		b = b[lo:hi]
		for i := range acc {
			acc[i] += b[i]
		}
	}
	for _, b := range bufs[1:] {
		copy(b[lo:hi], acc)
	}
}

func (c *localComm) Fork(name string) (Comm, error) {
	g := c.g
	if c.closed.Load() {
		return nil, fmt.Errorf("collective: local fork %q (rank %d of %d): %w", name, c.rank, g.n, ErrClosed)
	}
	if c.forks == nil {
		c.forks = map[string]int{}
	}
	key := name + "#" + strconv.Itoa(c.forks[name])
	c.forks[name]++
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closedBy >= 0 {
		return nil, c.peerErrorLocked("fork " + strconv.Quote(name))
	}
	f := g.forks[key]
	if f == nil {
		f = &localFork{comms: NewLocal(g.n)}
		g.forks[key] = f
	}
	f.taken++
	if f.taken == g.n {
		delete(g.forks, key)
	}
	return f.comms[c.rank], nil
}

// Close makes the pending and later operations of the other members fail.
// It may be called from any goroutine and more than once.
func (c *localComm) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	g := c.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closedBy < 0 {
		g.closedBy = c.rank
		close(g.broken)
	}
	return nil
}
