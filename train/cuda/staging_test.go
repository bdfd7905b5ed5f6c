package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"sync"
	"testing"
	"unsafe"
)

// lateDMA is a pinner whose copies land as late as the ring lets them: a
// queued copy is carried out only when an event after it is waited for,
// or at flush. When a copy lands it checks that its pinned source still
// holds the bytes it held when the copy was queued — the ring must not
// write a buffer whose DMA is pending — and freeing memory a pending copy
// reads is an error too.
type lateDMA struct {
	mu      sync.Mutex
	dev     []byte
	queue   []dmaJob
	seq     int // jobs queued so far
	landed  int // jobs carried out so far
	allocs  map[unsafe.Pointer][]byte
	events  map[unsafe.Pointer]*int // the seq each event was last recorded after
	errs    []error
	allocN  int
	maxHeld int // bytes of pinned memory at most
	// unlocked, when set, is a ring whose lock must be free whenever a
	// copy waits for an event or allocates pinned memory (a goroutine
	// alone on it: TryLock fails only if it holds the lock itself).
	unlocked *stagingRing
	// onWait, when set, runs after a wait for an event has landed its
	// copies (a copy another goroutine queues meanwhile).
	onWait func()
}

// lockFree fails d when its ring's lock is held during what.
func (d *lateDMA) lockFree(what string) {
	if r := d.unlocked; r != nil {
		if !r.mu.TryLock() {
			d.fail("%s under the ring's lock", what)
			return
		}
		r.mu.Unlock()
	}
}

type dmaJob struct {
	dst   uint64
	src   unsafe.Pointer
	n     int
	sum   uint32
	index int
}

func newLateDMA(devBytes int) *lateDMA {
	return &lateDMA{dev: make([]byte, devBytes), allocs: map[unsafe.Pointer][]byte{}, events: map[unsafe.Pointer]*int{}}
}

func (d *lateDMA) fail(format string, a ...any) { d.errs = append(d.errs, fmt.Errorf(format, a...)) }

func (d *lateDMA) hostAlloc(n int) (unsafe.Pointer, error) {
	d.lockFree("an allocation of pinned memory")
	d.mu.Lock()
	defer d.mu.Unlock()
	b := make([]byte, n)
	p := unsafe.Pointer(&b[0])
	d.allocs[p] = b
	d.allocN++
	held := 0
	for _, b := range d.allocs {
		held += len(b)
	}
	d.maxHeld = max(d.maxHeld, held)
	return p, nil
}

func (d *lateDMA) hostFree(p unsafe.Pointer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, ok := d.allocs[p]
	if !ok {
		d.fail("hostFree of %p, not allocated", p)
		return
	}
	for _, j := range d.queue {
		if uintptr(j.src) >= uintptr(p) && uintptr(j.src) < uintptr(p)+uintptr(len(b)) {
			d.fail("hostFree of %p while copy %d reads it", p, j.index)
		}
	}
	delete(d.allocs, p)
}

func (d *lateDMA) newEvent() (unsafe.Pointer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := new(int)
	*e = -1
	d.events[unsafe.Pointer(e)] = e
	return unsafe.Pointer(e), nil
}

func (d *lateDMA) freeEvent(ev unsafe.Pointer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.events[ev]; !ok {
		d.fail("freeEvent of %p, not created", ev)
	}
	delete(d.events, ev)
}

func (d *lateDMA) copyPinned(dst uint64, src unsafe.Pointer, n int, ev unsafe.Pointer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if int(dst)+n > len(d.dev) {
		return fmt.Errorf("copy to %d+%d beyond the device's %d bytes", dst, n, len(d.dev))
	}
	e, ok := d.events[ev]
	if !ok {
		return fmt.Errorf("record of event %p, not created", ev)
	}
	s := unsafe.Slice((*byte)(src), n)
	d.queue = append(d.queue, dmaJob{dst, src, n, crc32.ChecksumIEEE(s), d.seq})
	d.seq++
	*e = d.seq
	return nil
}

// direct is the machine's own copy: queued behind the pending ones, in
// stream order, then done at once.
func (d *lateDMA) direct(dst uint64, src []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.landLocked(d.seq)
	copy(d.dev[dst:], src)
	return nil
}

func (d *lateDMA) waitEvent(ev unsafe.Pointer) error {
	d.lockFree("a wait for an event")
	d.mu.Lock()
	e, ok := d.events[ev]
	if !ok {
		d.mu.Unlock()
		return fmt.Errorf("wait on event %p, not created", ev)
	}
	d.landLocked(*e)
	d.mu.Unlock()
	if f := d.onWait; f != nil {
		d.onWait = nil
		f()
	}
	return nil
}

// landLocked carries out the queued copies up to seq.
func (d *lateDMA) landLocked(seq int) {
	for d.landed < seq && len(d.queue) > 0 {
		j := d.queue[0]
		d.queue = d.queue[1:]
		s := unsafe.Slice((*byte)(j.src), j.n)
		if got := crc32.ChecksumIEEE(s); got != j.sum {
			d.fail("copy %d (%d bytes to %d): its pinned source was written before the copy landed", j.index, j.n, j.dst)
		}
		copy(d.dev[j.dst:], s)
		d.landed++
	}
}

// flush lands everything queued (the stream reaching its end).
func (d *lateDMA) flush() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.landLocked(d.seq)
}

func (d *lateDMA) check(t *testing.T) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := errors.Join(d.errs...); err != nil {
		t.Fatal(err)
	}
}

