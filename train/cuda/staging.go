package cuda

import (
	"fmt"
	"sync"
	"unsafe"
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
// use (the feeder and the step copy in at once); copies are queued in
// the order their calls take the lock.
type stagingRing struct {
	mu     sync.Mutex
	p      pinner
	bufs   [stageBufs]stagingBuf
	next   int
	closed bool
	// staged and direct count the copies that went through the ring
	// and those that did not; waits counts the copies that found their
	// buffer's previous DMA unfinished.
	staged, direct, waits int64
}

type stagingBuf struct {
	host    unsafe.Pointer
	size    int
	ev      unsafe.Pointer
	pending bool // a DMA from host was queued and not yet waited for
}

func newStagingRing(p pinner) *stagingRing { return &stagingRing{p: p} }

// stages reports whether a copy of bytes goes through the ring.
func stages(bytes int) bool { return bytes >= stageMin && bytes <= stageMax }

// copyIn copies bytes at src into dst through the next pinned buffer and
// returns once src has been read. direct is the machine's own copy, for
// the sizes the ring leaves alone.
func (r *stagingRing) copyIn(dst uint64, src unsafe.Pointer, bytes int, direct func() error) error {
	if !stages(bytes) {
		r.mu.Lock()
		r.direct++
		r.mu.Unlock()
		return direct()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errClosed
	}
	b := &r.bufs[r.next]
	if b.pending {
		r.waits++
		if err := r.p.waitEvent(b.ev); err != nil {
			return fmt.Errorf("cuda: staging buffer %d: %w", r.next, err)
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
			return fmt.Errorf("cuda: %d bytes of pinned host memory for staging: %w", n, err)
		}
		b.host, b.size = h, n
	}
	copy(unsafe.Slice((*byte)(b.host), bytes), unsafe.Slice((*byte)(src), bytes))
	if err := r.p.copyPinned(dst, b.host, bytes, b.ev); err != nil {
		return err
	}
	b.pending = true
	r.next = (r.next + 1) % stageBufs
	r.staged++
	return nil
}

// drain waits for every queued DMA from the ring (before the device
// memory they write is freed, or the machine closed).
func (r *stagingRing) drain() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.drainLocked()
}

func (r *stagingRing) drainLocked() error {
	var first error
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
	err := r.drainLocked()
	for i := range r.bufs {
		b := &r.bufs[i]
		if b.host != nil {
			r.p.hostFree(b.host)
		}
		if b.ev != nil {
			r.p.freeEvent(b.ev)
		}
		*b = stagingBuf{}
	}
	return err
}

// StagingStats counts a backend's copies from host memory: Staged went
// through its pinned buffers, Direct straight from the caller's memory
// (too small or too large to stage; all of them with
// train.BackendOptions.Pageable, and on the twin, which has nothing to
// pin), Waits found their buffer's previous copy still running.
type StagingStats struct{ Staged, Direct, Waits int64 }

// StagingStats counts b's copies from host memory so far (zero on the
// twin and with Pageable).
func (b *Backend) StagingStats() StagingStats {
	if s, ok := b.m.(interface{ stagingStats() StagingStats }); ok {
		return s.stagingStats()
	}
	return StagingStats{}
}

func (r *stagingRing) stats() StagingStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return StagingStats{r.staged, r.direct, r.waits}
}
