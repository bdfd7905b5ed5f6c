package cuda

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/faster-training/faster/train"
)

// A copy from pageable host memory (a Go slice) into the device is not
// asynchronous: the driver stages it through pinned buffers of its own,
// and for a copy larger than those it waits for its stream to reach the
// copy — for the step before it to finish — while the host waits too
// (GPU.md: 6.7 GB/s pageable against 54.9 pinned). PyTorch's answer, the
// study's pin_memory=True with non_blocking=True, is to copy the batch
// into page-locked memory on another thread and queue the copy from
// there, which returns at once. The staging ring does that inside the
// backend for every copy from host memory of at least stageMin bytes:
// the caller's bytes are copied (memmove, on the caller's goroutine: the
// trainer's feeder for input) into the next of a few pinned buffers, the
// DMA from it is queued on the stream with an event after it, and the
// call returns; a buffer is written again only once its event is done.
// The caller may reuse its memory on return, as before.

// pinner is what the ring needs of a machine: pinned host memory, events,
// and a copy from pinned memory queued on the stream with an event
// recorded after it. The GPU machine implements it with
// cuMemHostAlloc/cuMemFreeHost, cuEvent* and cuMemcpyHtoDAsync; the
// tests with a DMA engine of their own that lands copies late.
type pinner interface {
	hostAlloc(bytes int) (unsafe.Pointer, error)
	hostFree(p unsafe.Pointer)
	newEvent() (unsafe.Pointer, error)
	freeEvent(ev unsafe.Pointer)
	// copyPinned queues the copy of bytes at src (pinned, from
	// hostAlloc) to dst on the stream, records ev after it, and returns
	// without waiting for either.
	copyPinned(dst uint64, src unsafe.Pointer, bytes int, ev unsafe.Pointer) error
	// waitEvent returns once the work before ev's last record is done.
	waitEvent(ev unsafe.Pointer) error
}

const (
	// stageMin: smaller copies go straight from the caller's memory
	// (the driver stages those without waiting for the stream: the
	// learning rate, a scale, a label vector).
	stageMin = 256 << 10
	// stageMax: larger copies go straight too (a ring of three would
	// pin three times that; the weights at bind time are copied per
	// parameter, each well under it).
	stageMax = 512 << 20
	// stageBufs is the ring's length: the batch being copied, the one
	// the step reads, and one more so the feeder rarely waits.
	stageBufs = 3
	// stageRound: buffers grow in steps of this many bytes.
	stageRound = 1 << 20
)

// stagingRing is a machine's ring of pinned buffers. Safe for concurrent
// use (the feeder and the step copy in at once). The lock guards the
// bookkeeping and the queueing of copies, never a wait or a memmove: a
// copy reserves its buffer (busy) under the lock, waits for the buffer's
// last DMA and copies the caller's bytes into it without the lock, then
// queues the DMA under it again. So a small copy of the step's (labels,
// a learning rate) is not held up behind a large one waiting for the
// stream to reach its buffer's previous DMA — which, queued behind the
// step before, would idle the GPU while the step's next calls wait.
type stagingRing struct {
	mu     sync.Mutex
	cond   sync.Cond // signalled when a buffer stops being busy
	p      pinner
	min    int // stageMin; the tests' machines stage every copy
	bufs   [stageBufs]stagingBuf
	next   int
	closed bool
	// mems are the pinned memories handed out (hostMemory): a copy from
	// one is queued from it in place.
	mems []*pinnedMemory
	// staged and direct count the copies that went through the ring
	// and those that did not, inPlace those queued from a pinned memory
	// of the caller's; waits counts the copies that found their buffer's
	// previous DMA unfinished.
	staged, direct, inPlace, waits int64
	// pinErr is why pinned memory could not be had (cuMemHostAlloc
	// failed): from then on every copy goes straight from the caller's
	// memory, slower but not wrong.
	pinErr error
}

// stagingBuf is one pinned buffer. While busy, the copy that reserved it
// owns its fields, and reads and writes them without the ring's lock.
type stagingBuf struct {
	host    unsafe.Pointer
	size    int
	ev      unsafe.Pointer
	pending bool // a DMA from host was queued and not yet waited for
	busy    bool
}

func newStagingRing(p pinner) *stagingRing {
	r := &stagingRing{p: p, min: stageMin}
	r.cond.L = &r.mu
	return r
}

// stages reports whether a copy of bytes goes through the ring.
func (r *stagingRing) stages(bytes int) bool { return bytes >= r.min && bytes <= stageMax }

