// Package pipeline builds input pipelines for training: generic,
// re-iterable datasets and the stages that shard, shuffle, interleave, map,
// batch and prefetch them, with autotuning and per-stage statistics. It
// follows tf.data's semantics where tf.data defines them. It knows nothing
// of images or models: elements are any Go type.
//
// # Datasets and epochs
//
// A Dataset[T] has one method, Iter(ctx) iter.Seq2[T, error]. Each call
// runs one epoch, the one ctx names (WithEpoch; epoch 0 if it names none);
// ranging over the sequence runs it:
//
//	for e := range epochs {
//		for x, err := range d.Iter(pipeline.WithEpoch(ctx, int64(e))) {
//			if err != nil {
//				return err // the epoch's first error; the sequence ends here
//			}
//			use(x)
//		}
//	}
//
// An epoch yields elements with a nil error and ends either cleanly or
// after yielding exactly one non-nil error (with T's zero value). When ctx
// is cancelled, the epoch ends promptly and yields ctx.Err(). A stage built
// with invalid parameters yields an error wrapping ErrConfig.
//
// The epoch is an input, carried with the iteration, never a count a stage
// keeps: a shuffling stage running epoch e (EpochFrom(ctx)) shuffles with a
// generator seeded by (seed, e), and a map function that randomises reads
// the epoch the same way. So every epoch has a new order, and a pipeline
// built fresh and asked for epoch e yields exactly what epoch e of a
// long-running one yields (resuming, changing resolution, a client's
// set_epoch). Ranging twice over the same epoch repeats it. Stages without
// a seed yield the same order every epoch. Repeat runs its repetitions as
// distinct epochs of its input (RepeatEpoch).
//
// # Stages
//
// Sources:
//   - FromSlice(s): the elements of s in order.
//   - FromFunc(f): f(ctx, 0), f(ctx, 1), … until f returns io.EOF.
//   - Files(names...) and Glob(patterns...): file names (Glob sorts and
//     deduplicates, so every rank lists the same files). FileList.Shard(n, i)
//     uses tf.data's AUTO policy: with at least n files, rank i keeps files
//     i, i+n, …; with fewer, every rank keeps every file and the Interleave
//     reading the list keeps records i, i+n, … of its output instead.
//     FileList.Shuffle(seed) shuffles the rank's files each epoch (always
//     after sharding).
//   - FromIndexed(src) and Indices(n): a random-access collection in index
//     order or, with Shuffle(seed), in a new random permutation each epoch
//     (a global shuffle); Shard(n, i) takes positions i, i+n, … of that
//     order, so all ranks, using the same seed, split one permutation.
//
// Transformations, each preserving order unless it says otherwise:
//   - Shard(d, n, i): elements i, i+n, … (record-level sharding).
//   - Interleave(d, open, cycle, block, parallel): tf.data's interleave
//     order exactly. Slots 0 … cycle-1 are visited in turn; at a slot, up to
//     block consecutive elements of its open input are taken; an exhausted
//     input frees its slot (the cycle moves on), and an empty slot is filled
//     with the next input element's dataset when the cycle reaches it. An
//     empty input takes its turn like any other. With parallel >= 2 each open
//     input is read ahead by a goroutine into a queue of block elements, at
//     most parallel reading at once; the order does not change.
//   - Shuffle(d, size, seed): tf.data's buffer shuffle: fill a buffer with
//     size elements, then repeatedly yield a uniformly chosen one and replace
//     it with the next input element; drain randomly at the end. Output k is
//     always one of inputs 0 … k+size-1.
//   - Map(d, f): f on each element in the consumer's goroutine.
//     ParallelMap(d, n, f) runs f on n workers (Auto: tuned); results come
//     out in input order, so an error from f on element k is yielded after
//     exactly the results of elements 0 … k-1. With Unordered, results
//     come out as they complete.
//   - Batch(d, size): consecutive elements into *Minibatch values of size
//     rows; the last partial batch is kept, dropped or padded with zero rows
//     (Remainder: Keep, Drop, Pad; Valid counts the real rows). Arena gives
//     each batch one contiguous, 8-byte aligned []byte written row by row by
//     a fill function. Fill(rows) makes every epoch exactly rows elements
//     long, stopping the input early or, when it runs short, iterating the
//     same epoch again and repeating its first elements (Repeats counts
//     them), as PyTorch's DistributedSampler pads: with the same rows on
//     every data-parallel rank, every rank yields the same batches' sizes,
//     so no rank waits forever in a collective, and none gets an empty
//     batch. Exactly(k) makes every epoch exactly k batches long (stopping
//     early, or ending with padding batches of Valid 0);
//     RankBatches/EqualBatches compute such a k.
//   - Prefetch(d, depth): runs d in its own goroutine up to depth elements
//     ahead (Auto: tuned).
//   - Repeat(d, count): count epochs of d (Forever: no end) as one; each
//     repetition re-iterates d with its own epoch (RepeatEpoch) and so
//     reshuffles. An empty repetition ends it.
//   - Take(d, n), Skip(d, n): the first n elements; all but the first n.
//
// Setters are chainable and return the stage: ParallelMap(d, Auto,
// decode).Named("decode").Budget(4). Call them while building, before
// ranging.
//
// # Goroutines: who owns what
//
// Synchronous stages (sources, Shard, Shuffle, Map, Batch, Take, Skip,
// Repeat, and Interleave with parallel <= 1) run in the goroutine that
// ranges over the last stage and start no goroutine. Asynchronous stages
// start goroutines when their sequence is ranged and own them:
//   - ParallelMap: one dispatcher, which ranges over the upstream stages
//     (so they run in it), and up to Budget workers;
//   - Prefetch: one producer, which ranges over the upstream stages;
//   - Interleave with parallel >= 2: one reader per open input.
//
// Every one of them selects on the epoch's context, and the stage's
// sequence cancels that context and waits for all of them (sync.WaitGroup)
// before it returns, on every path: end of input, error, the consumer's
// break, a panic in the loop body. So when a range statement over any
// pipeline has finished, no goroutine of it is left. A user function (f,
// open, fill, a source's function) that blocks must honour its ctx, or the
// join waits for it.
//
// # Memory bounds
//
// Every queue is a bounded channel, and a full queue is the backpressure:
//   - ParallelMap: at most 2·p elements in flight (p workers; 2·Budget with
//     Auto), counting those waiting to be consumed; the jobs queue has
//     capacity p.
//   - Prefetch: depth queued (MaxDepth with Auto) plus one in the producer.
//   - Interleave: cycle open inputs; with parallel >= 2, block queued
//     elements per open input.
//   - Shuffle: size elements. FromIndexed with Shuffle: one permutation of
//     Len() ints per epoch.
//   - Batch with an Allocator in the context (WithAllocator): the batches'
//     memory is the allocator's (a server's shared-memory slots), and its
//     bound is the allocator's; Release gives it back, Detach keeps it.
//   - Batch with FillParallel(n): n fill goroutines for the epoch, a queue
//     of 2·n runs of rows, and the rows of the one batch being filled.
//   - Batch: one batch being filled; released batches are kept in a pool of
//     PoolSize (default DefaultBatchPool) for reuse, and beyond that left to
//     the garbage collector. With the consumer releasing each batch, the
//     steady state of a ParallelMap → Batch → Prefetch pipeline allocates
//     nothing (per-epoch setup aside); BenchmarkPipeline and
//     TestSteadyStateAllocs check it.
//
// A Minibatch is owned by the consumer from the moment it is yielded until
// it calls Release; after that neither it nor its slices may be touched.
//
// # Autotune
//
// With ParallelMap(d, Auto, f) the stage starts at one worker (or where the
// previous epoch left it) and, every max(8, 2p) elements, estimates from
// the last window: s, the time f took per element on one worker; c, the
// time downstream took per element (the time spent in the yield: the
// consumer's loop body and the stages after this one); u, the time
// upstream took per element. It wants ceil(1.25·s / max(c, u)) workers,
// clamped to [1, Budget] (Budget defaults to GOMAXPROCS): enough to keep up
// with the slower neighbour and no more, within the CPU budget. Growth is
// at most doubling per window, shrinking one worker per window; parked
// workers are kept for the epoch, so tuning allocates nothing.
//
// With Prefetch(d, Auto) the depth starts at 1 and grows by one, up to
// MaxDepth, after a window of 16 elements in which the consumer found the
// queue empty at least twice while the producer also found it full at least
// once: the producer is at times ahead, and a deeper queue absorbs the
// jitter. A producer that is simply slower does not deepen the queue.
//
// Interleave(…, Auto) reads with min(cycle, GOMAXPROCS) goroutines.
//
// # Statistics and the verdict
//
// Every stage counts the elements it yields, their bytes (with a size
// function: Bytes), its busy time (its own work: reading, f, filling
// batches; summed over workers), the time its output side waited for its
// input, the time it was blocked handing an element downstream (time in the
// yield), and its wall time and parallelism. Stats on the last stage
// returns a JSON-ready snapshot of every stage upstream of it, upstream
// first. Names default to the stage kind and are set with Named.
//
// The verdict compares the busy fraction of every working stage (busy time
// over wall time × parallelism) with the consumer's share of the last
// stage's wall time (its blocked-on-output time) and names the largest:
// BottleneckIO for a RoleIO stage (sources, Interleave, or a Map marked
// Role(RoleIO)), BottleneckDecode for a RoleCPU stage (Map, ParallelMap,
// Batch, Shuffle), BottleneckConsumer when the consumer's loop body takes
// most of the time, with the runner-up and the ratio between them.
// CPU work counts as CPU wherever it happens: a RoleIO stage whose owner
// reports its CPU time (the CPU option of Map and Interleave: the thread
// CPU time around each call, which only the caller can measure, its
// goroutine being locked to its thread) and whose busy time is at least
// half CPU is BottleneckDecode, the detail saying how much of it was on
// the CPU; a reader that parses, converts or checksums is limited by the
// processor, not by the storage. So is one whose other time was spent
// waiting for a processor: when the process's CPU time and its threads'
// run-queue waits fill its GOMAXPROCS processors (Stats.CPUFraction at
// 0.9 or more, read on Linux), a reading stage that reports its CPU is
// BottleneckDecode too.
// Stages of RoleNone (Prefetch, Shard, Take, Skip, Repeat, Indices) are not
// candidates.
//
// # Concurrency
//
// Building a pipeline is not safe for concurrent use; Iter and Stats are.
// Several epochs of one dataset may run at once (each has its own state);
// their counters are added together.
package pipeline
