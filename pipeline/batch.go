package pipeline

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"unsafe"
)

// Remainder says what Batch does with a last, partial batch.
type Remainder int

const (
	// Keep yields the partial batch as it is (fewer rows).
	Keep Remainder = iota
	// Drop discards it (tf.data's drop_remainder=True).
	Drop
	// Pad fills it up to the batch size with zero rows; Valid says how many
	// rows are real.
	Pad
)

func (r Remainder) String() string {
	switch r {
	case Keep:
		return "keep"
	case Drop:
		return "drop"
	case Pad:
		return "pad"
	}
	return "invalid"
}

// DefaultBatchPool is the number of released batches a Batch stage keeps
// for reuse, unless set with PoolSize.
const DefaultBatchPool = 8

// Minibatch is one batch. It comes from a pool: call Release when done
// with it, after which neither it nor its slices may be used. A batch that
// is never released is simply garbage collected (and the pool allocates a
// new one).
type Minibatch[T any] struct {
	// Items holds the rows' elements; len(Items) is the number of rows
	// (the batch size, or fewer for a kept remainder). Padding rows hold
	// zero values.
	Items []T
	// Valid is the number of real rows: Items[:Valid]. Rows after it are
	// padding (Pad remainder, or a padding batch from Exactly).
	Valid int
	// Repeats is how many of the real rows repeat an element already
	// yielded this epoch, to fill the epoch up to its row count (see
	// BatchDataset.Fill). They are always the last rows: Items[Valid-
	// Repeats:Valid]. Weight them zero, or count them, to see each sample
	// exactly once per epoch.
	Repeats int
	// Index is the batch's position in the epoch (0-based).
	Index int
	// Data is the contiguous arena when the stage has one (see Arena):
	// RowBytes bytes per row, len(Items)*RowBytes in all, 8-byte aligned;
	// padding rows are zero. Nil without an arena.
	//
	// Under a context carrying an Allocator (WithAllocator), Data is the
	// allocator's memory, which Release gives back (see Detach).
	Data     []byte
	RowBytes int

	pool  chan *Minibatch[T]
	alloc Allocator // where Data came from, if not the stage's pool
	mem   int       // its id there
}

// Row returns row i of the arena.
func (b *Minibatch[T]) Row(i int) []byte { return b.Data[i*b.RowBytes : (i+1)*b.RowBytes] }

// Release returns the batch to its stage's pool. Calling it twice is
// harmless; using the batch afterwards is not.
func (b *Minibatch[T]) Release() {
	p := b.pool
	if p == nil {
		return
	}
	b.pool = nil
	if a := b.alloc; a != nil {
		b.alloc, b.Data = nil, nil
		a.Free(b.mem)
	}
	clear(b.Items) // drop references held by the elements
	b.Items = b.Items[:0]
	b.Valid, b.Index, b.Repeats = 0, 0, 0
	select {
	case p <- b:
	default: // pool full: let the GC have it
	}
}

// Detach takes the batch's Data away from it when it came from an
// Allocator and returns it with its id: Data becomes nil, Release no longer
// frees the memory, and the caller, who now owns it, gives it back with the
// allocator's Free(id) when done (a server does that when its consumer
// hands the slot back). ok is false, and nothing changes, when Data is the
// stage's own arena (or nil).
func (b *Minibatch[T]) Detach() (data []byte, id int, ok bool) {
	if b.alloc == nil {
		return nil, 0, false
	}
	data, id = b.Data, b.mem
	b.alloc, b.Data = nil, nil
	return data, id, true
}

// Float32s views an 8-byte aligned byte slice, such as Minibatch.Data or a
// row of it, as float32s (len(b)/4 of them), without copying.
func Float32s(b []byte) []float32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

// BatchDataset groups elements into Minibatches. See Batch.
type BatchDataset[T any] struct {
	stage
	in       Dataset[T]
	size     int
	rem      Remainder
	exactly  int
	rows     int // Fill's row count, or -1
	rowBytes int
	fill     func(row []byte, x T) error
	fillers  int // goroutines fill runs on (FillParallel); <= 1: the stage's own
	pool     chan *Minibatch[T]
	repeated func(T) bool
}

