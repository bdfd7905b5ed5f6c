package pipeline

import "context"

type epochKey struct{}

// WithEpoch returns a context that asks every stage of a pipeline iterated
// with it to run epoch e. The epoch is an input of each seeded stage (the
// file shuffle, the buffer shuffle, the global shuffle, and any map
// function that reads it with EpochFrom), never a count the stage keeps:
// a pipeline built fresh and asked for epoch e yields exactly what epoch e
// of a long-running one yields.
func WithEpoch(ctx context.Context, e int64) context.Context {
	return context.WithValue(ctx, epochKey{}, e)
}

// EpochFrom returns the epoch ctx carries (see WithEpoch), or 0 when it
// carries none. Map functions that randomise per epoch (augmentation) seed
// their generators with it.
func EpochFrom(ctx context.Context) int64 {
	e, _ := ctx.Value(epochKey{}).(int64)
	return e
}

// RepeatEpoch is the epoch that repetition r (0-based) of Repeat(d, count)
// runs d with when the Repeat itself runs epoch e: e·count + r, so the
// repetitions of one epoch, and of different epochs, are distinct epochs of
// d, and epoch 0 of Repeat(d, 3) runs epochs 0, 1, 2 of d. Forever counts as
// 2^32 repetitions.
func RepeatEpoch(e int64, count, r int) int64 {
	c := int64(count)
	if count == Forever {
		c = 1 << 32
	}
	return e*c + int64(r)
}
