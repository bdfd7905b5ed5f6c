package pipeline

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// An ordered ParallelMap surfaces the error of element k after exactly the
// results of elements 0 … k-1, however the workers race.
func TestParallelMapErrorPosition(t *testing.T) {
	base := leakBase(t)
	for _, p := range []int{1, 2, 4, Auto} {
		for trial := range 20 {
			f := func(_ context.Context, x int) (int, error) {
				if x == 13 {
					return 0, fmt.Errorf("element %d: %w", x, errBoom)
				}
				if x%3 == trial%3 {
					time.Sleep(50 * time.Microsecond)
				}
				return x, nil
			}
			got, err := Collect(context.Background(), ParallelMap(FromSlice(ints(100)), p, f).Budget(4))
			if !errors.Is(err, errBoom) || !equal(got, ints(13)) {
				t.Fatalf("p %d: got %v, %v", p, got, err)
			}
		}
	}
	checkNoLeak(t, base)
}

func TestParallelMapUnorderedError(t *testing.T) {
	base := leakBase(t)
	f := func(_ context.Context, x int) (int, error) {
		if x == 13 {
			return 0, errBoom
		}
		return x, nil
	}
	_, err := Collect(context.Background(), ParallelMap(FromSlice(ints(100)), 3, f).Unordered())
	if !errors.Is(err, errBoom) {
		t.Fatalf("error %v", err)
	}
	checkNoLeak(t, base)
}

// Unordered lets fast elements pass a slow one.
func TestParallelMapUnorderedOvertakes(t *testing.T) {
	release := make(chan struct{})
	f := func(_ context.Context, x int) (int, error) {
		if x == 0 {
			<-release
		}
		return x, nil
	}
	n := 0
	for x, err := range ParallelMap(FromSlice(ints(10)), 2, f).Unordered().Iter(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 && x == 0 {
			t.Fatal("the blocked element came first")
		}
		if n++; n == 3 {
			close(release)
		}
	}
	if n != 10 {
		t.Fatalf("got %d elements", n)
	}
}

// A map function that honours ctx is interrupted by the consumer's break.
func TestParallelMapBreakInterruptsWorkers(t *testing.T) {
	base := leakBase(t)
	f := func(ctx context.Context, x int) (int, error) {
		if x > 0 {
			<-ctx.Done()
			return 0, ctx.Err()
		}
		return x, nil
	}
	for x, err := range ParallelMap(FromSlice(ints(10)), 4, f).Iter(context.Background()) {
		if err != nil || x != 0 {
			t.Fatal(x, err)
		}
		break
	}
	checkNoLeak(t, base)
}

// Deadline errors pass through as such.
func TestDeadline(t *testing.T) {
	base := leakBase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	slow := func(ctx context.Context, x int) (int, error) {
		time.Sleep(time.Millisecond)
		return x, nil
	}
	_, err := Collect(ctx, Prefetch(ParallelMap(endlessSrc(), 2, slow), 2))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v", err)
	}
	checkNoLeak(t, base)
}

// A panic in the loop body still joins the stage's goroutines.
func TestPanicInBodyJoins(t *testing.T) {
	base := leakBase(t)
	func() {
		defer func() { recover() }()
		for range Prefetch(ParallelMap(endlessSrc(), 3, double), 2).Iter(context.Background()) {
			panic("body")
		}
	}()
	checkNoLeak(t, base)
}
