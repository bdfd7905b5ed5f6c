package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
)

var errBoom = errors.New("boom")

var errEOF = io.EOF

const failAt = 7

// sources: a finite one, an endless one, and one failing at element failAt.
func finiteSrc() Dataset[int] { return FromSlice(ints(50)) }

func endlessSrc() Dataset[int] {
	return FromFunc(func(_ context.Context, i int) (int, error) { return i, nil })
}

func failingSrc() Dataset[int] {
	return FromFunc(func(_ context.Context, i int) (int, error) {
		if i == failAt {
			return 0, errBoom
		}
		if i == 50 {
			return 0, io.EOF
		}
		return i, nil
	})
}

// flatten turns batches back into elements (the real rows only).
func flatten(d Dataset[*Minibatch[int]]) Dataset[int] {
	return Interleave(d, func(b *Minibatch[int]) Dataset[int] {
		rows := append([]int(nil), b.Items[:b.Valid]...)
		b.Release()
		return FromSlice(rows)
	}, 1, 1, 0)
}

func double(_ context.Context, x int) (int, error) { return 2 * x, nil }

// refInterleave is tf.data's reference implementation of interleave from its
// own tests (interleave_test.py, _interleave), ported.
func refInterleave(lists [][]int, cycle, block int) []int {
	var out []int
	queue := lists
	open := make([][]int, cycle)
	live := make([]bool, cycle)
	numOpen := 0
	for i := range cycle {
		if len(queue) > 0 {
			open[i], live[i], queue = queue[0], true, queue[1:]
			numOpen++
		}
	}
	for numOpen > 0 || len(queue) > 0 {
		for i := range cycle {
			if !live[i] {
				if len(queue) == 0 {
					continue
				}
				open[i], live[i], queue = queue[0], true, queue[1:]
				numOpen++
			}
			for range block {
				if len(open[i]) == 0 {
					live[i] = false
					numOpen--
					break
				}
				out = append(out, open[i][0])
				open[i] = open[i][1:]
			}
		}
	}
	return out
}

func pairOf(x int) []int { return []int{x, x + 1000, x + 2000} }

func pairs(in []int) [][]int {
	var l [][]int
	for _, x := range in {
		l = append(l, pairOf(x))
	}
	return l
}

type stageCase struct {
	name  string
	build func(src Dataset[int]) Dataset[int]
	want  func(in []int) []int // expected output of the finite source
	set   bool                 // compare as multisets
	// errPrefix is what comes before the error from failingSrc (nil: not
	// checked).
	errPrefix []int
}

func stageCases() []stageCase {
	id := func(in []int) []int { return in }
	dbl := func(in []int) []int {
		out := make([]int, len(in))
		for i, x := range in {
			out[i] = 2 * x
		}
		return out
	}
	first := func(n int) []int { return ints(n) }
	return []stageCase{
		{name: "Map", build: func(s Dataset[int]) Dataset[int] { return Map(s, double) }, want: dbl, errPrefix: dbl(first(failAt))},
		{name: "ParallelMap3", build: func(s Dataset[int]) Dataset[int] { return ParallelMap(s, 3, double) }, want: dbl, errPrefix: dbl(first(failAt))},
		{name: "ParallelMapAuto", build: func(s Dataset[int]) Dataset[int] { return ParallelMap(s, Auto, double).Budget(4) }, want: dbl, errPrefix: dbl(first(failAt))},
		{name: "ParallelMapUnordered", build: func(s Dataset[int]) Dataset[int] { return ParallelMap(s, 3, double).Unordered() }, want: dbl, set: true},
		{name: "MapUnordered1", build: func(s Dataset[int]) Dataset[int] { return ParallelMap(s, 1, double).Unordered() }, want: dbl, set: true},
		{name: "Prefetch2", build: func(s Dataset[int]) Dataset[int] { return Prefetch(s, 2) }, want: id, errPrefix: first(failAt)},
		{name: "PrefetchAuto", build: func(s Dataset[int]) Dataset[int] { return Prefetch(s, Auto).MaxDepth(4) }, want: id, errPrefix: first(failAt)},
		{name: "Shuffle", build: func(s Dataset[int]) Dataset[int] { return Shuffle(s, 8, 1) }, want: id, set: true},
		{name: "Shard", build: func(s Dataset[int]) Dataset[int] { return Shard(s, 3, 1) }, want: func(in []int) []int {
			var out []int
			for i := 1; i < len(in); i += 3 {
				out = append(out, in[i])
			}
			return out
		}, errPrefix: []int{1, 4}},
		{name: "Take", build: func(s Dataset[int]) Dataset[int] { return Take(s, 20) }, want: func(in []int) []int { return in[:20] }, errPrefix: first(failAt)},
		{name: "Skip", build: func(s Dataset[int]) Dataset[int] { return Skip(s, 5) }, want: func(in []int) []int { return in[5:] }, errPrefix: []int{5, 6}},
		{name: "Repeat", build: func(s Dataset[int]) Dataset[int] { return Repeat(s, 2) }, want: func(in []int) []int { return append(append([]int(nil), in...), in...) }, errPrefix: first(failAt)},
		{name: "Batch", build: func(s Dataset[int]) Dataset[int] { return flatten(Batch(s, 4)) }, want: id, errPrefix: first(4)},
		{name: "BatchPad", build: func(s Dataset[int]) Dataset[int] { return flatten(Batch(s, 4).Remainder(Pad)) }, want: id},
		{name: "BatchDrop", build: func(s Dataset[int]) Dataset[int] { return flatten(Batch(s, 4).Remainder(Drop)) }, want: func(in []int) []int { return in[:48] }},
		{name: "Interleave", build: func(s Dataset[int]) Dataset[int] {
			return Interleave(s, func(x int) Dataset[int] { return FromSlice(pairOf(x)) }, 3, 2, 0)
		}, want: func(in []int) []int { return refInterleave(pairs(in), 3, 2) }},
		{name: "InterleaveParallel", build: func(s Dataset[int]) Dataset[int] {
			return Interleave(s, func(x int) Dataset[int] { return FromSlice(pairOf(x)) }, 3, 2, 2)
		}, want: func(in []int) []int { return refInterleave(pairs(in), 3, 2) }},
		{name: "InterleaveOfParallelMaps", build: func(s Dataset[int]) Dataset[int] {
			return Interleave(s, func(x int) Dataset[int] { return ParallelMap(FromSlice(pairOf(x)), 2, double) }, 2, 1, Auto)
		}, want: func(in []int) []int { return dbl(refInterleave(pairs(in), 2, 1)) }},
		{name: "Pipeline", build: func(s Dataset[int]) Dataset[int] {
			return Prefetch(flatten(Prefetch(Batch(ParallelMap(Shuffle(s, 4, 2), Auto, double), 3), 2)), 1)
		}, want: dbl, set: true},
	}
}

