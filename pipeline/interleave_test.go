package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

// repeatSelf maps x to the dataset of x repeated x times, as tf.data's tests
// do with Dataset.from_tensors(x).repeat(x).
func repeatSelf(x int) Dataset[int] {
	s := make([]int, x)
	for i := range s {
		s[i] = x
	}
	return FromSlice(s)
}

var parallelisms = []int{0, 1, 2, 3, Auto}

// The example of tf.data.Dataset.interleave's documentation:
// Dataset.range(1, 6).interleave(lambda x: Dataset.from_tensors(x).repeat(6),
// cycle_length=2, block_length=4).
func TestInterleaveDocExample(t *testing.T) {
	want := []int{1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5}
	for _, p := range parallelisms {
		d := Interleave(FromSlice([]int{1, 2, 3, 4, 5}), func(x int) Dataset[int] {
			return Take(Repeat(FromSlice([]int{x}), Forever), 6)
		}, 2, 4, p)
		if got := mustCollect(t, d); !equal(got, want) {
			t.Errorf("parallel %d:\ngot  %v\nwant %v", p, got, want)
		}
	}
}

// The expected sequences of tf.data's own test of interleave
// (interleave_test.py, testPythonImplementation): the input values repeated
// twice, each value x mapped to x copies of x.
func TestInterleaveTFGolden(t *testing.T) {
	cases := []struct {
		values       []int
		cycle, block int
		want         []int
	}{
		{[]int{4, 5, 6}, 1, 1, []int{4, 4, 4, 4, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 4, 4, 4, 4, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6}},
		{[]int{4, 5, 6}, 2, 1, []int{4, 5, 4, 5, 4, 5, 4, 5, 5, 6, 6, 4, 6, 4, 6, 4, 6, 4, 6, 5, 6, 5, 6, 5, 6, 5, 6, 5, 6, 6}},
		{[]int{4, 5, 6}, 2, 3, []int{4, 4, 4, 5, 5, 5, 4, 5, 5, 6, 6, 6, 4, 4, 4, 6, 6, 6, 4, 5, 5, 5, 6, 6, 6, 5, 5, 6, 6, 6}},
		{[]int{4, 5, 6}, 7, 2, []int{4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6, 5, 6, 6, 5, 6, 6}},
		// 0 maps to an empty input, which still takes its turn in the cycle.
		{[]int{4, 0, 6}, 2, 1, []int{4, 4, 6, 4, 6, 4, 6, 6, 4, 6, 4, 6, 4, 4, 6, 6, 6, 6, 6, 6}},
	}
	for _, c := range cases {
		in := append(append([]int(nil), c.values...), c.values...)
		for _, p := range parallelisms {
			d := Interleave(FromSlice(in), repeatSelf, c.cycle, c.block, p)
			if got := mustCollect(t, d); !equal(got, c.want) {
				t.Errorf("%v cycle %d block %d parallel %d:\ngot  %v\nwant %v", c.values, c.cycle, c.block, p, got, c.want)
			}
			// The port of tf.data's reference implementation agrees.
			var lists [][]int
			for _, x := range in {
				lists = append(lists, mustCollect(t, repeatSelf(x)))
			}
			if ref := refInterleave(lists, c.cycle, c.block); !equal(ref, c.want) {
				t.Fatalf("reference disagrees: %v", ref)
			}
		}
	}
}

// Random inputs (some empty) against the reference implementation.
func TestInterleaveRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := r.IntN(9)
		var lists [][]int
		var lens []int
		next := 0
		for range n {
			l := r.IntN(6)
			if r.IntN(4) == 0 {
				l = 0
			}
			var s []int
			for range l {
				s = append(s, next)
				next++
			}
			lists = append(lists, s)
			lens = append(lens, l)
		}
		cycle, block := 1+r.IntN(4), 1+r.IntN(4)
		p := parallelisms[r.IntN(len(parallelisms))]
		d := Interleave(Indices(n), func(i int) Dataset[int] { return FromSlice(lists[i]) }, cycle, block, p)
		got := mustCollect(t, d)
		if want := refInterleave(lists, cycle, block); !equal(got, want) {
			t.Fatalf("trial %d lens %v cycle %d block %d parallel %d:\ngot  %v\nwant %v", trial, lens, cycle, block, p, got, want)
		}
	}
}

// An error inside an inner dataset surfaces at its position.
func TestInterleaveInnerError(t *testing.T) {
	for _, p := range parallelisms {
		t.Run(fmt.Sprint(p), func(t *testing.T) {
			base := leakBase(t)
			d := Interleave(FromSlice([]int{0, 1, 2}), func(x int) Dataset[int] {
				return FromFunc(func(_ context.Context, i int) (int, error) {
					if x == 1 && i == 2 {
						return 0, errBoom
					}
					if i == 4 {
						return 0, errEOF
					}
					return 10*x + i, nil
				})
			}, 2, 1, p)
			got, err := Collect(context.Background(), d)
			if err != errBoom {
				t.Fatalf("error %v", err)
			}
			if want := []int{0, 10, 1, 11, 2}; !equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
			checkNoLeak(t, base)
		})
	}
}
