package pipeline

import (
	"context"
	"iter"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// MapDataset applies a function to every element, sequentially or with
// parallel workers. See Map and ParallelMap.
type MapDataset[T, U any] struct {
	stage
	in        Dataset[T]
	f         func(context.Context, T) (U, error)
	par       int
	unordered bool
	budget    int
	size      func(U) int
	cur       atomic.Int64 // parallelism in use, or chosen last by autotune
}

// Map returns the dataset of f applied to each element of d, in order, run
// synchronously in the consumer's goroutine. Use Parallel (or ParallelMap)
// to run f on workers. f receives the epoch's context. Its role is RoleCPU.
func Map[T, U any](d Dataset[T], f func(context.Context, T) (U, error)) *MapDataset[T, U] {
	m := &MapDataset[T, U]{in: d, f: f, par: 1}
	m.init("map", RoleCPU, d)
	m.cur.Store(1)
	return m
}

// ParallelMap is Map(d, f).Parallel(n): f runs on n workers (Auto: tuned),
// and results keep the input order unless Unordered is set.
func ParallelMap[T, U any](d Dataset[T], n int, f func(context.Context, T) (U, error)) *MapDataset[T, U] {
	return Map(d, f).Parallel(n)
}

// Parallel sets the number of workers: n >= 1, or Auto to let the stage tune
// it within its Budget. With n == 1 and not Unordered, f runs in the
// consumer's goroutine.
func (m *MapDataset[T, U]) Parallel(n int) *MapDataset[T, U] {
	if n < 1 && n != Auto {
		m.err = configError(m.kind, "parallelism %d", n)
		return m
	}
	m.par = n
	if n == Auto {
		m.cur.Store(1)
	} else {
		m.cur.Store(int64(n))
	}
	return m
}

// Unordered lets results leave in completion order instead of input order
// (tf.data's deterministic=False): a slow element no longer holds back the
// ones after it.
func (m *MapDataset[T, U]) Unordered() *MapDataset[T, U] { m.unordered = true; return m }

// Budget caps the workers Auto may use (default runtime.GOMAXPROCS(0) when
// the epoch starts).
func (m *MapDataset[T, U]) Budget(n int) *MapDataset[T, U] {
	if n < 1 {
		m.err = configError(m.kind, "budget %d", n)
		return m
	}
	m.budget = n
	return m
}

// Named sets the stage name shown in Stats.
func (m *MapDataset[T, U]) Named(name string) *MapDataset[T, U] { m.name = name; return m }

// Bytes sets the size function summed into Stats' Bytes.
func (m *MapDataset[T, U]) Bytes(size func(U) int) *MapDataset[T, U] { m.size = size; return m }

// Role sets the stage's role for the verdict: RoleIO for a map that reads
// (loading files by name), RoleCPU (the default) for one that computes.
func (m *MapDataset[T, U]) Role(r Role) *MapDataset[T, U] { m.role = r; return m }

// CPU sets a function returning the CPU time f has spent so far, as the
// caller measures it (the thread CPU time around each call: pipeline cannot
// tell, f's goroutine being free to move between threads); see
// StageStats.CPU.
func (m *MapDataset[T, U]) CPU(total func() time.Duration) *MapDataset[T, U] {
	m.cpu = total
	return m
}

// Parallelism returns the number of workers in use, or the number Auto
// chose last (it starts the next epoch from there).
func (m *MapDataset[T, U]) Parallelism() int { return int(m.cur.Load()) }

// Iter implements Dataset.
func (m *MapDataset[T, U]) Iter(ctx context.Context) iter.Seq2[U, error] {
	if m.err != nil {
		return failSeq[U](m.err)
	}
	if m.par == 1 && !m.unordered {
		return m.iterSync(ctx)
	}
	return func(yield func(U, error) bool) { m.iterAsync(ctx, yield) }
}

func (m *MapDataset[T, U]) iterSync(ctx context.Context) iter.Seq2[U, error] {
	return func(yield func(U, error) bool) {
		last := m.begin()
		defer m.end()
		mt := meter{s: &m.stage}
		defer mt.flush()
		var zero U
		for x, err := range m.in.Iter(ctx) {
			t1 := nanotime()
			mt.waitIn += t1 - last
			if err != nil {
				yield(zero, err)
				return
			}
			y, err := m.f(ctx, x)
			t2 := nanotime()
			mt.busy += t2 - t1
			if err != nil {
				yield(zero, err)
				return
			}
			if m.size != nil {
				mt.bytes += int64(m.size(y))
			}
			mt.items++
			if !yield(y, nil) {
				return
			}
			last = nanotime()
			mt.blockedOut += last - t2
			mt.tick()
		}
	}
}

// mslot carries one element through the workers. Slots are recycled, so
// the steady state allocates nothing; the number of slots bounds the
// elements in flight.
type mslot[T, U any] struct {
	x     T
	v     U
	err   error
	ready chan struct{} // ordered mode: signalled when v/err are set
}

// mapRun is one epoch of an asynchronous map.
type mapRun[T, U any] struct {
	m         *MapDataset[T, U]
	ctx       context.Context
	wg        sync.WaitGroup
	jobs      chan *mslot[T, U]
	free      chan *mslot[T, U]
	order     chan *mslot[T, U] // ordered: slots in input order
	done      chan *mslot[T, U] // unordered: slots in completion order
	active    atomic.Int64      // workers with id < active may work (= p)
	wake      []chan struct{}   // per worker: a parked worker waits here
	spare     []*mslot[T, U]    // slots withdrawn when shrinking, kept for reuse
	budget    int
	p         int // workers wanted
	live      int // slots in circulation
	allowed   int // slots wanted: 2p
	total     atomic.Int64
	workDone  atomic.Int64 // elements through f
	dispWait  atomic.Int64 // dispatcher time waiting on upstream
	dispCount atomic.Int64
	endc      chan struct{}
	tn        tunerState
}

func (m *MapDataset[T, U]) iterAsync(parent context.Context, yield func(U, error) bool) {
	start := m.begin()
	defer m.end()
	ctx, cancel := context.WithCancel(parent)
	r := &mapRun[T, U]{m: m, ctx: ctx}
	// Cancel and join every goroutine of the epoch before returning, on
	// every path (end, error, break, panic in the loop body).
	defer func() { cancel(); r.wg.Wait() }()

	auto := m.par == Auto
	p := m.par
	maxP := p
	if auto {
		r.budget = m.budget
		if r.budget == 0 {
			r.budget = runtime.GOMAXPROCS(0)
		}
		maxP = r.budget
		p = min(max(int(m.cur.Load()), 1), maxP)
	}
	maxSlots := 2 * maxP
	r.jobs = make(chan *mslot[T, U], maxP)
	r.free = make(chan *mslot[T, U], maxSlots)
	r.wake = make([]chan struct{}, 0, maxP)
	r.spare = make([]*mslot[T, U], 0, maxSlots)
	if m.unordered {
		r.done = make(chan *mslot[T, U], maxSlots)
	} else {
		r.order = make(chan *mslot[T, U], maxSlots)
	}
	r.tn.busy = m.busy.Load() // the stage's Busy spans epochs; tune uses deltas
	r.setP(p)
	r.wg.Go(r.dispatch)

	mt := meter{s: &m.stage}
	defer mt.flush()
	var zero U
	last := start
	var endc <-chan struct{}
	if m.unordered {
		endc = r.endSignal()
	}
	received, total := int64(0), int64(-1)
	window := 0
	for {
		var sl *mslot[T, U]
		var ok bool
		if m.unordered {
			if total >= 0 && received == total {
				if err := parent.Err(); err != nil {
					yield(zero, err) // the dispatcher stopped early
				}
				return
			}
			select {
			case sl = <-r.done:
				received++
			case <-endc:
				endc, total = nil, r.total.Load()
				continue
			case <-ctx.Done():
				yield(zero, ctxErr(parent))
				return
			}
		} else {
			select {
			case sl, ok = <-r.order:
				if !ok {
					if err := parent.Err(); err != nil {
						yield(zero, err) // the dispatcher stopped early
					}
					return
				}
			case <-ctx.Done():
				yield(zero, ctxErr(parent))
				return
			}
			select {
			case <-sl.ready:
			case <-ctx.Done():
				yield(zero, ctxErr(parent))
				return
			}
		}
		t1 := nanotime()
		mt.waitIn += t1 - last
		v, err := sl.v, sl.err
		sl.v, sl.err = zero, nil
		r.recycle(sl)
		if err != nil {
			yield(zero, err)
			return
		}
		if m.size != nil {
			mt.bytes += int64(m.size(v))
		}
		mt.items++
		if !yield(v, nil) {
			return
		}
		last = nanotime()
		mt.blockedOut += last - t1
		r.tn.consumer += last - t1
		r.tn.items++
		mt.tick()
		if auto {
			if window++; window >= max(8, 2*r.p) {
				window = 0
				r.tune()
			}
		}
	}
}

// endSignal returns a channel closed when the dispatcher has dispatched its
// last slot; r.total then holds the number of slots dispatched.
func (r *mapRun[T, U]) endSignal() <-chan struct{} {
	c := make(chan struct{})
	r.endc = c
	return c
}

// dispatch pulls the input and hands elements to workers. It runs the
// upstream stages in its own goroutine and owns jobs (closed on return).
func (r *mapRun[T, U]) dispatch() {
	defer close(r.jobs)
	n := int64(0)
	defer func() {
		if r.order != nil {
			close(r.order)
		} else {
			r.total.Store(n)
			close(r.endc)
		}
	}()
	ctx := r.ctx
	last := nanotime()
	for x, err := range r.m.in.Iter(ctx) {
		t := nanotime()
		r.dispWait.Add(t - last)
		r.dispCount.Add(1)
		var sl *mslot[T, U]
		select {
		case sl = <-r.free:
		case <-ctx.Done():
			return
		}
		n++
		if err != nil {
			sl.err = err
			if r.order != nil {
				sl.ready <- struct{}{}
				r.order <- sl
			} else {
				r.done <- sl
			}
			return
		}
		sl.x = x
		if r.order != nil {
			r.order <- sl // never blocks: capacity is the number of slots
		}
		select {
		case r.jobs <- sl:
		case <-ctx.Done():
			return
		}
		last = nanotime()
	}
}

// worker id runs f on jobs while id < p, and parks otherwise (so that
// autotuning can shrink and grow the stage without starting goroutines).
func (r *mapRun[T, U]) worker(id int, wake <-chan struct{}) {
	ctx, f := r.ctx, r.m.f
	var zero T
	for {
		for int64(id) >= r.active.Load() {
			select {
			case <-wake:
			case <-ctx.Done():
				return
			}
		}
		var sl *mslot[T, U]
		var ok bool
		select {
		case sl, ok = <-r.jobs:
			if !ok {
				return
			}
		case <-ctx.Done():
			return
		}
		t := nanotime()
		sl.v, sl.err = f(ctx, sl.x)
		r.m.busy.Add(nanotime() - t) // the stage's Busy
		r.workDone.Add(1)
		sl.x = zero
		if r.order != nil {
			sl.ready <- struct{}{} // capacity 1, never blocks
		} else {
			r.done <- sl // capacity is the number of slots, never blocks
		}
	}
}

// setP changes the parallelism to p. A worker is started when p first
// reaches its id and then stays, parked while its id >= p, until the epoch
// ends; so tuning up and down allocates nothing once the highest level has
// been reached. It runs in the consumer's goroutine, which is also the only
// one to Wait on r.wg. Parked workers do not see the end of the jobs; the
// epoch's cancel ends them.
func (r *mapRun[T, U]) setP(p int) {
	r.active.Store(int64(p))
	for id := range p {
		if id == len(r.wake) {
			wake := make(chan struct{}, 1)
			r.wake = append(r.wake, wake)
			r.wg.Go(func() { r.worker(id, wake) })
		} else if id >= r.p {
			select {
			case r.wake[id] <- struct{}{}:
			default:
			}
		}
	}
	r.p = p
	r.allowed = 2 * p
	for r.live < r.allowed {
		r.live++
		if n := len(r.spare); n > 0 {
			r.free <- r.spare[n-1]
			r.spare = r.spare[:n-1]
		} else {
			r.free <- &mslot[T, U]{ready: make(chan struct{}, 1)}
		}
	}
	r.m.cur.Store(int64(p))
	r.m.setPar(p)
}

// recycle returns a consumed slot, or sets it aside when the stage has
// shrunk.
func (r *mapRun[T, U]) recycle(sl *mslot[T, U]) {
	if r.live > r.allowed {
		r.live--
		r.spare = append(r.spare, sl)
		return
	}
	r.free <- sl
}

// tune is ParallelMap's autotuner (see the package documentation). Each
// window it estimates the time f takes per element on one worker (s), the
// time downstream takes per element (c: the consumer's loop body and any
// stages after this one) and the time upstream takes per element (u), and
// wants ceil(1.25·s / max(c, u)) workers, clamped to [1, budget]: enough to
// keep up with the slower of its two neighbours, and no more. It grows by at
// most doubling per window and shrinks by one, which damps oscillation.
// It runs in the consumer's goroutine.
func (r *mapRun[T, U]) tune() {
	busy, done := r.m.busy.Load(), r.workDone.Load()
	disp, dispN := r.dispWait.Load(), r.dispCount.Load()
	t := &r.tn
	dBusy, dDone := busy-t.busy, done-t.done
	dDisp, dDispN := disp-t.disp, dispN-t.dispN
	dCons, dItems := t.consumer-t.consumer0, t.items-t.items0
	t.busy, t.done, t.disp, t.dispN, t.consumer0, t.items0 = busy, done, disp, dispN, t.consumer, t.items
	if dDone <= 0 || dItems <= 0 || dDispN <= 0 {
		return
	}
	s := float64(dBusy) / float64(dDone)
	c := float64(dCons) / float64(dItems)
	u := float64(dDisp) / float64(dDispN)
	need := math.Ceil(1.25 * s / max(c, u, 1))
	target := int(min(need, float64(r.budget)))
	target = max(target, 1)
	switch {
	case target > r.p:
		target = min(target, 2*r.p)
	case target < r.p:
		target = r.p - 1
	default:
		return
	}
	r.setP(target)
}

// tunerState holds the counters at the last tuning step and the consumer-
// side counters (kept by the consumer goroutine, so not atomic).
type tunerState struct {
	consumer, items         int64
	busy, done, disp, dispN int64
	consumer0, items0       int64
}