// ringCopy copies src to dst through r, the direct path into d.
func ringCopy(r *stagingRing, d *lateDMA, dst uint64, src []byte) error {
	return r.copyIn(dst, unsafe.Pointer(&src[0]), len(src), func() error { return d.direct(dst, src) })
}

// TestStagingRingLandsWhatWasCopied: copies of every size class through
// the ring, the caller's memory overwritten as soon as each returns, the
// DMAs landing only when the ring waits for them: the device ends with
// what a synchronous copy of each would have left, no pinned buffer is
// written (or freed) while a copy reads it, and no copy waits for a DMA
// or allocates pinned memory holding the ring's lock (the step's other
// copies would wait behind it); nor does a pinned memory's Wait.
func TestStagingRingLandsWhatWasCopied(t *testing.T) {
	const dev = 4 * stageMin * 8
	d := newLateDMA(dev)
	r := newStagingRing(d)
	d.unlocked = r
	want := make([]byte, dev)
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]byte, 0, dev)
	sizes := []int{stageMin, 3 * stageMin, stageMin - 1, 100, stageMin + 4097, 2 * stageMin, 5 * stageMin, stageMin}
	for i := range 60 {
		n := sizes[i%len(sizes)]
		dst := uint64(rng.IntN(dev - n + 1))
		src = src[:n]
		for k := range src {
			src[k] = byte(rng.Uint32())
		}
		if err := ringCopy(r, d, dst, src); err != nil {
			t.Fatal(err)
		}
		copy(want[dst:], src)
		for k := range src { // the caller reuses its memory at once
			src[k] = 0xEE
		}
	}
	// Copies queued in place from pinned memory, then waited for.
	pm, err := r.hostMemory(stageMin)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		b := pm.Bytes()
		for k := range b {
			b[k] = byte(i * k)
		}
		if err := r.copyIn(uint64(i*stageMin), pm.host, stageMin, nil); err != nil {
			t.Fatal(err)
		}
		copy(want[i*stageMin:], b)
		if err := pm.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	// A copy queued from the memory while Wait waits (the lock is free
	// then): Wait returns with it still pending, and the next Wait (or
	// Free) waits for it.
	late := pm.Bytes()
	late[0] = 1
	if err := r.copyIn(0, pm.host, stageMin, nil); err != nil {
		t.Fatal(err)
	}
	d.onWait = func() {
		late[0] = 2
		if err := r.copyIn(stageMin, pm.host, stageMin, nil); err != nil {
			t.Error(err)
		}
	}
	copy(want, late)
	copy(want[stageMin:], late)
	want[stageMin] = 2
	if err := pm.Wait(); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	pending := pm.queued != pm.waited
	r.mu.Unlock()
	if !pending {
		t.Fatal("Wait returned with a copy queued during it marked done")
	}
	d.unlocked = nil // close and Free drain under the lock
	if err := pm.Free(); err != nil {
		t.Fatal(err)
	}
	d.flush()
	d.check(t)
	if !bytes.Equal(d.dev, want) {
		t.Fatal("the device does not hold what was copied in, in order")
	}
	st, waits := r.stats()
	if st.Staged == 0 || st.Direct == 0 || waits == 0 {
		t.Fatalf("stats %+v, %d waits: want staged, direct and waited copies", st, waits)
	}
	if st.Staged+st.Direct != 60 {
		t.Fatalf("stats %+v: %d copies", st, 60)
	}
	if d.maxHeld > stageBufs*(5*stageMin+stageRound) {
		t.Fatalf("%d bytes pinned at most: more than %d buffers of the largest copy", d.maxHeld, stageBufs)
	}
	if err := r.close(); err != nil {
		t.Fatal(err)
	}
	d.check(t)
	if len(d.allocs) != 0 || len(d.events) != 0 {
		t.Fatalf("close left %d pinned buffers and %d events", len(d.allocs), len(d.events))
	}
	if err := ringCopy(r, d, 0, make([]byte, stageMin)); !errors.Is(err, errClosed) {
		t.Fatalf("copy after close: %v, want errClosed", err)
	}
}

// TestStagingRingConcurrent: a feeder and a step copying at once, under
// -race, with a DMA engine landing copies at moments of its own: each
// goroutine's region ends with its last copy, and no buffer is written
// while read.
func TestStagingRingConcurrent(t *testing.T) {
	const n = stageMin + 512
	d := newLateDMA(4 * n)
	r := newStagingRing(d)
	stop := make(chan struct{})
	var engine sync.WaitGroup
	engine.Add(1)
	go func() { // lands what is queued now and then, as the GPU would
		defer engine.Done()
		rng := rand.New(rand.NewPCG(3, 4))
		for {
			select {
			case <-stop:
				return
			default:
			}
			d.mu.Lock()
			d.landLocked(d.landed + rng.IntN(3))
			d.mu.Unlock()
		}
	}()
	var wg sync.WaitGroup
	last := make([][]byte, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := make([]byte, n)
			for i := range 40 {
				for k := range src {
					src[k] = byte(g*41 + i + k)
				}
				if err := ringCopy(r, d, uint64(g*n), src); err != nil {
					t.Error(err)
					return
				}
			}
			last[g] = append([]byte(nil), src...)
		}()
	}
	wg.Wait()
	close(stop)
	engine.Wait()
	if err := r.close(); err != nil {
		t.Fatal(err)
	}
	d.flush()
	d.check(t)
	for g := range 4 {
		if !bytes.Equal(d.dev[g*n:(g+1)*n], last[g]) {
			t.Fatalf("region %d does not hold its goroutine's last copy", g)
		}
	}
}
