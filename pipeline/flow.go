package pipeline

import (
	"context"
	"iter"
)

// passStage is a stage that forwards a subsequence of its input without
// work of its own: Shard, Take, Skip.
type passStage[T any] struct {
	stage
	in Dataset[T]
}

// ShardDataset keeps every n-th element of its input. See Shard.
type ShardDataset[T any] struct {
	passStage[T]
	n, i int
}

// Shard keeps elements i, i+n, i+2n, … of d: rank i's part of n ranks,
// sharded by record. Parts are disjoint, cover d, and differ in size by at
// most one. Every rank still reads all of d; to shard files instead, use
// FileList.Shard (AUTO policy) or IndexedDataset.Shard.
func Shard[T any](d Dataset[T], n, i int) *ShardDataset[T] {
	s := &ShardDataset[T]{n: n, i: i}
	s.in = d
	s.init("shard", RoleNone, d)
	if n < 1 || i < 0 || i >= n {
		s.err = configError("shard", "shard %d of %d", i, n)
	}
	return s
}

// Named sets the stage name shown in Stats.
func (s *ShardDataset[T]) Named(name string) *ShardDataset[T] { s.name = name; return s }

// Iter implements Dataset.
func (s *ShardDataset[T]) Iter(ctx context.Context) iter.Seq2[T, error] {
	if s.err != nil {
		return failSeq[T](s.err)
	}
	return func(yield func(T, error) bool) {
		s.begin()
		defer s.end()
		pos := 0
		for x, err := range s.in.Iter(ctx) {
			if err != nil {
				yield(x, err)
				return
			}
			keep := pos%s.n == s.i
			pos++
			if keep {
				s.items.Add(1)
				if !yield(x, nil) {
					return
				}
			}
		}
	}
}

// TakeDataset yields at most n elements of its input. See Take.
type TakeDataset[T any] struct {
	passStage[T]
	n int
}

// Take yields the first n elements of each epoch of d, then stops d. Take(d,
// 0) never starts d.
func Take[T any](d Dataset[T], n int) *TakeDataset[T] {
	s := &TakeDataset[T]{n: n}
	s.in = d
	s.init("take", RoleNone, d)
	if n < 0 {
		s.err = configError("take", "count %d", n)
	}
	return s
}

// Named sets the stage name shown in Stats.
func (s *TakeDataset[T]) Named(name string) *TakeDataset[T] { s.name = name; return s }

// Iter implements Dataset.
func (s *TakeDataset[T]) Iter(ctx context.Context) iter.Seq2[T, error] {
	if s.err != nil {
		return failSeq[T](s.err)
	}
	return func(yield func(T, error) bool) {
		if s.n == 0 {
			return
		}
		s.begin()
		defer s.end()
		k := 0
		for x, err := range s.in.Iter(ctx) {
			if err != nil {
				yield(x, err)
				return
			}
			s.items.Add(1)
			if !yield(x, nil) {
				return
			}
			if k++; k == s.n {
				return
			}
		}
	}
}

// SkipDataset drops the first n elements of its input. See Skip.
type SkipDataset[T any] struct {
	passStage[T]
	n int
}

// Skip drops the first n elements of each epoch of d and yields the rest.
func Skip[T any](d Dataset[T], n int) *SkipDataset[T] {
	s := &SkipDataset[T]{n: n}
	s.in = d
	s.init("skip", RoleNone, d)
	if n < 0 {
		s.err = configError("skip", "count %d", n)
	}
	return s
}

// Named sets the stage name shown in Stats.
func (s *SkipDataset[T]) Named(name string) *SkipDataset[T] { s.name = name; return s }

// Iter implements Dataset.
func (s *SkipDataset[T]) Iter(ctx context.Context) iter.Seq2[T, error] {
	if s.err != nil {
		return failSeq[T](s.err)
	}
	return func(yield func(T, error) bool) {
		s.begin()
		defer s.end()
		k := 0
		for x, err := range s.in.Iter(ctx) {
			if err != nil {
				yield(x, err)
				return
			}
			if k < s.n {
				k++
				continue
			}
			s.items.Add(1)
			if !yield(x, nil) {
				return
			}
		}
	}
}

// RepeatDataset runs its input several times. See Repeat.
type RepeatDataset[T any] struct {
	passStage[T]
	count int
}

// Repeat runs count epochs of d (Forever: without end) as one epoch. Each
// repetition calls d.Iter again with its own epoch, RepeatEpoch(e, count,
// r) for repetition r of epoch e, so shuffling stages upstream reshuffle,
// as with tf.data's repeat after shuffle, and a fresh Repeat asked for
// epoch e repeats what epoch e of a long-running one did. A repetition that
// yields nothing ends the repeat (instead of spinning forever on an empty
// input).
func Repeat[T any](d Dataset[T], count int) *RepeatDataset[T] {
	s := &RepeatDataset[T]{count: count}
	s.in = d
	s.init("repeat", RoleNone, d)
	if count < 0 && count != Forever {
		s.err = configError("repeat", "count %d", count)
	}
	return s
}

// Named sets the stage name shown in Stats.
func (s *RepeatDataset[T]) Named(name string) *RepeatDataset[T] { s.name = name; return s }

// Iter implements Dataset.
func (s *RepeatDataset[T]) Iter(ctx context.Context) iter.Seq2[T, error] {
	if s.err != nil {
		return failSeq[T](s.err)
	}
	return func(yield func(T, error) bool) {
		s.begin()
		defer s.end()
		e := EpochFrom(ctx)
		for r := 0; s.count == Forever || r < s.count; r++ {
			n := 0
			for x, err := range s.in.Iter(WithEpoch(ctx, RepeatEpoch(e, s.count, r))) {
				if err != nil {
					yield(x, err)
					return
				}
				n++
				s.items.Add(1)
				if !yield(x, nil) {
					return
				}
			}
			if n == 0 {
				return
			}
		}
	}
}