func TestStageOrder(t *testing.T) {
	for _, c := range stageCases() {
		t.Run(c.name, func(t *testing.T) {
			base := leakBase(t)
			in := ints(50)
			got := mustCollect(t, c.build(finiteSrc()))
			want := c.want(in)
			if c.set {
				if !sameSet(got, want) {
					t.Fatalf("got %v, want a permutation of %v", short(got), short(want))
				}
			} else if !equal(got, want) {
				t.Fatalf("got  %v\nwant %v", short(got), short(want))
			}
			checkNoLeak(t, base)
		})
	}
}

func TestStageEarlyBreak(t *testing.T) {
	for _, c := range stageCases() {
		for _, src := range []struct {
			name string
			f    func() Dataset[int]
		}{{"finite", finiteSrc}, {"endless", endlessSrc}} {
			for _, k := range []int{0, 1, 3, 17} {
				t.Run(fmt.Sprintf("%s/%s/%d", c.name, src.name, k), func(t *testing.T) {
					base := leakBase(t)
					n := 0
					for _, err := range c.build(src.f()).Iter(context.Background()) {
						if err != nil {
							t.Fatal(err)
						}
						if n == k {
							break
						}
						n++
					}
					if n != k {
						t.Fatalf("got %d elements, want %d", n, k)
					}
					checkNoLeak(t, base)
				})
			}
		}
	}
}

func TestStageCancel(t *testing.T) {
	for _, c := range stageCases() {
		t.Run(c.name, func(t *testing.T) {
			base := leakBase(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			n := 0
			var last error
			for _, err := range c.build(endlessSrc()).Iter(ctx) {
				if err != nil {
					last = err
					continue // the sequence must end by itself
				}
				if n++; n == 3 {
					cancel()
				}
				if n > 100000 {
					t.Fatal("no end after cancel")
				}
			}
			if !errors.Is(last, context.Canceled) {
				t.Fatalf("last error %v, want context.Canceled", last)
			}
			checkNoLeak(t, base)
		})
	}
}

func TestStageError(t *testing.T) {
	for _, c := range stageCases() {
		t.Run(c.name, func(t *testing.T) {
			base := leakBase(t)
			for range 5 {
				got, err := Collect(context.Background(), c.build(failingSrc()))
				if !errors.Is(err, errBoom) {
					t.Fatalf("error %v, want %v", err, errBoom)
				}
				if c.errPrefix != nil && !equal(got, c.errPrefix) {
					t.Fatalf("before the error: got %v, want %v", got, c.errPrefix)
				}
			}
			checkNoLeak(t, base)
		})
	}
}

// Re-iteration: stages without a seed give the same order every epoch.
func TestStageReiterate(t *testing.T) {
	for _, c := range stageCases() {
		if c.set {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			d := c.build(finiteSrc())
			a, b := mustCollect(t, d), mustCollect(t, d)
			if !equal(a, b) {
				t.Fatalf("epochs differ:\n%v\n%v", short(a), short(b))
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	src := finiteSrc()
	for name, d := range map[string]Dataset[int]{
		"shard":      Shard(src, 2, 2),
		"take":       Take(src, -1),
		"skip":       Skip(src, -1),
		"repeat":     Repeat(src, -2),
		"shuffle":    Shuffle(src, 0, 1),
		"map":        ParallelMap(src, 0, double),
		"budget":     ParallelMap(src, Auto, double).Budget(0),
		"prefetch":   Prefetch(src, 0),
		"interleave": Interleave(src, func(int) Dataset[int] { return src }, 0, 1, 0),
		"indices":    Indices(3).Shard(0, 0),
		"batch":      flatten(Batch(src, 0)),
	} {
		if _, err := Collect(context.Background(), d); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: error %v, want ErrConfig", name, err)
		}
	}
}
