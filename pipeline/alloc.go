package pipeline

import "context"

// Allocator supplies the memory of a Batch stage's arenas in place of the
// stage's own pooled buffers, so that a batch's rows are written where
// their consumer reads them (a shared-memory slot, see package serve) and
// never copied there afterwards.
//
// Alloc returns n bytes, 8-byte aligned, for one batch and an id naming
// them; it may block until memory is free (the allocator's bound is the
// pipeline's backpressure) and must return ctx's error once ctx is done.
// Free gives the memory of id back. Release calls Free for a batch that
// still holds its memory; a consumer that keeps the memory past Release
// takes it with Minibatch.Detach and frees it itself. Free of an id that
// is no longer allocated must be harmless (an allocator can reclaim all its
// memory when an epoch's iteration has returned, then ignore late frees).
// Both methods must be safe for concurrent use.
type Allocator interface {
	Alloc(ctx context.Context, n int) (buf []byte, id int, err error)
	Free(id int)
}

type allocKey struct{}

// WithAllocator returns a context under which every Batch stage with an
// Arena takes its batches' memory from a rather than from its pool. Where
// the rows go is not an input of any stage: the batches hold the same
// bytes either way.
func WithAllocator(ctx context.Context, a Allocator) context.Context {
	return context.WithValue(ctx, allocKey{}, a)
}

// AllocatorFrom returns the Allocator ctx carries, or nil.
func AllocatorFrom(ctx context.Context) Allocator {
	a, _ := ctx.Value(allocKey{}).(Allocator)
	return a
}
