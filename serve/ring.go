package serve

import (
	"context"
	"fmt"
	"sync"
)

// Slot states.
const (
	slotFree     = uint8(iota) // the server may write it
	slotPipeline               // a batch is being written into it, or waits to be announced
	slotConsumer               // announced and not yet freed by the consumer
)

// ring hands the slots of the shared-memory file out as the memory of
// batches (it is the pipeline.Allocator the server gives the loader, so a
// batch's rows are decoded straight into the slot the consumer reads) and
// tracks who holds each slot. It is safe for concurrent use: the batch
// stage allocates, the session's reader frees what the consumer hands back.
//
// An id is a slot number and the generation of its allocation
// (gen<<16 | slot), so a late Free of a batch whose slot was reclaimed and
// handed out again is recognised and ignored.
type ring struct {
	mem       []byte // the whole mapping
	base      int64  // offset of slot 0
	stride    int64  // slot bytes
	imagesOff int64  // images offset within a slot
	images    int    // bytes of a slot's images area (batch × row bytes)

	// reserve allocates the file's space for a slot's bytes before the
	// slot is first handed out (nil: nothing to reserve).
	reserve func(off, n int64) error

	mu       sync.Mutex
	state    []uint8
	gen      []uint32
	reserved []bool        // the slot's space is allocated
	free     []int         // free slots, reused last freed first
	wake     chan struct{} // a slot was freed (capacity 1)
}

func newRing(mem []byte, h *Hello) *ring {
	r := &ring{
		mem: mem, base: h.HeaderBytes, stride: h.SlotBytes, imagesOff: h.ImagesOffset,
		images: h.Batch * h.RowBytes, state: make([]uint8, h.Slots), gen: make([]uint32, h.Slots),
		reserved: make([]bool, h.Slots), wake: make(chan struct{}, 1),
	}
	for i := h.Slots - 1; i >= 0; i-- {
		r.free = append(r.free, i)
	}
	return r
}

// slot returns slot i's bytes.
func (r *ring) slot(i int) []byte {
	return r.mem[r.base+int64(i)*r.stride:][:r.stride]
}

// Alloc implements pipeline.Allocator: the images area of a free slot,
// waiting for the consumer to free one while it holds them all.
func (r *ring) Alloc(ctx context.Context, n int) ([]byte, int, error) {
	if n > r.images {
		return nil, 0, fmt.Errorf("serve: a batch of %d bytes of rows; slots hold %d", n, r.images)
	}
	for {
		r.mu.Lock()
		if k := len(r.free); k > 0 {
			i := r.free[k-1]
			r.free = r.free[:k-1]
			r.state[i] = slotPipeline
			r.gen[i]++
			id := int(r.gen[i])<<16 | i
			more := k > 1
			fresh := !r.reserved[i]
			r.mu.Unlock()
			if more {
				r.signal() // another waiter may take the next one
			}
			if fresh && r.reserve != nil {
				// The slot is this caller's alone (slotPipeline), so no
				// other Alloc reserves it at the same time.
				if err := r.reserve(r.base+int64(i)*r.stride, r.stride); err != nil {
					r.Free(id)
					return nil, 0, err
				}
			}
			if fresh {
				r.mu.Lock()
				r.reserved[i] = true
				r.mu.Unlock()
			}
			off := r.imagesOff
			return r.slot(i)[off : off+int64(n) : off+int64(n)], id, nil
		}
		r.mu.Unlock()
		select {
		case <-r.wake:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
}

func (r *ring) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Free implements pipeline.Allocator: a batch released without being
// announced gives its slot back. Stale ids are ignored.
func (r *ring) Free(id int) {
	i, g := id&0xffff, uint32(id>>16)
	r.mu.Lock()
	ok := i < len(r.state) && r.state[i] == slotPipeline && r.gen[i] == g
	if ok {
		r.state[i] = slotFree
		r.free = append(r.free, i)
	}
	r.mu.Unlock()
	if ok {
		r.signal()
	}
}

// announce passes the slot of id to the consumer and returns its number.
func (r *ring) announce(id int) (int, error) {
	i, g := id&0xffff, uint32(id>>16)
	r.mu.Lock()
	defer r.mu.Unlock()
	if i >= len(r.state) || r.state[i] != slotPipeline || r.gen[i] != g {
		return 0, fmt.Errorf("serve: batch memory %#x is no slot being written", id)
	}
	r.state[i] = slotConsumer
	return i, nil
}

// consumerFree applies the consumer's 'F' frame for slot i.
func (r *ring) consumerFree(i int) error {
	r.mu.Lock()
	ok := i >= 0 && i < len(r.state) && r.state[i] == slotConsumer
	if ok {
		r.state[i] = slotFree
		r.free = append(r.free, i)
	}
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: free of slot %d, which the consumer does not hold", ErrProtocol, i)
	}
	r.signal()
	return nil
}

// reclaim frees every slot the pipeline held: called once an epoch's
// iteration has returned (its goroutines joined), for the batches a
// pipeline dropped without releasing them (a prefetch queue cut short).
func (r *ring) reclaim() {
	r.mu.Lock()
	for i, st := range r.state {
		if st == slotPipeline {
			r.state[i] = slotFree
			r.free = append(r.free, i)
		}
	}
	r.mu.Unlock()
	r.signal()
}

// held returns the number of slots the consumer holds.
func (r *ring) held() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, st := range r.state {
		if st == slotConsumer {
			n++
		}
	}
	return n
}
