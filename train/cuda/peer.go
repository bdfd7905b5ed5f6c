package cuda

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"unsafe"

	"github.com/faster-training/faster/collective"
	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/cuda/kernels"
)

// peerAllReduce sums tensors over ranks whose backends all live in this
// process on one device — data-parallel replicas sharing a GPU, each on a
// stream of its own — without the host: rank 0's stream waits for every
// rank's mark (an event recorded after its backward pass), adds their
// tensors into its own in rank order, (((t0 + t1) + t2) …: the host
// path's bits), copies the sums into every rank's tensors and marks that;
// each other rank's stream waits for the mark before its next work (the
// optimiser's step). The host never waits for the device: two host
// barriers a call only order the marks. Ranks on another device sum
// through host memory (hostAllReduce), which every rank decides together
// at the first call (ranks in other processes never come here:
// ncclBackend.NewAllReduce declines them).
type peerAllReduce struct {
	b       *Backend
	comm    collective.Comm
	decided bool
	host    *hostAllReduce // decided on the host path
	g       *peerGroup     // decided on the device path
	ev      unsafe.Pointer // this rank's mark (rank 0's: the sums)
	sp      []span         // this rank's runs of the current call (reused)
}

// peerGroup is what the ranks of one group share in the process.
type peerGroup struct {
	mu    sync.Mutex
	ops   []*peerAllReduce
	spans [][]span // each rank's tensors of the current call
	bad   []bool   // each rank's failure to mark them in the current call
	err   error    // rank 0's failure in the current call
	// marked: rank 0 recorded its mark after what it queued in the current
	// call, so the other ranks wait for it, a failure's too (rank 0's
	// stream may still be writing their gradients).
	marked bool
}

// span is contiguous float32s of device memory.
type span struct {
	p uint64
	n int
}

// peerGroups finds a group's members by the key rank 0 drew.
var peerGroups = struct {
	sync.Mutex
	m map[uint64]*peerGroup
}{m: map[uint64]*peerGroup{}}

func newPeerAllReduce(b *Backend, comm collective.Comm) *peerAllReduce {
	return &peerAllReduce{b: b, comm: comm}
}

// decide finds the group's members in the process (every rank calls it
// at its first AllReduce) and chooses the device path when all of them
// are here, on one device.
func (o *peerAllReduce) decide() error {
	o.decided = true
	n, r := o.comm.Size(), o.comm.Rank()
	key := []float64{0}
	if r == 0 {
		key[0] = float64(rand.Uint64() >> 12) // exact in a float64
	}
	if err := o.comm.AllReduceF64(key); err != nil {
		return fmt.Errorf("cuda: all-reduce: agreeing on a key: %w", err)
	}
	k := uint64(key[0])
	peerGroups.Lock()
	g := peerGroups.m[k]
	if g == nil {
		g = &peerGroup{ops: make([]*peerAllReduce, n), spans: make([][]span, n), bad: make([]bool, n)}
		peerGroups.m[k] = g
	}
	peerGroups.Unlock()
	g.mu.Lock()
	g.ops[r] = o
	g.mu.Unlock()
	if err := o.comm.Barrier(); err != nil {
		return err
	}
	here := 1.0
	g.mu.Lock()
	for _, p := range g.ops {
		if p == nil || p.b.m.device() != o.b.m.device() {
			here = 0
		}
	}
	g.mu.Unlock()
	if here == 1 {
		ev, err := o.b.m.newEvent()
		if err != nil {
			here = 0
		}
		o.ev = ev
	}
	vote := []float64{here}
	if err := o.comm.AllReduceF64(vote); err != nil {
		return err
	}
	// Every rank has looked the others up: the key has done its work.
	peerGroups.Lock()
	delete(peerGroups.m, k)
	peerGroups.Unlock()
	if int(vote[0]) != n {
		if o.ev != nil {
			o.b.m.freeEvent(o.ev)
			o.ev = nil
		}
		o.host = &hostAllReduce{comm: o.comm}
		return nil
	}
	o.g = g
	return nil
}