// Batch groups consecutive elements of d into batches of size rows, in
// order. The batches come from a pool bounded by PoolSize: with the
// consumer calling Release, the steady state allocates nothing. The last,
// partial batch is kept unless Remainder says otherwise. Its role is RoleCPU.
func Batch[T any](d Dataset[T], size int) *BatchDataset[T] {
	b := &BatchDataset[T]{in: d, size: size, exactly: -1, rows: -1, pool: make(chan *Minibatch[T], DefaultBatchPool)}
	b.init("batch", RoleCPU, d)
	if size < 1 {
		b.err = configError("batch", "size %d", size)
	}
	return b
}

// Named sets the stage name shown in Stats.
func (b *BatchDataset[T]) Named(name string) *BatchDataset[T] { b.name = name; return b }

// Remainder sets the policy for the last, partial batch.
func (b *BatchDataset[T]) Remainder(r Remainder) *BatchDataset[T] {
	if r < Keep || r > Pad {
		b.err = configError("batch", "remainder %d", r)
		return b
	}
	b.rem = r
	return b
}

// Exactly makes every epoch yield exactly k batches: batches after the k-th
// are not yielded (the input is stopped), and if the input runs out first
// the epoch ends with padding batches (full size, zero rows, Valid 0).
// With k from RankBatches or EqualBatches, every data-parallel rank takes
// the same number of steps, so none waits forever in a collective.
func (b *BatchDataset[T]) Exactly(k int) *BatchDataset[T] {
	if k < 0 {
		b.err = configError("batch", "exactly %d batches", k)
		return b
	}
	b.exactly = k
	return b
}

// ErrNothingToRepeat is the error of a Fill whose input had no element at
// all in an epoch (empty, or every element skipped upstream).
var ErrNothingToRepeat = errors.New("pipeline: nothing to serve")

// Fill makes every epoch yield exactly rows elements in its batches, the
// way PyTorch's DistributedSampler evens out data-parallel ranks: the input
// is stopped after rows elements, and if it ends first it is iterated
// again, with the same context (so the same epoch: a deterministic
// pipeline yields the same elements again), and its first elements fill
// the shortfall, as many passes as it takes. Minibatch.Repeats counts the
// rows of a batch that are such repeats. Every batch is full but the last,
// which holds rows mod size rows under Keep (is dropped under Drop, padded
// with zero rows under Pad); with the same rows on every rank, every rank
// yields the same batches' sizes and never a batch of zero rows. An input
// with no element to repeat ends the epoch with an error. Fill and Exactly
// exclude each other.
func (b *BatchDataset[T]) Fill(rows int) *BatchDataset[T] {
	if rows < 0 {
		b.err = configError("batch", "fill %d rows", rows)
		return b
	}
	b.rows = rows
	return b
}

// Repeated marks the elements that repeat an element already yielded
// this epoch (an input that pads itself, as DistributedSampler does): each
// counts in Minibatch.Repeats as Fill's repeats do. Such elements must
// come last in the epoch, so that the repeats stay a batch's last rows.
func (b *BatchDataset[T]) Repeated(f func(T) bool) *BatchDataset[T] {
	b.repeated = f
	return b
}

// Arena gives every batch a contiguous, 8-byte aligned buffer of rowBytes
// bytes per row (Minibatch.Data), which fill writes for each element as it
// joins the batch. The buffer is reused from batch to batch: fill must
// write every byte it means the consumer to read. An error from fill ends
// the epoch.
func (b *BatchDataset[T]) Arena(rowBytes int, fill func(row []byte, x T) error) *BatchDataset[T] {
	if rowBytes < 1 || fill == nil {
		b.err = configError("batch", "arena of %d bytes per row", rowBytes)
		return b
	}
	b.rowBytes, b.fill = rowBytes, fill
	return b
}

