package loader

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

// raSamplerReference is torchvision's RASampler (references/classification/
// sampler.py, 0.14) written from its documented behaviour: of the epoch's
// order of n samples (order), each sample repeated reps times in a row, the
// list padded with its own start to total = ceil(n·reps/world)·world,
// rank's part indices[rank:total:world], cut to
// floor(n // 256 · 256 / world).
func raSamplerReference(order []int, reps, world, rank int) []int {
	n := len(order)
	numSamples := (n*reps + world - 1) / world
	total := numSamples * world
	var ind []int
	for _, i := range order {
		for range reps {
			ind = append(ind, i)
		}
	}
	ind = append(ind, ind[:total-len(ind)]...)
	var part []int
	for j := rank; j < total; j += world {
		part = append(part, ind[j])
	}
	return part[:n/256*256/world]
}

// keyIndex maps a folder's keys to their dataset indices (index order).
func keyIndex(t *testing.T, folder string) ([]string, map[string]int) {
	t.Helper()
	l, err := Open(folder, Options{Transform: None, Shuffle: ShuffleOff, Batch: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	keys := runEpoch(t, l, 0).keys
	idx := map[string]int{}
	for i, k := range keys {
		idx[k] = i
	}
	return keys, idx
}

// TestRepeatedAugmentationIsRASamplers: Options.Repeats serves
// RASampler's epoch: 402 samples on 2 ranks with 3 repetitions give 128
// samples per rank (before: no such option, 201 per rank without
// repeats), the samples of RASampler's list, each repeated as it repeats
// them; without shuffling the very indices, with shuffling the same
// structure over the loader's own permutation; and the steps and the
// state say so.
func TestRepeatedAugmentationIsRASamplers(t *testing.T) {
	folder, _ := makeTree(t, 134) // 402
	keys, idx := keyIndex(t, folder)
	n := len(keys)
	for _, c := range []struct{ reps, world int }{{3, 2}, {3, 1}, {2, 3}, {4, 8}} {
		ident := make([]int, n)
		for i := range ident {
			ident[i] = i
		}
		_, _, sel := RASamplerCounts(n, c.reps, c.world)
		for _, shuffle := range []ShuffleMode{ShuffleOff, ShuffleOn} {
			var global [][]int // each rank's indices
			for r := range c.world {
				o := Options{Transform: None, Shuffle: shuffle, Seed: 5, Batch: 32, NumShards: c.world, ShardIdx: r, Repeats: c.reps}
				l, err := Open(folder, o)
				if err != nil {
					t.Fatal(err)
				}
				if l.SamplesPerEpoch() != sel || l.Len() != sel || l.StepsPerEpoch() != (sel+31)/32 {
					t.Errorf("reps %d world %d: samples %d, len %d, steps %d; want RASampler's %d", c.reps, c.world, l.SamplesPerEpoch(), l.Len(), l.StepsPerEpoch(), sel)
				}
				e := runEpoch(t, l, 1)
				l.Close()
				got := make([]int, len(e.keys))
				for i, k := range e.keys {
					got[i] = idx[k]
				}
				if e.repeats != 0 {
					t.Errorf("reps %d world %d rank %d: %d rows marked as padding", c.reps, c.world, r, e.repeats)
				}
				if shuffle == ShuffleOff {
					if want := raSamplerReference(ident, c.reps, c.world, r); !slices.Equal(got, want) {
						t.Fatalf("reps %d world %d rank %d: served %d samples %v…, RASampler %d %v…", c.reps, c.world, r, len(got), got[:min(9, len(got))], len(want), want[:min(9, len(want))])
					}
				}
				global = append(global, got)
			}
			if shuffle == ShuffleOn {
				// Interleave the ranks back into the list RASampler
				// strides, and read the permutation off its groups.
				var list []int
				for k := range sel {
					for r := range c.world {
						list = append(list, global[r][k])
					}
				}
				var perm []int
				for j := 0; j < len(list); j += c.reps {
					perm = append(perm, list[j])
				}
				seen := map[int]bool{}
				for _, p := range perm {
					if seen[p] { // the cut list (sel·world <= n) never reaches the padding
						t.Fatalf("reps %d world %d: sample %d heads two groups", c.reps, c.world, p)
					}
					seen[p] = true
				}
				ref := raRefList(perm, c.reps, c.world, sel)
				if !slices.Equal(list, ref) {
					t.Fatalf("reps %d world %d shuffled: the ranks' lists are not RASampler's over their own permutation", c.reps, c.world)
				}
				if slices.Equal(perm, ident[:len(perm)]) {
					t.Errorf("reps %d world %d: shuffled epoch in index order", c.reps, c.world)
				}
			}
		}
	}
	// A dataset RASampler serves nothing of is refused, naming it.
	small, _ := makeTree(t, 5)
	if _, err := Open(small, Options{Transform: None, Repeats: 3}); err == nil || !strings.Contains(err.Error(), "RASampler serves") {
		t.Errorf("Repeats on 15 samples: %v", err)
	}
}

// raRefList is RASampler's list over all ranks, cut to sel·world, of a
// permutation whose first len(perm) entries are known.
func raRefList(perm []int, reps, world, sel int) []int {
	var list []int
	for _, p := range perm {
		for range reps {
			list = append(list, p)
		}
	}
	return list[:sel*world]
}

// TestRepeatedCopiesAugmentedAnew: the copies RASampler repeats are each
// augmented with their own draws (one rank: a sample's three copies are
// consecutive), and an epoch is the same whatever the workers.
func TestRepeatedCopiesAugmentedAnew(t *testing.T) {
	folder, _ := makeTree(t, 86) // 258
	run := func(workers int) epoch {
		l, err := Open(folder, Options{Transform: Train, Resolution: 12, Layout: U8HWC, Seed: 3, Batch: 16, Repeats: 3, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return runEpoch(t, l, 0)
	}
	a, b := run(1), run(3)
	if len(a.keys) != 256 || !slices.Equal(a.keys, b.keys) || !slices.EqualFunc(a.rows, b.rows, bytes.Equal) {
		t.Fatalf("%d rows; 1 and 3 workers agree: %v", len(a.keys), slices.Equal(a.keys, b.keys))
	}
	same := 0
	for i := 0; i+2 < len(a.keys); i += 3 {
		if a.keys[i] != a.keys[i+1] || a.keys[i] != a.keys[i+2] {
			t.Fatalf("rows %d-%d: %s %s %s, not one sample's copies", i, i+2, a.keys[i], a.keys[i+1], a.keys[i+2])
		}
		if bytes.Equal(a.rows[i], a.rows[i+1]) || bytes.Equal(a.rows[i+1], a.rows[i+2]) {
			same++
		}
	}
	if same > 2 { // a flip and a crop of a near-uniform picture may coincide
		t.Errorf("%d of %d samples have copies with the same pixels", same, len(a.keys)/3)
	}
}

// TestSamplerOrder: Sampler "indices" serves exactly the order given for
// each epoch (repeats allowed, each augmented anew), batched as usual, the
// last partial batch dropped under Drop; an epoch without an order, an
// index out of range, a stream, and a mid-epoch state are refused by name.
func TestSamplerOrder(t *testing.T) {
	folder, shards := makeTree(t, 4) // 12
	keys, _ := keyIndex(t, folder)
	order := []int{7, 3, 3, 11, 0, 5, 3}
	for _, drop := range []bool{false, true} {
		l, err := Open(folder, Options{Transform: Train, Resolution: 8, Layout: U8HWC, Batch: 3, Drop: drop, Sampler: SamplerIndices, NumShards: 2, ShardIdx: 1})
		if err != nil {
			t.Fatal(err)
		}
		if l.StepsPerEpoch() != -1 {
			t.Errorf("steps %d before an order: want -1 (unknown)", l.StepsPerEpoch())
		}
		for b, err := range l.IterEpoch(t.Context(), 0) {
			if b != nil {
				b.Release()
			}
			if err == nil || !strings.Contains(err.Error(), "no order given") {
				t.Fatalf("epoch without an order: %v", err)
			}
		}
		if err := l.SetOrder([]int{1, 12}); err == nil || !strings.Contains(err.Error(), "sampler index 12 (at position 1") {
			t.Errorf("index 12 of 12 samples: %v", err)
		}
		for e := range 2 {
			o := order
			if e == 1 {
				o = []int{2, 1, 0, 9}
			}
			if err := l.SetOrder(o); err != nil {
				t.Fatal(err)
			}
			ep := runEpoch(t, l, e)
			want := len(o)
			if drop {
				want = len(o) / 3 * 3
			}
			if len(ep.keys) != want {
				t.Fatalf("drop %v epoch %d: %d rows, want %d", drop, e, len(ep.keys), want)
			}
			for i, k := range ep.keys {
				if k != keys[o[i]] {
					t.Fatalf("drop %v epoch %d row %d: %s, want %s", drop, e, i, k, keys[o[i]])
				}
			}
			if e == 0 && (bytes.Equal(ep.rows[1], ep.rows[2]) && bytes.Equal(ep.rows[2], ep.rows[6%len(ep.rows)])) {
				t.Errorf("sample 3's three copies have the same pixels")
			}
		}
		// Mid-epoch: no state.
		if err := l.SetOrder(order); err != nil {
			t.Fatal(err)
		}
		for b, err := range l.IterEpoch(t.Context(), 2) {
			if err != nil {
				t.Fatal(err)
			}
			_, serr := l.State()
			b.Release()
			if !errors.Is(serr, ErrResume) || !strings.Contains(serr.Error(), "sampler") {
				t.Errorf("State mid-epoch: %v", serr)
			}
			break
		}
		l.Close()
	}
	if _, err := Open(shards, Options{Transform: None, Sampler: SamplerIndices}); err == nil || !strings.Contains(err.Error(), "streamed") {
		t.Errorf("sampler on streamed shards: %v", err)
	}
	if _, err := Open(shards, Options{Transform: None, Repeats: 3}); err == nil || !strings.Contains(err.Error(), "streamed") {
		t.Errorf("repeats on streamed shards: %v", err)
	}
	if l, err := Open(shards, Options{Transform: None, Sampler: SamplerIndices, GlobalShuffle: true}); err != nil {
		t.Errorf("sampler on indexed shards: %v", err)
	} else {
		l.Close()
	}
	if _, err := Open(folder, Options{Sampler: "random"}); err == nil || !strings.Contains(err.Error(), `sampler "random"`) {
		t.Errorf("sampler random: %v", err)
	}
}

// TestRepeatedResume: a state saved within an epoch of Repeats resumes
// with the rest of RASampler's order (also on another number of ranks),
// and a loader with other repetitions refuses it by name.
func TestRepeatedResume(t *testing.T) {
	folder, _ := makeTree(t, 100) // 300: 256 served on one rank
	o := Options{Transform: None, Seed: 9, Batch: 16, Repeats: 3}
	l, err := Open(folder, o)
	if err != nil {
		t.Fatal(err)
	}
	full := runEpoch(t, l, 2).keys
	var head []string
	n := 0
	for b, err := range l.IterEpoch(t.Context(), 2) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Valid {
			head = append(head, b.Items[i].Key)
		}
		b.Release()
		if n++; n == 5 {
			break
		}
	}
	st, err := l.State()
	l.Close()
	if err != nil || st.Repeats != 3 {
		t.Fatalf("state %+v: %v", st, err)
	}
	ro := o
	ro.Resume = &st
	r, err := Open(folder, ro)
	if err != nil {
		t.Fatal(err)
	}
	rest := runEpoch(t, r, 2).keys
	r.Close()
	if got := append(head, rest...); !slices.Equal(got, full) {
		t.Fatalf("resumed: %d + %d rows, not the epoch's %d", len(head), len(rest), len(full))
	}
	bad := o
	bad.Repeats, bad.Resume = 2, &st
	if _, err := Open(folder, bad); !errors.Is(err, ErrResume) || !strings.Contains(err.Error(), "repeats each sample 3 times") {
		t.Errorf("state of 3 repetitions in a loader of 2: %v", err)
	}
}

// TestSetSeed: a loader whose seed is set after it ran an epoch serves
// what a loader opened with that seed serves (order and augmentation),
// on indexed and streamed data.
func TestSetSeed(t *testing.T) {
	folder, shards := makeTree(t, 6)
	for _, path := range []string{folder, shards} {
		o := Options{Resolution: 8, Layout: U8HWC, Batch: 4, Seed: 1, ShuffleBuffer: 8}
		l, err := Open(path, o)
		if err != nil {
			t.Fatal(err)
		}
		before := runEpoch(t, l, 3)
		l.SetSeed(77)
		after := runEpoch(t, l, 3)
		l.Close()
		o.Seed = 77
		f, err := Open(path, o)
		if err != nil {
			t.Fatal(err)
		}
		want := runEpoch(t, f, 3)
		st, _ := f.State()
		f.Close()
		if !slices.Equal(after.keys, want.keys) || !slices.EqualFunc(after.rows, want.rows, bytes.Equal) {
			t.Errorf("%s: SetSeed(77) does not serve seed 77's epoch", path)
		}
		if slices.Equal(before.keys, after.keys) {
			t.Errorf("%s: seeds 1 and 77 serve the same order", path)
		}
		if st.Seed != 77 {
			t.Errorf("%s: state's seed %d", path, st.Seed)
		}
	}
}