// AllReduce implements train.AllReduceOp.
func (o *peerAllReduce) AllReduce(ts []train.Tensor) error {
	if !o.decided {
		if err := o.decide(); err != nil {
			return err
		}
	}
	if o.host != nil {
		return o.host.AllReduce(ts)
	}
	r := o.comm.Rank()
	var err error
	// o.sp is read by rank 0 between the two barriers below and rewritten
	// only at this rank's next call.
	if o.sp, err = appendSpans(o.sp[:0], ts); err == nil {
		err = o.b.m.recordEvent(o.ev) // after this rank's backward pass
	}
	g := o.g
	g.mu.Lock()
	g.spans[r], g.bad[r] = o.sp, err != nil // a failure: rank 0 fails the call for everyone
	g.mu.Unlock()
	if berr := o.comm.Barrier(); berr != nil {
		return errors.Join(err, berr)
	}
	if r == 0 {
		serr := o.sum()
		g.mu.Lock()
		g.err = serr
		g.mu.Unlock()
	}
	if berr := o.comm.Barrier(); berr != nil {
		return errors.Join(err, berr)
	}
	g.mu.Lock()
	serr, mark, marked := g.err, g.ops[0].ev, g.marked
	g.mu.Unlock()
	if r != 0 && marked {
		if werr := o.b.m.streamWait(mark); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	if err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("cuda: all-reduce on the device, rank 0: %w", serr)
	}
	return nil
}

// sum is rank 0's part: wait for every rank's mark, add, copy back, mark.
// Once anything is queued the mark is recorded, on a failure too.
func (o *peerAllReduce) sum() (err error) {
	g := o.g
	g.mu.Lock() // the other ranks wait at the barrier meanwhile
	defer g.mu.Unlock()
	g.marked = false
	all, ops := g.spans, g.ops
	mine := all[0]
	for q, sp := range all {
		if g.bad[q] {
			return fmt.Errorf("rank %d could not mark its gradients", q)
		}
		if len(sp) != len(mine) {
			return fmt.Errorf("rank %d's tensors lie in %d runs, rank 0's in %d", q, len(sp), len(mine))
		}
		for i := range sp {
			if sp[i].n != mine[i].n {
				return fmt.Errorf("rank %d's run %d has %d values, rank 0's %d", q, i, sp[i].n, mine[i].n)
			}
		}
	}
	m := o.b.m
	defer func() {
		if err != nil && m.recordEvent(o.ev) == nil {
			g.marked = true
		}
	}()
	for q := 1; q < len(all); q++ {
		if err := m.streamWait(ops[q].ev); err != nil {
			return err
		}
	}
	for q := 1; q < len(all); q++ { // rank order: ((t0 + t1) + t2) …
		for i, s := range mine {
			if err := o.b.run("add", kernels.Elementwise, s.n, 0, s.p, all[q][i].p, s.p, i64(s.n)); err != nil {
				return err
			}
		}
	}
	for q := 1; q < len(all); q++ {
		for i, s := range mine {
			if err := m.copyDev(all[q][i].p, s.p, 4*s.n); err != nil {
				return err
			}
		}
	}
	if err := m.recordEvent(o.ev); err != nil {
		return err
	}
	g.marked = true
	return nil
}

// appendSpans appends ts's memory to out as runs, adjacent tensors merged
// (replicas' states lay their gradients out alike, so every rank gets the
// same runs).
func appendSpans(out []span, ts []train.Tensor) ([]span, error) {
	for i, t := range ts {
		x, err := asT(t)
		if err != nil {
			return nil, fmt.Errorf("cuda: all-reduce of tensor %d: %w", i, err)
		}
		if x.n == 0 {
			continue
		}
		if k := len(out) - 1; k >= 0 && out[k].p+4*uint64(out[k].n) == x.p {
			out[k].n += x.n
			continue
		}
		out = append(out, span{x.p, x.n})
	}
	return out, nil
}

// Wait implements train.AllReduceOp: on the device path the sums are
// ordered before this rank's next work on its stream already.
func (o *peerAllReduce) Wait() error {
	if o.host != nil {
		return o.host.Wait()
	}
	return nil
}

// Close implements train.AllReduceOp.
func (o *peerAllReduce) Close() {
	if o.ev != nil {
		o.b.m.freeEvent(o.ev)
		o.ev = nil
	}
}