// FillParallel runs the arena's fill on n goroutines the stage owns for
// the epoch (n <= 1: on the stage's own, as each row joins). Rows are
// handed to them in runs as they join, so filling overlaps the arrival of
// the next rows, and a batch is yielded once all its rows are filled; the
// first error in row order ends the epoch, as with one goroutine. What is
// yielded is the same whatever n: each row is written by fill alone. A
// fill that costs as much as producing the element (normalising a decoded
// picture into float32 rows) no longer caps the pipeline at one core's
// rate of it, nor holds ParallelMap's autotune to that rate (its
// downstream time).
func (b *BatchDataset[T]) FillParallel(n int) *BatchDataset[T] {
	b.fillers = n
	return b
}

// PoolSize sets how many released batches the stage keeps for reuse (the
// bound on the memory it retains; default DefaultBatchPool). It needs at
// least the batches the consumer holds at once plus those queued
// downstream (Prefetch depth + 2 is a good value) to allocate nothing.
func (b *BatchDataset[T]) PoolSize(n int) *BatchDataset[T] {
	if n < 0 {
		b.err = configError("batch", "pool size %d", n)
		return b
	}
	b.pool = make(chan *Minibatch[T], n)
	return b
}

func (b *BatchDataset[T]) get(pool chan *Minibatch[T], index int, a Allocator) *Minibatch[T] {
	var mb *Minibatch[T]
	select {
	case mb = <-pool:
	default:
		mb = &Minibatch[T]{}
	}
	if cap(mb.Items) < b.size {
		mb.Items = make([]T, 0, b.size)
	}
	mb.Items = mb.Items[:0]
	if a != nil && b.rowBytes > 0 {
		mb.Data = nil // taken from a by memory when the first row joins
	} else if n := b.size * b.rowBytes; n > 0 {
		if cap(mb.Data) < n {
			words := make([]uint64, (n+7)/8)
			mb.Data = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), len(words)*8)
			adviseHuge(mb.Data)
		}
		mb.Data = mb.Data[:n]
	} else {
		mb.Data = nil
	}
	mb.RowBytes, mb.Valid, mb.Index, mb.Repeats, mb.pool = b.rowBytes, 0, index, 0, pool
	return mb
}

// memory gives mb its Data from a, if it has none yet.
func (b *BatchDataset[T]) memory(ctx context.Context, mb *Minibatch[T], a Allocator) error {
	if a == nil || b.rowBytes == 0 || mb.alloc != nil {
		return nil
	}
	n := b.size * b.rowBytes
	buf, id, err := a.Alloc(ctx, n)
	if err != nil {
		return err
	}
	mb.alloc, mb.mem = a, id
	if len(buf) < n {
		return fmt.Errorf("pipeline: %s: allocator gave %d bytes for a batch of %d", b.name, len(buf), n)
	}
	mb.Data = buf[:n]
	return nil
}

