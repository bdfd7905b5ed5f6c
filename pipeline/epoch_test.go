package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// epochCase builds a fresh pipeline with one seeded stage (or several).
type epochCase struct {
	name  string
	build func(t *testing.T) Dataset[string]
}

func epochCases(t *testing.T) []epochCase {
	paths := writeShards(t, []int{7, 3, 9, 5, 6})
	many := writeShards(t, make([]int, 12))
	itoa := func(_ context.Context, i int) (string, error) { return fmt.Sprint(i), nil }
	// augment stands for a per-sample random augmentation: it draws from a
	// generator seeded by the epoch the context names and the element.
	augment := func(ctx context.Context, s string) (string, error) {
		r := rand.New(rand.NewPCG(uint64(EpochFrom(ctx)), uint64(len(s))*7919+uint64(s[len(s)-1])))
		return fmt.Sprintf("%s@%d", s, r.IntN(1000)), nil
	}
	return []epochCase{
		{"files", func(*testing.T) Dataset[string] { return Files(many...).Shuffle(3) }},
		{"files-sharded", func(*testing.T) Dataset[string] { return Files(many...).Shard(2, 1).Shuffle(3) }},
		{"buffer-shuffle", func(*testing.T) Dataset[string] {
			return Shuffle(Map(Indices(200), itoa), 16, 5)
		}},
		{"global-shuffle", func(*testing.T) Dataset[string] { return Map(Indices(100).Shuffle(9), itoa) }},
		{"global-shuffle-sharded", func(*testing.T) Dataset[string] { return Map(Indices(100).Shuffle(9).Shard(3, 2), itoa) }},
		{"streaming", func(*testing.T) Dataset[string] {
			// The loader's streaming recipe: shuffled files, parallel
			// interleave, buffer shuffle, parallel augmentation, prefetch.
			rd := Interleave(Files(paths...).Shard(2, 0).Shuffle(11), lines, 2, 3, 2)
			return Prefetch(ParallelMap(Shuffle(rd, 8, 11), 3, augment), 2)
		}},
		{"augment", func(*testing.T) Dataset[string] { return ParallelMap(Map(Indices(50), itoa), Auto, augment) }},
		{"repeat", func(*testing.T) Dataset[string] { return Repeat(Map(Indices(30).Shuffle(2), itoa), 3) }},
	}
}

// A fresh pipeline asked for epoch e yields exactly what epoch e of a
// long-running one yields, whatever the long-running one ran before
// (epochs in order, one twice, one skipped), and different epochs differ.
func TestFreshEpochEqualsLongRunning(t *testing.T) {
	for _, c := range epochCases(t) {
		t.Run(c.name, func(t *testing.T) {
			long := c.build(t)
			var ran [][]string
			for e := range int64(4) {
				ran = append(ran, collectEpoch(t, long, e))
			}
			for e := range int64(4) {
				fresh := collectEpoch(t, c.build(t), e)
				if !slices.Equal(fresh, ran[e]) {
					t.Fatalf("epoch %d: fresh pipeline\n%v\nlong-running one\n%v", e, fresh, ran[e])
				}
			}
			// Out of order: epoch 3, 3 again, then 1, on one pipeline.
			odd := c.build(t)
			for _, e := range []int64{3, 3, 1} {
				if got := collectEpoch(t, odd, e); !slices.Equal(got, ran[e]) {
					t.Fatalf("epoch %d after other epochs differs", e)
				}
			}
			for e := 1; e < 4; e++ {
				if slices.Equal(ran[e], ran[0]) {
					t.Fatalf("epochs 0 and %d have the same order: %v", e, ran[0])
				}
			}
		})
	}
}

// Repeat runs its repetitions as distinct epochs of its input, derived from
// its own epoch: epoch e of Repeat(d, 3) is epochs 3e, 3e+1, 3e+2 of d.
func TestRepeatEpochs(t *testing.T) {
	d := Indices(20).Shuffle(4)
	for e := range int64(3) {
		got := collectEpoch(t, Repeat(d, 3), e)
		var want []int
		for r := range 3 {
			want = append(want, collectEpoch(t, d, 3*e+int64(r))...)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("epoch %d of Repeat(d, 3) is not epochs %d…%d of d", e, 3*e, 3*e+2)
		}
	}
	a := collectEpoch(t, Take(Repeat(d, Forever), 60), 1)
	if b := collectEpoch(t, d, 1<<32); !slices.Equal(a[:20], b) {
		t.Fatal("epoch 1 of Repeat(d, Forever) does not start with epoch 2^32 of d")
	}
	if slices.Equal(a[:20], a[20:40]) {
		t.Fatal("repetitions of Forever are the same epoch")
	}
}

