package pipeline

import (
	"context"
	"errors"
	"fmt"
	"iter"
)

// Dataset is a re-iterable sequence of elements. Each call of Iter starts one
// epoch, the one ctx names (see WithEpoch); ranging over the returned
// sequence runs it. An error is yielded at
// most once, as the last pair of the epoch (with T's zero value); the
// sequence stops after it even if the loop body continues. Breaking out of
// the loop, or returning from the body, stops the epoch: every goroutine the
// epoch started has exited before the range statement completes.
//
// Iter itself does no work; the epoch begins when the sequence is ranged.
// Implementations must honour ctx: once it is done, the sequence must end
// promptly, yielding ctx.Err().
type Dataset[T any] interface {
	Iter(ctx context.Context) iter.Seq2[T, error]
}

// Auto asks a stage to choose a parameter itself and keep adjusting it while
// it runs (see Autotune in the package documentation). It is accepted by
// ParallelMap's parallelism, Prefetch's depth and Interleave's parallelism.
const Auto = -1

// Forever is the Repeat count that repeats without end.
const Forever = -1

// ErrConfig marks a stage configured with invalid parameters (a shard index
// out of range, a batch size below one, …). Iter yields it, wrapped with the
// stage and the reason, as the only element of the epoch.
var ErrConfig = errors.New("pipeline: invalid configuration")

func configError(kind, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrConfig, kind, fmt.Sprintf(format, args...))
}

// Collect runs one epoch of d and returns its elements. On error it returns
// the elements before the error and the error.
func Collect[T any](ctx context.Context, d Dataset[T]) ([]T, error) {
	var out []T
	for x, err := range d.Iter(ctx) {
		if err != nil {
			return out, err
		}
		out = append(out, x)
	}
	return out, nil
}

// failSeq is the sequence of an epoch that fails before it starts.
func failSeq[T any](err error) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		yield(zero, err)
	}
}

// item carries one element or error across a channel.
type item[T any] struct {
	v   T
	err error
}

// ctxErr is the error a stage yields when ctx ends the epoch.
func ctxErr(ctx context.Context) error { return ctx.Err() }

// Every stage is a Dataset.
var (
	_ Dataset[int]             = (*SliceDataset[int])(nil)
	_ Dataset[int]             = (*FuncDataset[int])(nil)
	_ Dataset[string]          = (*FileList)(nil)
	_ Dataset[int]             = (*IndexedDataset[int])(nil)
	_ Dataset[int]             = (*ShardDataset[int])(nil)
	_ Dataset[int]             = (*TakeDataset[int])(nil)
	_ Dataset[int]             = (*SkipDataset[int])(nil)
	_ Dataset[int]             = (*RepeatDataset[int])(nil)
	_ Dataset[int]             = (*ShuffleDataset[int])(nil)
	_ Dataset[int]             = (*MapDataset[int, int])(nil)
	_ Dataset[int]             = (*PrefetchDataset[int])(nil)
	_ Dataset[int]             = (*InterleaveDataset[int, int])(nil)
	_ Dataset[*Minibatch[int]] = (*BatchDataset[int])(nil)
)