// copyIn copies bytes at src into dst through the next pinned buffer and
// returns once src has been read. direct is the machine's own copy, for
// the sizes the ring leaves alone.
func (r *stagingRing) copyIn(dst uint64, src unsafe.Pointer, bytes int, direct func() error) error {
	r.mu.Lock()
	if m := r.memOf(src, bytes); m != nil {
		defer r.mu.Unlock()
		if err := r.p.copyPinned(dst, src, bytes, m.ev); err != nil {
			return err
		}
		m.queued++
		r.inPlace++
		return nil
	}
	if !r.stages(bytes) || r.pinErr != nil {
		r.direct++
		r.mu.Unlock()
		return direct()
	}
	if r.closed {
		r.mu.Unlock()
		return errClosed
	}
	// The next buffer no other copy holds (with more copies in flight
	// than buffers, wait for one).
	for r.busyBufs() == stageBufs && !r.closed {
		r.cond.Wait()
	}
	if r.closed {
		r.mu.Unlock()
		return errClosed
	}
	for r.bufs[r.next].busy {
		r.next = (r.next + 1) % stageBufs
	}
	i := r.next
	b := &r.bufs[i]
	b.busy = true
	r.next = (r.next + 1) % stageBufs
	if b.pending {
		r.waits++
	}
	r.mu.Unlock()

	err := r.fill(b, i, src, bytes)
	r.mu.Lock()
	b.busy = false
	r.cond.Broadcast()
	if errors.Is(err, errUnpinned) {
		r.pinErr = err
		r.direct++
		r.mu.Unlock()
		return direct()
	}
	defer r.mu.Unlock()
	switch {
	case err != nil:
		return err
	case r.closed: // close waited for this buffer; it queues nothing now
		return errClosed
	}
	if err := r.p.copyPinned(dst, b.host, bytes, b.ev); err != nil {
		return err
	}
	b.pending = true
	r.staged++
	return nil
}

// errUnpinned marks a failed allocation of pinned memory (fill): the
// ring copies straight from the caller's memory from then on.
var errUnpinned = errors.New("pinned host memory for staging")

// fill makes busy buffer b (the ring's i-th) ready for bytes and copies
// them in from src: its last DMA waited for, its event made, the buffer
// grown. It runs without the ring's lock.
func (r *stagingRing) fill(b *stagingBuf, i int, src unsafe.Pointer, bytes int) error {
	if b.pending {
		if err := r.p.waitEvent(b.ev); err != nil {
			return fmt.Errorf("cuda: staging buffer %d: %w", i, err)
		}
		b.pending = false
	}
	if b.ev == nil {
		ev, err := r.p.newEvent()
		if err != nil {
			return err
		}
		b.ev = ev
	}
	if b.size < bytes {
		if b.host != nil {
			r.p.hostFree(b.host)
			b.host, b.size = nil, 0
		}
		n := (bytes + stageRound - 1) / stageRound * stageRound
		h, err := r.p.hostAlloc(n)
		if err != nil {
			return fmt.Errorf("cuda: %d bytes of %w: %w", n, errUnpinned, err)
		}
		b.host, b.size = h, n
	}
	copy(unsafe.Slice((*byte)(b.host), bytes), unsafe.Slice((*byte)(src), bytes))
	return nil
}

// pinnedMemory is pinned host memory the ring handed out
// (train.HostMemory): copies from it are queued in place, each
// re-recording its event, so Wait covers every copy queued so far.
type pinnedMemory struct {
	r    *stagingRing
	host unsafe.Pointer
	size int
	ev   unsafe.Pointer
	// queued counts the copies queued from it, waited those a wait
	// covered: one is pending while they differ.
	queued, waited int
}

// hostMemory returns bytes of pinned memory whose copies the ring queues
// in place.
// The allocation (cuMemHostAlloc, slow) runs without the ring's lock.
func (r *stagingRing) hostMemory(bytes int) (*pinnedMemory, error) {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return nil, errClosed
	}
	ev, err := r.p.newEvent()
	if err != nil {
		return nil, err
	}
	h, err := r.p.hostAlloc(max(bytes, 1))
	if err != nil {
		r.p.freeEvent(ev)
		return nil, fmt.Errorf("cuda: %d bytes of pinned host memory: %w", bytes, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		r.p.hostFree(h)
		r.p.freeEvent(ev)
		return nil, errClosed
	}
	m := &pinnedMemory{r: r, host: h, size: bytes, ev: ev}
	r.mems = append(r.mems, m)
	return m, nil
}

// memOf is the pinned memory holding [src, src+bytes), or nil.
func (r *stagingRing) memOf(src unsafe.Pointer, bytes int) *pinnedMemory {
	for _, m := range r.mems {
		lo := uintptr(m.host)
		if p := uintptr(src); p >= lo && p+uintptr(bytes) <= lo+uintptr(m.size) {
			return m
		}
	}
	return nil
}

// Bytes implements train.HostMemory (nil once freed).
func (m *pinnedMemory) Bytes() []byte {
	if m.host == nil {
		return nil
	}
	return unsafe.Slice((*byte)(m.host), m.size)
}

