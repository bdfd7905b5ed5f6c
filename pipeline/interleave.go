package pipeline

import (
	"context"
	"iter"
	"runtime"
	"sync"
	"time"
)

// InterleaveDataset reads several inner datasets at once, in tf.data's
// interleave order. See Interleave.
type InterleaveDataset[T, U any] struct {
	stage
	in       Dataset[T]
	open     func(T) Dataset[U]
	cycle    int
	block    int
	parallel int
	size     func(U) int
}

// Interleave maps each element of d to a dataset with open (a file name to
// its records, say) and merges those datasets with the exact element order
// of tf.data's Dataset.interleave(open, cycle_length=cycle,
// block_length=block): cycle inputs are open at a time; the cycle visits
// them in turn and takes up to block consecutive elements from each; when
// an input is exhausted its slot is left, and the next input element opens
// in that slot the next time the cycle reaches it. With parallel >= 2 (or
// Auto: min(cycle, GOMAXPROCS)) each open input is read ahead by its own
// goroutine, buffering up to block elements, with at most parallel of them
// reading at once; the order is the same as without parallelism (tf.data's
// deterministic=True). Its role is RoleIO.
//
// If d is, or is read through single-input stages from, a FileList sharded
// over more ranks than it has files, Interleave applies that shard to its
// output records (see FileList.Shard).
func Interleave[T, U any](d Dataset[T], open func(T) Dataset[U], cycle, block, parallel int) *InterleaveDataset[T, U] {
	s := &InterleaveDataset[T, U]{in: d, open: open, cycle: cycle, block: block, parallel: parallel}
	s.init("interleave", RoleIO, d)
	switch {
	case cycle < 1:
		s.err = configError("interleave", "cycle length %d", cycle)
	case block < 1:
		s.err = configError("interleave", "block length %d", block)
	case parallel < 0 && parallel != Auto:
		s.err = configError("interleave", "parallelism %d", parallel)
	}
	return s
}

// Named sets the stage name shown in Stats.
func (s *InterleaveDataset[T, U]) Named(name string) *InterleaveDataset[T, U] {
	s.name = name
	return s
}

// Bytes sets the size function summed into Stats' Bytes.
func (s *InterleaveDataset[T, U]) Bytes(size func(U) int) *InterleaveDataset[T, U] {
	s.size = size
	return s
}

// CPU sets a function returning the CPU time the inner datasets' reads
// have spent so far, as their owner measures it; see StageStats.CPU.
func (s *InterleaveDataset[T, U]) CPU(total func() time.Duration) *InterleaveDataset[T, U] {
	s.cpu = total
	return s
}

// recordShard finds a pending record shard on the single-input chain above.
func (s *InterleaveDataset[T, U]) recordShard() (n, i int) {
	for st := s.up; len(st) == 1; st = st[0].up {
		if st[0].recordShard != nil {
			if n, i, ok := st[0].recordShard(); ok {
				return n, i
			}
			break
		}
		if st[0].kind == "interleave" {
			break
		}
	}
	return 1, 0
}

// islot is one open input of the cycle.
type islot[U any] struct {
	next func() (U, error, bool)
	stop func()
}

// Iter implements Dataset.
func (s *InterleaveDataset[T, U]) Iter(parent context.Context) iter.Seq2[U, error] {
	if s.err != nil {
		return failSeq[U](s.err)
	}
	return func(yield func(U, error) bool) {
		s.begin()
		defer s.end()
		ctx, cancel := context.WithCancel(parent)
		var wg sync.WaitGroup
		slots := make([]*islot[U], s.cycle)
		defer func() {
			cancel()
			for _, sl := range slots {
				if sl != nil {
					sl.stop()
				}
			}
			wg.Wait()
		}()
		mt := meter{s: &s.stage}
		defer mt.flush()

		par := s.parallel
		if par == Auto {
			par = min(s.cycle, runtime.GOMAXPROCS(0))
		}
		var sem chan struct{}
		if par >= 2 {
			sem = make(chan struct{}, par)
			s.setPar(min(par, s.cycle))
		}
		openSlot := func(x T) *islot[U] {
			ds := s.open(x)
			if sem == nil {
				next, stop := iter.Pull2(ds.Iter(ctx))
				return &islot[U]{next: next, stop: stop}
			}
			return s.reader(ctx, &wg, ds, sem)
		}

		shardN, shardI := s.recordShard()
		inNext, inStop := iter.Pull2(s.in.Iter(ctx))
		defer inStop()
		var zero U
		numOpen, endOfInput, idx, blockIdx, pos := 0, false, 0, 0, 0
		advance := func() {
			blockIdx = 0
			idx = (idx + 1) % s.cycle
		}
		// The loop follows tf.data's InterleaveDatasetOp::GetNext.
		for !endOfInput || numOpen > 0 {
			sl := slots[idx]
			if sl == nil {
				if endOfInput {
					advance()
					continue
				}
				x, err, ok := inNext()
				if !ok {
					endOfInput = true
					advance()
					continue
				}
				if err != nil {
					yield(zero, err)
					return
				}
				slots[idx] = openSlot(x)
				numOpen++
				continue
			}
			t0 := nanotime()
			v, err, ok := sl.next()
			t1 := nanotime()
			if sem == nil {
				mt.busy += t1 - t0
			} else {
				mt.waitIn += t1 - t0
			}
			if !ok {
				sl.stop()
				slots[idx] = nil
				numOpen--
				advance()
				continue
			}
			if err != nil {
				yield(zero, err)
				return
			}
			if blockIdx++; blockIdx == s.block {
				advance()
			}
			keep := pos%shardN == shardI
			pos++
			if !keep {
				continue
			}
			if s.size != nil {
				mt.bytes += int64(s.size(v))
			}
			mt.items++
			if !yield(v, nil) {
				return
			}
			mt.blockedOut += nanotime() - t1
			mt.tick()
		}
	}
}

// reader starts a goroutine that reads ds ahead into a channel of capacity
// block, holding a sem token only while it produces an element.
func (s *InterleaveDataset[T, U]) reader(ctx context.Context, wg *sync.WaitGroup, ds Dataset[U], sem chan struct{}) *islot[U] {
	ch := make(chan item[U], s.block)
	wg.Go(func() {
		defer close(ch)
		next, stop := iter.Pull2(ds.Iter(ctx))
		defer stop()
		for {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			t := nanotime()
			v, err, ok := next()
			s.busy.Add(nanotime() - t)
			<-sem
			if !ok {
				return
			}
			select {
			case ch <- item[U]{v, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	})
	return &islot[U]{
		next: func() (U, error, bool) {
			select {
			case it, ok := <-ch:
				if !ok && ctx.Err() != nil {
					// The reader stopped early: not the end of its input.
					return it.v, ctxErr(ctx), true
				}
				return it.v, it.err, ok
			case <-ctx.Done():
				var zero U
				return zero, ctxErr(ctx), true
			}
		},
		stop: func() {},
	}
}