// Iter implements Dataset.
func (b *BatchDataset[T]) Iter(ctx context.Context) iter.Seq2[*Minibatch[T], error] {
	if b.err != nil {
		return failSeq[*Minibatch[T]](b.err)
	}
	if b.rows >= 0 && b.exactly >= 0 {
		return failSeq[*Minibatch[T]](configError("batch", "both Fill(%d) and Exactly(%d)", b.rows, b.exactly))
	}
	return func(yield func(*Minibatch[T], error) bool) {
		last := b.begin()
		defer b.end()
		mt := meter{s: &b.stage}
		defer mt.flush()
		pool := b.pool
		var alloc Allocator
		if b.fill != nil {
			alloc = AllocatorFrom(ctx)
		}
		if b.exactly == 0 || b.rows == 0 {
			return
		}
		index := 0
		// emit yields mb and reports whether the epoch goes on.
		emit := func(mb *Minibatch[T], t1 int64) bool {
			mb.Index = index
			index++
			mt.items++
			mt.bytes += int64(len(mb.Data))
			if !yield(mb, nil) {
				return false
			}
			last = nanotime()
			mt.blockedOut += last - t1
			mt.tick()
			return b.exactly < 0 || index < b.exactly
		}
		mb := b.get(pool, 0, alloc)
		defer func() {
			if mb != nil {
				mb.Release()
			}
		}()
		// fp fills rows on its goroutines (FillParallel); its deferred
		// close, run before mb's release, waits for every row handed out.
		var fp *fillPool[T]
		if b.fill != nil && b.fillers > 1 {
			fp = newFillPool(b.fill, b.fillers, max(1, b.size/(2*b.fillers)))
			defer fp.close()
		}
		// flush hands the rows not yet handed out to fp and waits for all
		// of mb's rows: the time waited is the stage's own work.
		flush := func(mb *Minibatch[T]) error {
			if fp == nil {
				return nil
			}
			t := nanotime()
			err := fp.wait(mb)
			mt.busy += nanotime() - t
			return err
		}
		total := 0 // rows taken, for Fill
	passes:
		for pass := 0; ; pass++ {
			n := 0
			for x, err := range b.in.Iter(ctx) {
				t1 := nanotime()
				mt.waitIn += t1 - last
				if err != nil {
					yield(nil, err)
					return
				}
				row := len(mb.Items)
				mb.Items = append(mb.Items, x)
				if pass > 0 || (b.repeated != nil && b.repeated(x)) {
					mb.Repeats++
				}
				if b.fill != nil {
					if row == 0 && alloc != nil {
						if err := b.memory(ctx, mb, alloc); err != nil {
							yield(nil, err)
							return
						}
						t := nanotime() // waiting for memory is waiting on the consumer
						mt.blockedOut += t - t1
						t1 = t
					}
					if fp != nil {
						fp.add(mb, row, len(mb.Items) == b.size)
					} else if err := b.fill(mb.Row(row), x); err != nil {
						yield(nil, err)
						return
					}
				}
				n++
				total++
				t2 := nanotime()
				mt.busy += t2 - t1
				last = t2
				if len(mb.Items) == b.size {
					if err := flush(mb); err != nil {
						yield(nil, err)
						return
					}
					mb.Valid = b.size
					out := mb
					mb = nil
					if !emit(out, t2) {
						return
					}
					mb = b.get(pool, index, alloc)
				}
				if total == b.rows {
					break passes
				}
			}
			if b.rows < 0 {
				break
			}
			if n == 0 {
				yield(nil, fmt.Errorf("%w: %s: cannot fill the epoch to %d rows: %d taken and the input has no element to repeat", ErrNothingToRepeat, b.name, b.rows, total))
				return
			}
		}
		if n := len(mb.Items); n > 0 {
			if err := flush(mb); err != nil {
				yield(nil, err)
				return
			}
			t := nanotime()
			switch b.rem {
			case Drop:
				mb.Release()
				mb = nil
			case Keep:
				mb.Valid = n
				mb.Data = mb.Data[:n*b.rowBytes]
			case Pad:
				if err := b.memory(ctx, mb, alloc); err != nil {
					yield(nil, err)
					return
				}
				mb.Valid = n
				var zero T
				for len(mb.Items) < b.size {
					mb.Items = append(mb.Items, zero)
				}
				clear(mb.Data[n*b.rowBytes:])
			}
			if mb != nil {
				out := mb
				mb = nil
				if !emit(out, t) {
					return
				}
			}
		}
		for b.exactly > index {
			if mb == nil {
				mb = b.get(pool, index, alloc)
			}
			if err := b.memory(ctx, mb, alloc); err != nil {
				yield(nil, err)
				return
			}
			var zero T
			for len(mb.Items) < b.size {
				mb.Items = append(mb.Items, zero)
			}
			clear(mb.Data)
			out := mb
			mb = nil
			if !emit(out, nanotime()) {
				return
			}
		}
	}
}

// RankBatches returns the number of batches every one of world data-parallel
// ranks should yield (with BatchDataset.Exactly) when n records are split
// over the ranks by record, as Shard and IndexedDataset.Shard do (rank i gets
// ceil((n-i)/world) records), and each rank batches its part by size with
// remainder policy r. With Drop it is the smallest rank's count, so no rank
// pads and the few records beyond it are dropped; with Keep or Pad it is the
// largest rank's count, and the ranks with one batch fewer end with a
// padding batch (Valid 0).
func RankBatches(n, world, size int, r Remainder) int {
	if n <= 0 || world < 1 || size < 1 {
		return 0
	}
	counts := make([]int, world)
	for i := range counts {
		counts[i] = shardLen(n, world, i)
	}
	return EqualBatches(counts, size, r)
}

