package pipeline

import (
	"context"
	"iter"
)

// ShuffleDataset shuffles its input through a bounded buffer. See Shuffle.
type ShuffleDataset[T any] struct {
	stage
	in   Dataset[T]
	size int
	seed uint64
}

// Shuffle shuffles d with tf.data's buffer semantics: it fills a buffer
// with the first size elements, then repeatedly yields a uniformly chosen
// element of the buffer and puts the next input element in its place; when
// the input ends it yields what remains in random order. size 1 keeps the
// order; size >= the input length is a full uniform shuffle. The generator is
// seeded by seed and the epoch the context names (EpochFrom), so each epoch has a different order
// (tf.data's reshuffle_each_iteration) and the same seed repeats the same
// orders. Memory: size elements.
func Shuffle[T any](d Dataset[T], size int, seed uint64) *ShuffleDataset[T] {
	s := &ShuffleDataset[T]{in: d, size: size, seed: seed}
	s.init("shuffle", RoleCPU, d)
	if size < 1 {
		s.err = configError("shuffle", "buffer size %d", size)
	}
	return s
}

// Named sets the stage name shown in Stats.
func (s *ShuffleDataset[T]) Named(name string) *ShuffleDataset[T] { s.name = name; return s }

// Iter implements Dataset.
func (s *ShuffleDataset[T]) Iter(ctx context.Context) iter.Seq2[T, error] {
	if s.err != nil {
		return failSeq[T](s.err)
	}
	return func(yield func(T, error) bool) {
		last := s.begin()
		epoch := EpochFrom(ctx)
		defer s.end()
		m := meter{s: &s.stage}
		defer m.flush()
		r := epochRand(s.seed, epoch, saltBuffer)
		buf := make([]T, 0, min(s.size, 1<<16))
		for x, err := range s.in.Iter(ctx) {
			t1 := nanotime()
			m.waitIn += t1 - last
			last = t1
			if err != nil {
				yield(x, err)
				return
			}
			if len(buf) < s.size {
				buf = append(buf, x)
				continue
			}
			j := r.IntN(len(buf))
			out := buf[j]
			buf[j] = x
			m.items++
			t2 := nanotime()
			m.busy += t2 - t1
			if !yield(out, nil) {
				return
			}
			last = nanotime()
			m.blockedOut += last - t2
			m.tick()
		}
		for len(buf) > 0 {
			j := r.IntN(len(buf))
			out := buf[j]
			n := len(buf) - 1
			buf[j] = buf[n]
			var zero T
			buf[n] = zero
			buf = buf[:n]
			m.items++
			t := nanotime()
			if !yield(out, nil) {
				return
			}
			m.blockedOut += nanotime() - t
		}
	}
}