// Wait implements train.HostMemory: it waits for the copies queued from
// m before the call, without the ring's lock (other copies go on). It
// must not run at the same time as m's Free, nor as the machine's close
// (which frees m): the trainer calls all three from its own goroutine.
func (m *pinnedMemory) Wait() error {
	r := m.r
	r.mu.Lock()
	if m.queued == m.waited {
		r.mu.Unlock()
		return nil
	}
	ev, queued := m.ev, m.queued
	r.mu.Unlock()
	if err := r.p.waitEvent(ev); err != nil {
		return fmt.Errorf("cuda: a copy from pinned host memory: %w", err)
	}
	r.mu.Lock()
	m.waited = max(m.waited, queued) // a copy queued since stays pending
	r.mu.Unlock()
	return nil
}

func (m *pinnedMemory) waitLocked() error {
	if m.queued == m.waited {
		return nil
	}
	if err := m.r.p.waitEvent(m.ev); err != nil {
		return fmt.Errorf("cuda: a copy from pinned host memory: %w", err)
	}
	m.waited = m.queued
	return nil
}

// busyBufs counts the buffers copies in flight hold (r.mu held).
func (r *stagingRing) busyBufs() int {
	n := 0
	for i := range r.bufs {
		if r.bufs[i].busy {
			n++
		}
	}
	return n
}

// Free implements train.HostMemory: it waits, then releases the memory
// (nothing once freed, or once the ring closed and freed it).
func (m *pinnedMemory) Free() error {
	m.r.mu.Lock()
	defer m.r.mu.Unlock()
	return m.freeLocked()
}

func (m *pinnedMemory) freeLocked() error {
	if m.host == nil {
		return nil
	}
	err := m.waitLocked()
	if err == nil {
		m.r.p.hostFree(m.host)
	} // else left allocated: a copy from it may still be reading it
	m.r.p.freeEvent(m.ev)
	m.host, m.ev, m.size = nil, nil, 0
	r := m.r
	for i, o := range r.mems {
		if o == m {
			r.mems = append(r.mems[:i], r.mems[i+1:]...)
			break
		}
	}
	return err
}

// drainLocked waits for every queued DMA from the ring.
func (r *stagingRing) drainLocked() error {
	var first error
	for _, m := range r.mems {
		if err := m.waitLocked(); err != nil && first == nil {
			first = err
		}
	}
	for i := range r.bufs {
		b := &r.bufs[i]
		if b.pending {
			if err := r.p.waitEvent(b.ev); err != nil && first == nil {
				first = err
			}
			b.pending = false
		}
	}
	return first
}

// close waits for the queued DMAs and frees the buffers and events; the
// ring copies nothing after it.
func (r *stagingRing) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	r.cond.Broadcast()
	for r.busyBufs() > 0 { // copies in flight own their buffers
		r.cond.Wait()
	}
	err := r.drainLocked()
	for len(r.mems) > 0 {
		r.mems[0].freeLocked() // drained: nothing to wait for
	}
	for i := range r.bufs {
		b := &r.bufs[i]
		if b.host != nil && err == nil { // a failed wait: a DMA may still read it
			r.p.hostFree(b.host)
		}
		if b.ev != nil {
			r.p.freeEvent(b.ev)
		}
		*b = stagingBuf{}
	}
	return err
}

// stats counts the ring's copies (train.HostCopies), and waits the
// copies that found their buffer's previous DMA unfinished.
func (r *stagingRing) stats() (c train.HostCopies, waits int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c = train.HostCopies{Staged: r.staged, InPlace: r.inPlace, Direct: r.direct}
	if r.pinErr != nil {
		c.Unpinned = r.pinErr.Error()
	}
	return c, r.waits
}

// HostCopies implements train.HostCopyReporter: the copies from host
// memory so far (none counted on the twin, which has nothing to pin, nor
// with BackendOptions.Pageable).
func (b *Backend) HostCopies() train.HostCopies { return hostCopiesOf(b.m) }

// hostCopiesOf is m's count of host copies, where it keeps one.
func hostCopiesOf(m machine) train.HostCopies {
	if h, ok := m.(interface{ hostCopies() train.HostCopies }); ok {
		return h.hostCopies()
	}
	return train.HostCopies{}
}

// HostMemory implements train.HostMemoryBackend: on the GPU, pinned
// memory from which copies are queued in place; with
// BackendOptions.Pageable and on the twin, Go memory (its copies are the
// machine's usual ones).
func (b *Backend) HostMemory(bytes int) (train.HostMemory, error) { return hostMemoryOf(b.m, bytes) }

// hostMemoryOf is bytes of m's host memory: pinned where m pins, else Go
// memory.
func hostMemoryOf(m machine, bytes int) (train.HostMemory, error) {
	if h, ok := m.(interface {
		hostMemory(int) (train.HostMemory, error)
	}); ok {
		return h.hostMemory(bytes)
	}
	return goMemory(make([]byte, bytes)), nil
}

// goMemory is train.HostMemory in Go memory: its copies have read it
// when they return.
type goMemory []byte

func (g goMemory) Bytes() []byte { return g }
func (goMemory) Wait() error     { return nil }
func (goMemory) Free() error     { return nil }
