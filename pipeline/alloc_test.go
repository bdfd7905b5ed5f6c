package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"unsafe"
)

// ringAlloc is a test Allocator: k buffers of one contiguous block, handed
// out one at a time and blocking while all are out.
type ringAlloc struct {
	block []byte
	size  int
	mu    sync.Mutex
	out   map[int]bool
	free  chan int
	frees int
}

func newRingAlloc(k, size int) *ringAlloc {
	words := make([]uint64, k*size/8+1)
	a := &ringAlloc{block: unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), k*size), size: size, out: map[int]bool{}, free: make(chan int, k)}
	for i := range k {
		a.free <- i
	}
	return a
}

func (a *ringAlloc) Alloc(ctx context.Context, n int) ([]byte, int, error) {
	if n > a.size {
		return nil, 0, fmt.Errorf("%d bytes: buffers hold %d", n, a.size)
	}
	select {
	case i := <-a.free:
		a.mu.Lock()
		a.out[i] = true
		a.mu.Unlock()
		buf := a.block[i*a.size : (i+1)*a.size]
		for j := range buf {
			buf[j] = 0xEE // stale bytes: the stage must overwrite what it yields
		}
		return buf, i, nil
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
}

func (a *ringAlloc) Free(id int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.out[id] {
		return
	}
	delete(a.out, id)
	a.frees++
	a.free <- id
}

func (a *ringAlloc) outstanding() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.out)
}

// owns reports whether p lies in a's block.
func (a *ringAlloc) owns(p []byte) bool {
	lo := uintptr(unsafe.Pointer(&a.block[0]))
	x := uintptr(unsafe.Pointer(&p[0]))
	return x >= lo && x < lo+uintptr(len(a.block))
}

func fillAllocRow(row []byte, x int) error {
	for j := range row {
		row[j] = byte(x*7 + j)
	}
	return nil
}

// TestBatchAllocator: under WithAllocator a batch's Data is the
// allocator's memory (no arena of its own, no copy), the batches hold the
// same rows as with the stage's own arenas under every remainder policy and
// Fill, Release frees the memory, Detach keeps it.
func TestBatchAllocator(t *testing.T) {
	type cfg struct {
		rem  Remainder
		fill int
	}
	for _, c := range []cfg{{Keep, -1}, {Drop, -1}, {Pad, -1}, {Keep, 12}, {Pad, 5}} {
		mk := func() *BatchDataset[int] {
			b := Batch(FromSlice(ints(7)), 3).Arena(5, fillAllocRow).Remainder(c.rem)
			if c.fill >= 0 {
				b = b.Fill(c.fill)
			}
			return b
		}
		var want []string
		for b, err := range mk().Iter(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, fmt.Sprint(b.Valid, b.Repeats, b.Items, b.Data))
			b.Release()
		}
		a := newRingAlloc(2, 15)
		var got []string
		ctx := WithAllocator(context.Background(), a)
		for b, err := range mk().Iter(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			if !a.owns(b.Data) {
				t.Fatalf("%v: batch %d's Data is not the allocator's memory", c, b.Index)
			}
			got = append(got, fmt.Sprint(b.Valid, b.Repeats, b.Items, b.Data))
			b.Release()
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%v: with an allocator %v, without %v", c, got, want)
		}
		if n := a.outstanding(); n != 0 {
			t.Fatalf("%v: %d buffers not freed after the epoch", c, n)
		}
	}

	// Detach: the consumer keeps the memory past Release.
	a := newRingAlloc(3, 15)
	ctx := WithAllocator(context.Background(), a)
	var kept []int
	for b, err := range Batch(FromSlice(ints(6)), 3).Arena(5, fillAllocRow).Iter(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		data, id, ok := b.Detach()
		if !ok || !a.owns(data) || b.Data != nil {
			t.Fatalf("Detach: ok %v, owned %v, Data left %v", ok, ok && a.owns(data), b.Data != nil)
		}
		b.Release()
		kept = append(kept, id)
	}
	if n := a.outstanding(); n != 2 {
		t.Fatalf("%d buffers out after detaching 2 batches", n)
	}
	for _, id := range kept {
		a.Free(id)
	}
	// A stage without an arena ignores the allocator.
	for b, err := range Batch(FromSlice(ints(3)), 3).Iter(ctx) {
		if err != nil || b.Data != nil {
			t.Fatalf("no arena: %v, Data %v", err, b.Data)
		}
		if _, _, ok := b.Detach(); ok {
			t.Fatal("Detach of a batch without allocator memory reported ok")
		}
		b.Release()
	}
}

// TestBatchAllocatorBounded: the allocator's bound is the backpressure; an
// early break frees the batch being filled; a stage blocked on memory ends
// with ctx's error and leaks no goroutine.
func TestBatchAllocatorBounded(t *testing.T) {
	base := leakBase(t)
	a := newRingAlloc(2, 15)
	ctx, cancel := context.WithCancel(WithAllocator(context.Background(), a))
	defer cancel()
	d := Prefetch(Batch(FromSlice(ints(30)), 3).Arena(5, fillAllocRow), 1)
	var held []*Minibatch[int]
	var err error
	for b, e := range d.Iter(ctx) {
		if e != nil {
			err = e
			break
		}
		held = append(held, b) // never released: the stage runs out of memory
		if len(held) == 2 {
			cancel()
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("blocked on memory then cancelled: %v, want context.Canceled", err)
	}
	if len(held) != 2 {
		t.Fatalf("%d batches out of 2 buffers", len(held))
	}
	for _, b := range held {
		b.Release()
	}
	if n := a.outstanding(); n != 0 {
		t.Fatalf("%d buffers out after releasing all", n)
	}
	checkNoLeak(t, base)

	// Early break: the batch in the stage's hands is freed by the time the
	// loop is left.
	a = newRingAlloc(4, 15)
	for b, e := range Batch(FromSlice(ints(30)), 3).Arena(5, fillAllocRow).Iter(WithAllocator(context.Background(), a)) {
		if e != nil {
			t.Fatal(e)
		}
		b.Release()
		if b.Index == 2 {
			break
		}
	}
	if n := a.outstanding(); n != 0 {
		t.Fatalf("%d buffers out after an early break", n)
	}
	checkNoLeak(t, base)

	// Too small a buffer is an error, not a short batch.
	small := newRingAlloc(2, 14)
	if _, err := Collect(WithAllocator(context.Background(), small), Batch(FromSlice(ints(3)), 3).Arena(5, fillAllocRow)); err == nil {
		t.Fatal("allocator with 14-byte buffers for 15-byte batches: no error")
	}
}
