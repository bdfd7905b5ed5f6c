package source

import (
	"math/bits"
	"sync"
)

// A Buffer is recycled memory a reader reads a record into (see
// Record.Buf). Reading every sample into fresh memory costs the zeroing of
// it and, until the heap has grown to its next collection, a page fault
// per 4 KiB: about a tenth of a train-recipe sample's CPU time on
// ImageNet-sized photographs. Buffers come in power-of-two size classes
// from 4 KiB to 64 MiB, each class a sync.Pool (which the garbage
// collector may empty: what it holds is bounded by what was in flight).
type Buffer struct {
	// B is the buffer's storage: a reader appends to B[:0] and sets B to
	// the result (append may move it; the buffer then owns the new
	// storage).
	B []byte
}

const (
	minBufferShift = 12 // 4 KiB
	maxBufferShift = 26 // 64 MiB
)

var bufferPools [maxBufferShift - minBufferShift + 1]sync.Pool

// GetBuffer returns a buffer whose B has length 0 and capacity at least n.
func GetBuffer(n int) *Buffer {
	c := bufferClass(n)
	if c < 0 {
		return &Buffer{B: make([]byte, 0, n)}
	}
	if b, _ := bufferPools[c].Get().(*Buffer); b != nil {
		b.B = b.B[:0]
		return b
	}
	return &Buffer{B: make([]byte, 0, 1<<(c+minBufferShift))}
}

// Release gives b's memory back for reuse. Nothing may read or write b.B
// (or a slice of it) afterwards. Release of nil does nothing, so a
// consumer may release whatever Record.Buf holds.
func (b *Buffer) Release() {
	if b == nil || cap(b.B) < 1<<minBufferShift {
		return
	}
	// The largest class b's capacity covers, so that GetBuffer's promise
	// holds for every buffer of that class.
	c := bits.Len(uint(cap(b.B))) - 1 - minBufferShift
	if c >= len(bufferPools) {
		return // above the largest class: let the GC have it
	}
	b.B = b.B[:0]
	bufferPools[c].Put(b)
}

// bufferClass is the smallest class holding n bytes, -1 above the largest.
func bufferClass(n int) int {
	if n <= 1<<minBufferShift {
		return 0
	}
	c := bits.Len(uint(n-1)) - minBufferShift
	if c >= len(bufferPools) {
		return -1
	}
	return c
}
