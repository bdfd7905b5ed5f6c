package loader

import (
	"math/rand/v2"
	"testing"
)

// bruteRemaining is remaining by its definition: mark every served
// position of each segment and list the others, in order.
func bruteRemaining(order []int, segs []Segment) []int {
	for _, seg := range segs {
		served := map[int]bool{}
		for r, c := range seg.Consumed {
			for k := range c {
				served[r+k*seg.World] = true
			}
		}
		var next []int
		for p, g := range order {
			if !served[p] {
				next = append(next, g)
			}
		}
		order = next
	}
	return order
}

// What is left after runs of several world sizes, ranks at different
// counts, is the definition's list, position by position, and the band it
// keeps is bounded by the ranks' spread, not the epoch's size.
func TestRemainingMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		n := rng.IntN(200)
		ord := epochPerm(uint64(trial), trial%3, n, trial%4 != 0)
		list := make([]int, n)
		for i := range list {
			list[i] = ord.At(i)
		}
		var segs []Segment
		left := n
		for range rng.IntN(4) {
			w := 1 + rng.IntN(5)
			seg := Segment{World: w, Consumed: make([]int, w)}
			base := 0
			if m := strideLen(left, w, w-1); m > 0 {
				base = rng.IntN(m + 1)
			}
			for r := range w {
				seg.Consumed[r] = min(base+rng.IntN(3), strideLen(left, w, r))
				left -= seg.Consumed[r]
			}
			segs = append(segs, seg)
		}
		got, err := remaining(ord, segs)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		want := bruteRemaining(list, segs)
		if got.Len() != len(want) {
			t.Fatalf("trial %d (n %d, %+v): %d left, want %d", trial, n, segs, got.Len(), len(want))
		}
		for i, g := range want {
			if got.At(i) != g {
				t.Fatalf("trial %d (n %d, %+v): position %d is %d, want %d", trial, n, segs, i, got.At(i), g)
			}
		}
	}
	// Half-way through 10M samples on 8 ranks in step: nothing listed.
	seg := Segment{World: 8, Consumed: make([]int, 8)}
	for r := range seg.Consumed {
		seg.Consumed[r] = 625_000
	}
	got, err := remaining(epochPerm(1, 0, 10_000_000, true), []Segment{seg})
	if err != nil {
		t.Fatal(err)
	}
	if r := got.(rest); len(r.band) != 0 || got.Len() != 5_000_000 {
		t.Errorf("ranks in step: %d listed, %d left; want 0 and 5,000,000", len(r.band), got.Len())
	}
}
