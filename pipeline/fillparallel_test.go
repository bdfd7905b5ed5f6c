package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
)

// collectArenas runs d and returns each batch's arena bytes and rows.
func collectArenas(t *testing.T, ctx context.Context, d Dataset[*Minibatch[int]]) ([][]byte, [][]int, error) {
	t.Helper()
	var data [][]byte
	var items [][]int
	for b, err := range d.Iter(ctx) {
		if err != nil {
			return data, items, err
		}
		data = append(data, bytes.Clone(b.Data))
		items = append(items, append([]int(nil), b.Items...))
		b.Release()
	}
	return data, items, nil
}

// TestBatchFillParallel: with FillParallel(n) the batches are the same,
// byte for byte, as with the stage's own goroutine, under every remainder
// policy, Fill with repeats, and batch sizes below, at and above n; the
// fills run on several goroutines at once (a fill blocks until another
// fill has started, which one goroutine could never do).
func TestBatchFillParallel(t *testing.T) {
	for _, rem := range []Remainder{Keep, Drop, Pad} {
		for _, size := range []int{1, 3, 8, 64} {
			for _, n := range []int{2, 4, 16} {
				mk := func(par int) Dataset[*Minibatch[int]] {
					b := Batch(FromSlice(ints(203)), size).Arena(5, fillAllocRow).Remainder(rem).FillParallel(par)
					if size == 8 {
						b = b.Fill(240) // repeats the first 37 rows
					}
					return b
				}
				want, wantItems, err := collectArenas(t, context.Background(), mk(1))
				if err != nil {
					t.Fatal(err)
				}
				got, gotItems, err := collectArenas(t, context.Background(), mk(n))
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(gotItems) != fmt.Sprint(wantItems) || len(got) != len(want) {
					t.Fatalf("%v size %d n %d: rows %v, want %v", rem, size, n, gotItems, wantItems)
				}
				for i := range want {
					if !bytes.Equal(got[i], want[i]) {
						t.Fatalf("%v size %d n %d: batch %d's arena differs", rem, size, n, i)
					}
				}
			}
		}
	}
	// Two fills at once: each waits (up to the test's end) for a second to
	// have begun; on one goroutine the first would wait forever.
	var started atomic.Int32
	both := make(chan struct{})
	var once sync.Once
	fill := func(row []byte, x int) error {
		if started.Add(1) == 2 {
			once.Do(func() { close(both) })
		}
		<-both
		return fillAllocRow(row, x)
	}
	if _, err := Collect(context.Background(), Batch(FromSlice(ints(8)), 4).Arena(5, fill).FillParallel(4)); err != nil {
		t.Fatal(err)
	}
}

// TestBatchFillParallelError: the error of the lowest failing row ends the
// epoch, as on one goroutine, whichever fill fails first in time; no
// batch holding an unfilled row is yielded; nothing leaks.
func TestBatchFillParallelError(t *testing.T) {
	base := leakBase(t)
	errs := map[int]error{10: errors.New("row 10"), 13: errors.New("row 13")}
	gate := make(chan struct{})
	fill := func(row []byte, x int) error {
		if x == 10 {
			<-gate // fails after row 13 has failed
		}
		if err := errs[x]; err != nil {
			if x == 13 {
				close(gate)
			}
			return err
		}
		return fillAllocRow(row, x)
	}
	var yielded []int
	var err error
	for b, e := range Batch(FromSlice(ints(40)), 8).Arena(5, fill).FillParallel(4).Iter(context.Background()) {
		if e != nil {
			err = e
			break
		}
		yielded = append(yielded, b.Items...)
		b.Release()
	}
	if err != errs[10] {
		t.Fatalf("error %v, want row 10's (the lowest row, failing last)", err)
	}
	if len(yielded) != 8 {
		t.Fatalf("yielded rows %v: want the first batch only", yielded)
	}
	checkNoLeak(t, base)
}

// TestBatchFillParallelBreakAndCancel: an early break and a cancelled
// context leave no fill goroutine behind, under -race, and the batch being
// filled is given back to the allocator.
func TestBatchFillParallelBreakAndCancel(t *testing.T) {
	base := leakBase(t)
	a := newRingAlloc(4, 35)
	ctx := WithAllocator(context.Background(), a)
	n := 0
	for b, err := range Batch(FromSlice(ints(300)), 7).Arena(5, fillAllocRow).FillParallel(3).Iter(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		b.Release()
		if n++; n == 2 {
			break
		}
	}
	if k := a.outstanding(); k != 0 {
		t.Fatalf("%d buffers out after the break", k)
	}
	checkNoLeak(t, base)

	err := testenv.CancelAfter(Prefetch(Batch(FromSlice(ints(3000)), 5).Arena(5, fillAllocRow).FillParallel(4), 2).Iter, 3, (*Minibatch[int]).Release)
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	checkNoLeak(t, base)
}