// fillRun is one rank's epoch through Batch.Fill.
func fillRun(t *testing.T, d Dataset[string], size, rows int, rem Remainder, e int64) (sizes []int, repeats int, elems []string) {
	t.Helper()
	for b, err := range Batch(d, size).Remainder(rem).Fill(rows).Iter(WithEpoch(context.Background(), e)) {
		if err != nil {
			t.Fatal(err)
		}
		if b.Valid == 0 {
			t.Fatalf("a batch of zero rows (index %d)", b.Index)
		}
		for i, x := range b.Items[:b.Valid] {
			if i >= b.Valid-b.Repeats {
				x = "*" + x // mark the repeats
			}
			elems = append(elems, x)
		}
		sizes = append(sizes, b.Valid)
		repeats += b.Repeats
		b.Release()
	}
	return sizes, repeats, elems
}

// Ranks of unequal sizes (files of 7, 3, 9, 5, 6 records on 2 and 3 ranks)
// filled to the largest rank's count all yield the same batches' sizes,
// never a batch of zero rows; a short rank repeats its own epoch's first
// elements, in order, and counts them in Repeats.
func TestBatchFillEvensRanks(t *testing.T) {
	counts := []int{7, 3, 9, 5, 6}
	paths := writeShards(t, counts)
	for _, world := range []int{2, 3} {
		per := make([]int, world)
		for i, c := range counts {
			per[i%world] += c
		}
		rows := slices.Max(per)
		for _, rem := range []Remainder{Keep, Drop} {
			var first []int
			for rank := range world {
				mk := func() Dataset[string] {
					return Shuffle(Interleave(Files(paths...).Shard(world, rank).Shuffle(1), lines, 2, 2, 0), 4, 1)
				}
				plain := collectEpoch(t, mk(), 2)
				sizes, repeats, elems := fillRun(t, mk(), 4, rows, rem, 2)
				if rank == 0 {
					first = sizes
				} else if !slices.Equal(sizes, first) {
					t.Fatalf("world %d %v: rank %d batch sizes %v, rank 0 %v", world, rem, rank, sizes, first)
				}
				want := slices.Clone(plain)
				for k := 0; len(want) < rows; k++ {
					want = append(want, "*"+plain[k%len(plain)])
				}
				if rem == Drop {
					want = want[:rows/4*4]
				}
				if !slices.Equal(elems, want) {
					t.Fatalf("world %d %v rank %d: got\n%v\nwant\n%v", world, rem, rank, elems, want)
				}
				if wantRep := strings.Count(strings.Join(want, " "), "*"); repeats != wantRep {
					t.Fatalf("world %d %v rank %d: %d repeats counted, want %d", world, rem, rank, repeats, wantRep)
				}
			}
		}
	}
}

func TestBatchFillEdges(t *testing.T) {
	src := func(n int) Dataset[string] {
		return Map(Indices(n), func(_ context.Context, i int) (string, error) { return fmt.Sprint(i), nil })
	}
	// Fewer rows than the input: the epoch stops there.
	if sizes, rep, _ := fillRun(t, src(10), 4, 6, Keep, 0); !slices.Equal(sizes, []int{4, 2}) || rep != 0 {
		t.Fatalf("fill 6 of 10: sizes %v, repeats %d", sizes, rep)
	}
	// One element repeated over several passes.
	if sizes, rep, elems := fillRun(t, src(1), 2, 5, Keep, 0); !slices.Equal(sizes, []int{2, 2, 1}) || rep != 4 ||
		!slices.Equal(elems, []string{"0", "*0", "*0", "*0", "*0"}) {
		t.Fatalf("fill 5 from 1: sizes %v, repeats %d, %v", sizes, rep, elems)
	}
	// Nothing to repeat.
	var err error
	for _, e := range Batch(src(0), 2).Fill(3).Iter(context.Background()) {
		err = e
	}
	if err == nil || !strings.Contains(err.Error(), "no element to repeat") {
		t.Fatalf("fill from an empty input: %v", err)
	}
	if _, err := Collect(context.Background(), Batch(src(3), 2).Fill(3).Exactly(2)); err == nil {
		t.Fatal("Fill with Exactly: no error")
	}
}
