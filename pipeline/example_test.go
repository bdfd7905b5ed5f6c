package pipeline_test

import (
	"context"
	"fmt"
	"log"

	"github.com/faster-training/faster/pipeline"
)

// A small input pipeline: the indices of a dataset shuffled anew each
// epoch, mapped on two workers (results keep their order), batched by
// four with the remainder kept, and prefetched. The epoch is an argument:
// asking a fresh pipeline for epoch 1 yields what a long-running one
// yields in its second epoch.
func Example() {
	square := func(_ context.Context, i int) (int, error) { return i * i, nil }
	d := pipeline.Prefetch(
		pipeline.Batch(
			pipeline.ParallelMap(pipeline.Shuffle(pipeline.Indices(10), 10, 42), 2, square),
			4),
		2)

	for epoch := range 2 {
		ctx := pipeline.WithEpoch(context.Background(), int64(epoch))
		for b, err := range d.Iter(ctx) {
			if err != nil {
				log.Fatal(err)
			}
			fmt.Println("epoch", epoch, "batch", b.Index, b.Items[:b.Valid])
			b.Release()
		}
	}
	// Output:
	// epoch 0 batch 0 [36 64 1 16]
	// epoch 0 batch 1 [81 49 9 0]
	// epoch 0 batch 2 [4 25]
	// epoch 1 batch 0 [36 1 49 64]
	// epoch 1 batch 1 [25 16 9 4]
	// epoch 1 batch 2 [81 0]
}
