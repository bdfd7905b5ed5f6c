package pipeline

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
)

func TestBatchRemainder(t *testing.T) {
	for _, c := range []struct {
		rem   Remainder
		rows  []int // rows per batch
		valid []int
	}{
		{Keep, []int{4, 4, 2}, []int{4, 4, 2}},
		{Drop, []int{4, 4}, []int{4, 4}},
		{Pad, []int{4, 4, 4}, []int{4, 4, 2}},
	} {
		var rows, valid []int
		next := 0
		for b, err := range Batch(FromSlice(ints(10)), 4).Remainder(c.rem).Iter(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, len(b.Items))
			valid = append(valid, b.Valid)
			for i, x := range b.Items {
				want := next
				if i >= b.Valid {
					want = 0
				} else {
					next++
				}
				if x != want {
					t.Fatalf("%v: batch %d row %d = %d, want %d", c.rem, b.Index, i, x, want)
				}
			}
			b.Release()
		}
		if !equal(rows, c.rows) || !equal(valid, c.valid) {
			t.Fatalf("%v: rows %v valid %v, want %v %v", c.rem, rows, valid, c.rows, c.valid)
		}
	}
}

func TestBatchArena(t *testing.T) {
	fill := func(row []byte, x int) error {
		f := Float32s(row)
		for j := range f {
			f[j] = float32(x*10 + j)
		}
		return nil
	}
	var got [][]float32
	for b, err := range Batch(FromSlice(ints(7)), 3).Arena(12, fill).Remainder(Pad).Iter(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Data) != 3*12 {
			t.Fatalf("arena %d bytes", len(b.Data))
		}
		got = append(got, append([]float32(nil), Float32s(b.Data)...))
		b.Release()
	}
	want := [][]float32{
		{0, 1, 2, 10, 11, 12, 20, 21, 22},
		{30, 31, 32, 40, 41, 42, 50, 51, 52},
		{60, 61, 62, 0, 0, 0, 0, 0, 0},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// An error from fill ends the epoch.
	bad := func(row []byte, x int) error {
		if x == 4 {
			return errBoom
		}
		binary.LittleEndian.PutUint32(row, uint32(x))
		return nil
	}
	if _, err := Collect(context.Background(), Batch(FromSlice(ints(7)), 3).Arena(4, bad)); err != errBoom {
		t.Fatalf("fill error: %v", err)
	}
}

func TestBatchPoolReuse(t *testing.T) {
	d := Batch(FromSlice(ints(40)), 4).PoolSize(2)
	seen := map[*Minibatch[int]]bool{}
	for b, err := range d.Iter(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		seen[b] = true
		b.Release()
		b.Release() // harmless
	}
	if len(seen) > 2 {
		t.Fatalf("%d distinct batches for 10 released one by one, want <= 2", len(seen))
	}
}

// Every rank yields the same number of batches, for every world size and
// dataset size, and the real rows across ranks are the dataset, each once
// (Keep, Pad) or at most once (Drop).
func TestEqualBatchesPerRank(t *testing.T) {
	for n := 0; n <= 40; n += 3 {
		for w := 1; w <= 8; w++ {
			for _, size := range []int{1, 3, 4} {
				for _, rem := range []Remainder{Keep, Drop, Pad} {
					k := RankBatches(n, w, size, rem)
					var all []int
					for i := range w {
						nb := 0
						d := Batch(Indices(n).Shuffle(1).Shard(w, i), size).Remainder(rem).Exactly(k)
						for b, err := range d.Iter(context.Background()) {
							if err != nil {
								t.Fatal(err)
							}
							if len(b.Items) != size && rem != Keep {
								t.Fatalf("batch of %d rows", len(b.Items))
							}
							all = append(all, b.Items[:b.Valid]...)
							nb++
							b.Release()
						}
						if nb != k {
							t.Fatalf("n %d w %d size %d %v: rank %d yields %d batches, want %d", n, w, size, rem, i, nb, k)
						}
					}
					seen := map[int]int{}
					for _, x := range all {
						seen[x]++
						if seen[x] > 1 {
							t.Fatalf("n %d w %d: %d twice", n, w, x)
						}
					}
					if rem != Drop && len(all) != n {
						t.Fatalf("n %d w %d size %d %v: %d rows, want %d", n, w, size, rem, len(all), n)
					}
				}
			}
		}
	}
	if got := EqualBatches([]int{10, 7, 9}, 4, Drop); got != 1 {
		t.Fatalf("EqualBatches drop = %d", got)
	}
	if got := EqualBatches([]int{10, 7, 9}, 4, Keep); got != 3 {
		t.Fatalf("EqualBatches keep = %d", got)
	}
}
