package pipeline

import (
	"context"
	"iter"
	"sync"
	"sync/atomic"
)

// DefaultMaxPrefetch bounds the depth Prefetch(Auto) may grow to, unless
// set with MaxDepth.
const DefaultMaxPrefetch = 16

// PrefetchDataset runs its input ahead of the consumer. See Prefetch.
type PrefetchDataset[T any] struct {
	stage
	in       Dataset[T]
	depth    int
	maxDepth int
	cur      atomic.Int64
}

// Prefetch runs d in its own goroutine, up to depth elements ahead of the
// consumer (Auto: start at 1 and grow, up to MaxDepth, while the consumer
// finds the queue empty although the producer is at times ahead). The
// queue is a channel of capacity depth; that is the backpressure.
func Prefetch[T any](d Dataset[T], depth int) *PrefetchDataset[T] {
	p := &PrefetchDataset[T]{in: d, depth: depth, maxDepth: DefaultMaxPrefetch}
	p.init("prefetch", RoleNone, d)
	switch {
	case depth == Auto:
		p.cur.Store(1)
	case depth < 1:
		p.err = configError("prefetch", "depth %d", depth)
	default:
		p.cur.Store(int64(depth))
	}
	return p
}

// MaxDepth bounds the depth Auto may choose (default DefaultMaxPrefetch).
func (p *PrefetchDataset[T]) MaxDepth(n int) *PrefetchDataset[T] {
	if n < 1 {
		p.err = configError("prefetch", "max depth %d", n)
		return p
	}
	p.maxDepth = n
	return p
}

// Named sets the stage name shown in Stats.
func (p *PrefetchDataset[T]) Named(name string) *PrefetchDataset[T] { p.name = name; return p }

// Depth returns the depth in use, or the one Auto chose last (the next
// epoch starts from it).
func (p *PrefetchDataset[T]) Depth() int { return int(p.cur.Load()) }

// Iter implements Dataset.
func (p *PrefetchDataset[T]) Iter(parent context.Context) iter.Seq2[T, error] {
	if p.err != nil {
		return failSeq[T](p.err)
	}
	return func(yield func(T, error) bool) {
		last := p.begin()
		defer p.end()
		ctx, cancel := context.WithCancel(parent)
		var wg sync.WaitGroup
		defer func() { cancel(); wg.Wait() }()

		auto := p.depth == Auto
		depth := p.depth
		var tokens chan struct{}
		if auto {
			depth = min(max(int(p.cur.Load()), 1), p.maxDepth)
			// The channel can hold maxDepth elements; tokens limit the
			// elements in flight to the current depth.
			tokens = make(chan struct{}, p.maxDepth)
			for range depth {
				tokens <- struct{}{}
			}
		}
		capacity := depth
		if auto {
			capacity = p.maxDepth
		}
		ch := make(chan item[T], capacity)
		var full atomic.Int64 // times the producer found the queue full
		wg.Go(func() {
			defer close(ch)
			for x, err := range p.in.Iter(ctx) {
				it := item[T]{x, err}
				if tokens != nil {
					select {
					case <-tokens:
					default:
						full.Add(1)
						select {
						case <-tokens:
						case <-ctx.Done():
							return
						}
					}
					ch <- it // never blocks: a token was free
				} else {
					select {
					case ch <- it:
					default:
						full.Add(1)
						select {
						case ch <- it:
						case <-ctx.Done():
							return
						}
					}
				}
				if err != nil {
					return
				}
			}
		})

		mt := meter{s: &p.stage}
		defer mt.flush()
		var zero T
		starved, full0, starved0, n := 0, int64(0), 0, 0
		for {
			var it item[T]
			var ok bool
			select {
			case it, ok = <-ch:
			default:
				starved++
				select {
				case it, ok = <-ch:
				case <-ctx.Done():
					yield(zero, ctxErr(parent))
					return
				}
			}
			if !ok {
				// The producer also stops when ctx ends, without a word.
				if err := parent.Err(); err != nil {
					yield(zero, err)
				}
				return
			}
			if tokens != nil {
				tokens <- struct{}{} // never blocks: at most depth tokens exist
			}
			t1 := nanotime()
			mt.waitIn += t1 - last
			if it.err != nil {
				yield(zero, it.err)
				return
			}
			mt.items++
			if !yield(it.v, nil) {
				return
			}
			last = nanotime()
			mt.blockedOut += last - t1
			mt.tick()
			if n++; auto && n%16 == 0 {
				// Grow when the consumer waited on an empty queue although
				// the producer was at times ahead (found the queue full): a
				// deeper queue absorbs the jitter. When the producer is
				// simply slower, depth cannot help, and it stays.
				f := full.Load()
				if starved-starved0 >= 2 && f > full0 && depth < p.maxDepth {
					depth++
					tokens <- struct{}{}
					p.cur.Store(int64(depth))
				}
				starved0, full0 = starved, f
			}
		}
	}
}