// EqualBatches is RankBatches for explicit per-rank record counts (when
// ranks shard files of different sizes, say): the least (Drop) or the most
// (Keep, Pad) batches any rank makes of its records.
func EqualBatches(counts []int, size int, r Remainder) int {
	if len(counts) == 0 || size < 1 {
		return 0
	}
	k := -1
	for _, c := range counts {
		var nb int
		if r == Drop {
			nb = c / size
			if k < 0 || nb < k {
				k = nb
			}
		} else {
			nb = (c + size - 1) / size
			if nb > k {
				k = nb
			}
		}
	}
	return k
}

// fillPool runs a BatchDataset's fill on its goroutines (FillParallel):
// the rows of the batch being filled are handed out in runs of up to
// chunk rows, over a queue of 2·n runs, and wait joins them. One batch is
// filled at a time: the stage waits for a batch's rows before it yields
// it and takes the next.
type fillPool[T any] struct {
	fill  func(row []byte, x T) error
	jobs  chan fillJob[T]
	done  sync.WaitGroup // the goroutines
	rows  sync.WaitGroup // the runs handed out and not yet filled
	chunk int
	next  int // the batch's first row not yet handed out
	mu    sync.Mutex
	err   error // the error of the lowest row that failed
	errAt int
}

// fillJob is a run of rows: their elements and arena bytes, taken by the
// stage's goroutine when it hands the run out (the workers never read
// the Minibatch, whose Items the stage goes on appending to).
type fillJob[T any] struct {
	items    []T
	data     []byte
	rowBytes int
	lo       int // the run's first row, for the lowest row's error
}

func newFillPool[T any](fill func(row []byte, x T) error, n, chunk int) *fillPool[T] {
	p := &fillPool[T]{fill: fill, jobs: make(chan fillJob[T], 2*n), chunk: chunk}
	p.done.Add(n)
	for range n {
		go p.work() // owned by the pool: ends when close closes jobs
	}
	return p
}

func (p *fillPool[T]) work() {
	defer p.done.Done()
	for j := range p.jobs {
		for i, x := range j.items {
			if err := p.fill(j.data[i*j.rowBytes:(i+1)*j.rowBytes], x); err != nil {
				p.mu.Lock()
				if r := j.lo + i; p.err == nil || r < p.errAt {
					p.err, p.errAt = err, r
				}
				p.mu.Unlock()
				break
			}
		}
		p.rows.Done()
	}
}

// add notes that row of mb has joined; a run of chunk rows (or the rest,
// when last) is handed out.
func (p *fillPool[T]) add(mb *Minibatch[T], row int, last bool) {
	if row+1-p.next >= p.chunk || last {
		p.hand(mb, row+1)
	}
}

func (p *fillPool[T]) hand(mb *Minibatch[T], hi int) {
	if hi > p.next {
		p.rows.Add(1)
		rb := mb.RowBytes
		p.jobs <- fillJob[T]{items: mb.Items[p.next:hi], data: mb.Data[p.next*rb : hi*rb], rowBytes: rb, lo: p.next}
		p.next = hi
	}
}

// wait hands out mb's rows not yet handed out, waits until all of mb's
// rows are filled, and returns the error of the lowest row that failed.
// The pool is then ready for the next batch.
func (p *fillPool[T]) wait(mb *Minibatch[T]) error {
	p.hand(mb, len(mb.Items))
	p.rows.Wait()
	p.next = 0
	p.mu.Lock()
	err := p.err
	p.err = nil
	p.mu.Unlock()
	return err
}

// close waits for the rows handed out, then ends the goroutines.
func (p *fillPool[T]) close() {
	p.rows.Wait()
	close(p.jobs)
	p.done.Wait()
}
