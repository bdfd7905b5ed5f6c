package pipeline

import (
	"context"
	"iter"
)

// Indexed is a random-access collection: a dataset with an index, such as an
// ImageFolder listing or a TFRecord shard with its .idx file.
type Indexed[T any] interface {
	Len() int
	// Get returns element i, 0 <= i < Len(). It need not be safe for
	// concurrent use; IndexedDataset calls it from one goroutine.
	Get(i int) (T, error)
}

// IndexedDataset yields the elements of an Indexed collection in index order
// or, with Shuffle, in a fresh random permutation every epoch (a global
// shuffle, unlike the bounded buffer of Shuffle). See FromIndexed.
type IndexedDataset[T any] struct {
	stage
	src     Indexed[T]
	shuffle bool
	seed    uint64
	shardN  int
	shardI  int
	size    func(T) int
}

// FromIndexed returns a source over src. For parallel loading, range over
// Indices(src.Len()) (with the same Shuffle and Shard) and load with
// ParallelMap.
func FromIndexed[T any](src Indexed[T]) *IndexedDataset[T] {
	d := &IndexedDataset[T]{src: src, shardN: 1}
	d.init("indexed", RoleIO)
	return d
}

type rangeIndex int

func (r rangeIndex) Len() int               { return int(r) }
func (r rangeIndex) Get(i int) (int, error) { return i, nil }

// Indices returns the dataset of the indices 0 … n-1, to shuffle and shard
// them globally and then load them with ParallelMap.
func Indices(n int) *IndexedDataset[int] {
	d := FromIndexed[int](rangeIndex(n))
	d.kind, d.name, d.role = "indices", "indices", RoleNone
	return d
}

// Named sets the stage name shown in Stats.
func (d *IndexedDataset[T]) Named(name string) *IndexedDataset[T] { d.name = name; return d }

// Bytes sets the size function summed into Stats' Bytes.
func (d *IndexedDataset[T]) Bytes(size func(T) int) *IndexedDataset[T] { d.size = size; return d }

// Shuffle visits the indices in a random permutation drawn each epoch from
// seed and the epoch the context names (EpochFrom): a Permutation, computed
// index by index, so the order costs no memory per element. Every rank must use the same seed: the ranks
// shard the same permutation (as PyTorch's DistributedSampler does).
func (d *IndexedDataset[T]) Shuffle(seed uint64) *IndexedDataset[T] {
	d.shuffle, d.seed = true, seed
	return d
}

// Shard keeps positions i, i+n, i+2n, … of each epoch's (permuted) order:
// the ranks' parts are disjoint, cover everything, and differ in size by at
// most one.
func (d *IndexedDataset[T]) Shard(n, i int) *IndexedDataset[T] {
	if n < 1 || i < 0 || i >= n {
		d.err = configError(d.kind, "shard %d of %d", i, n)
		return d
	}
	d.shardN, d.shardI = n, i
	return d
}

// Len returns the number of elements each epoch yields.
func (d *IndexedDataset[T]) Len() int { return shardLen(d.src.Len(), d.shardN, d.shardI) }

// shardLen is the size of part i of n parts of total elements taken by stride.
func shardLen(total, n, i int) int {
	if i >= total {
		return 0
	}
	return (total - i + n - 1) / n
}

// Iter implements Dataset.
func (d *IndexedDataset[T]) Iter(ctx context.Context) iter.Seq2[T, error] {
	if d.err != nil {
		return failSeq[T](d.err)
	}
	return func(yield func(T, error) bool) {
		last := d.begin()
		epoch := EpochFrom(ctx)
		defer d.end()
		m := meter{s: &d.stage}
		defer m.flush()
		n := d.src.Len()
		var perm *Permutation // computed per position: no memory per element
		if d.shuffle {
			perm = NewPermutation(n, d.seed, epoch, saltIndexed)
		}
		done := ctx.Done()
		var zero T
		for pos := d.shardI; pos < n; pos += d.shardN {
			select {
			case <-done:
				yield(zero, ctxErr(ctx))
				return
			default:
			}
			idx := pos
			if perm != nil {
				idx = perm.At(pos)
			}
			x, err := d.src.Get(idx)
			t1 := nanotime()
			m.busy += t1 - last
			if err != nil {
				yield(zero, err)
				return
			}
			var ok bool
			if last, ok = emit(&m, yield, x, d.size, t1); !ok {
				return
			}
		}
	}
}
