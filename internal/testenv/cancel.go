package testenv

import (
	"context"
	"iter"
)

// CancelAfter runs the iteration seq makes from a context of its own,
// giving each item to release and cancelling the context once n items
// have come, and returns the error the iteration ended with (nil when it
// ended without one: fewer than n items left, or a stage that stops
// quietly). A stage's cancellation test asserts errors.Is(err,
// context.Canceled).
func CancelAfter[T any](seq func(context.Context) iter.Seq2[T, error], n int, release func(T)) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	i := 0
	for v, err := range seq(ctx) {
		if err != nil {
			return err
		}
		release(v)
		if i++; i == n {
			cancel()
		}
	}
	return nil
}
