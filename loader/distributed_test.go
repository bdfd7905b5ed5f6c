package loader

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// keepFirst leaves the first n images of the ImageFolder under folder (in
// its order) and removes the rest.
func keepFirst(t *testing.T, folder string, n int) {
	t.Helper()
	l, err := Open(folder, Options{Transform: None, Shuffle: ShuffleOff, Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	keys := runEpoch(t, l, 0).keys
	l.Close()
	for _, k := range keys[n:] {
		if err := os.Remove(filepath.Join(folder, k)); err != nil {
			t.Fatal(err)
		}
	}
}

// distributedSampler is PyTorch's DistributedSampler(drop_last=False) over
// an order of n samples: rank r's list of positions in the order.
func distributedSampler(n, world, rank int) []int {
	total := (n + world - 1) / world * world
	var out []int
	for i := rank; i < total; i += world {
		out = append(out, i%n)
	}
	return out
}

// Fewer samples than ranks: every rank serves one row, as
// DistributedSampler does; the rank without a sample of its own repeats the
// epoch's first, counted as a repeat. Before, rank 3 failed with "this
// rank's part of the epoch is empty".
func TestFewerSamplesThanRanks(t *testing.T) {
	folder, _ := makeTree(t, 1) // 3 images
	for _, shuffle := range []ShuffleMode{ShuffleOff, ShuffleOn} {
		var order []string
		if l, err := Open(folder, Options{Transform: None, Shuffle: shuffle, Seed: 4, Batch: 8}); err != nil {
			t.Fatal(err)
		} else {
			order = runEpoch(t, l, 2).keys
			l.Close()
		}
		for r := range 4 {
			l, err := Open(folder, Options{Transform: None, Shuffle: shuffle, Seed: 4, Batch: 8, NumShards: 4, ShardIdx: r})
			if err != nil {
				t.Fatal(err)
			}
			if l.StepsPerEpoch() != 1 || l.SamplesPerEpoch() != 1 {
				t.Fatalf("rank %d: %d steps of %d samples, want 1 of 1", r, l.StepsPerEpoch(), l.SamplesPerEpoch())
			}
			ep := runEpoch(t, l, 2)
			l.Close()
			var want []string
			for _, p := range distributedSampler(3, 4, r) {
				want = append(want, order[p])
			}
			if !slices.Equal(ep.keys, want) {
				t.Fatalf("shuffle %v rank %d served %v, DistributedSampler %v", shuffle, r, ep.keys, want)
			}
			if wantRep := 0; r == 3 {
				if ep.repeats != 1 {
					t.Fatalf("rank 3: %d repeats, want 1", ep.repeats)
				}
			} else if ep.repeats != wantRep {
				t.Fatalf("rank %d: %d repeats", r, ep.repeats)
			}
		}
	}
}

// The same with streamed shards: 3 records in one shard over 4 ranks; the
// rank without a record serves the epoch's first, as a repeat.
func TestFewerRecordsThanRanksStreamed(t *testing.T) {
	_, shards := makeTreeShards(t, 1, 1)
	var all []string
	for r := range 4 {
		l, err := Open(shards, Options{Transform: None, Seed: 2, Batch: 8, NumShards: 4, ShardIdx: r})
		if err != nil {
			t.Fatal(err)
		}
		if l.StepsPerEpoch() != 1 {
			t.Fatalf("rank %d: %d steps", r, l.StepsPerEpoch())
		}
		ep := runEpoch(t, l, 0)
		l.Close()
		if len(ep.keys) != 1 || ep.repeats != map[bool]int{true: 1, false: 0}[r == 3] {
			t.Fatalf("rank %d: %v with %d repeats", r, ep.keys, ep.repeats)
		}
		all = append(all, ep.first...)
	}
	if slices.Sort(all); len(slices.Compact(all)) != 3 {
		t.Fatalf("ranks' own rows: %v, want the 3 records once", all)
	}
}

// Padding follows DistributedSampler's rule for every rank: rank r serves
// positions r, r+W, … of the order extended by its own first samples.
func TestPaddingIsDistributedSamplers(t *testing.T) {
	folder, _ := makeTree(t, 5) // 15 images
	keepFirst(t, folder, 13)
	full, err := Open(folder, Options{Transform: None, Seed: 9, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	order := runEpoch(t, full, 1).keys
	full.Close()
	for _, w := range []int{2, 3, 4, 5} {
		for r := range w {
			l, err := Open(folder, Options{Transform: None, Seed: 9, Batch: 4, NumShards: w, ShardIdx: r})
			if err != nil {
				t.Fatal(err)
			}
			ep := runEpoch(t, l, 1)
			l.Close()
			var want []string
			for _, p := range distributedSampler(13, w, r) {
				want = append(want, order[p])
			}
			if !slices.Equal(ep.keys, want) {
				t.Fatalf("W=%d rank %d: %v, want %v", w, r, ep.keys, want)
			}
			if own := strideLen(13, w, r); ep.repeats != len(want)-own {
				t.Fatalf("W=%d rank %d: %d repeats, want %d", w, r, ep.repeats, len(want)-own)
			}
		}
	}
}

// Exact: every sample once over the ranks, no repeats, each rank its own
// part in batches (the last partial), a rank without samples an empty
// epoch rather than an error; with Drop a rank drops its partial batch.
func TestExactEvaluation(t *testing.T) {
	folder, shards := makeTree(t, 5) // 15 images
	for _, path := range []string{folder, shards} {
		for _, w := range []int{1, 2, 4, 16} {
			var all []string
			for r := range w {
				l, err := Open(path, Options{Transform: Eval, Resolution: 16, Batch: 2, NumShards: w, ShardIdx: r, Exact: true})
				if err != nil {
					t.Fatal(err)
				}
				ep := runEpoch(t, l, 0)
				if ep.repeats != 0 || ep.nb != l.StepsPerEpoch() || len(ep.keys) != l.SamplesPerEpoch() || len(ep.keys) != l.Len() {
					t.Fatalf("%s W=%d rank %d: %d rows (%d repeats) in %d batches; loader says %d samples, %d steps, Len %d",
						path, w, r, len(ep.keys), ep.repeats, ep.nb, l.SamplesPerEpoch(), l.StepsPerEpoch(), l.Len())
				}
				l.Close()
				all = append(all, ep.keys...)
			}
			slices.Sort(all)
			if len(all) != 15 || len(slices.Compact(slices.Clone(all))) != 15 {
				t.Fatalf("%s W=%d: %d rows over the ranks, want each of 15 once", path, w, len(all))
			}
		}
	}
	l, err := Open(folder, Options{Transform: None, Batch: 2, NumShards: 2, ShardIdx: 1, Exact: true, Drop: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if ep := runEpoch(t, l, 0); len(ep.keys) != 6 || l.StepsPerEpoch() != 3 {
		t.Fatalf("exact+drop rank 1 of 2 (7 samples, batch 2): %d rows, %d steps; want 6 rows in 3", len(ep.keys), l.StepsPerEpoch())
	}
}

// A loader that loads a state between epochs (SetResume, as `faster
// serve` does for the Python client) serves exactly the rest of the
// epoch, also with another world size and from one rank's state filled in
// by FillLockstep; a streamed dataset resumes with the same ranks.
func TestSetResumeServesTheRest(t *testing.T) {
	folder, shards := makeTree(t, 7) // 21 images
	type run struct {
		path   string
		global bool
	}
	for _, rn := range []run{{folder, false}, {shards, true}, {shards, false}} {
		opts := func(w, r int) Options {
			return Options{Transform: None, Seed: 5, Batch: 2, NumShards: w, ShardIdx: r, GlobalShuffle: rn.global}
		}
		// Two ranks take 3 steps each in lockstep; rank 0's state is saved.
		var served []string
		var st State
		for r := range 2 {
			l, err := Open(rn.path, opts(2, r))
			if err != nil {
				t.Fatal(err)
			}
			k := 0
			for b, err := range l.IterEpoch(context.Background(), 1) {
				if err != nil {
					t.Fatal(err)
				}
				for i := range b.Valid - b.Repeats {
					served = append(served, b.Items[i].Key)
				}
				b.Release()
				if k++; k == 3 {
					break
				}
			}
			if r == 0 {
				if st, err = l.State(); err != nil {
					t.Fatal(err)
				}
				seg := &st.Segments[len(st.Segments)-1]
				seg.Steps, seg.Batch = 3, 2
			}
			l.Close()
		}
		worlds := []int{2, 3}
		if !rn.global && rn.path == shards {
			worlds = []int{2} // a stream resumes with its ranks only
		}
		for _, w := range worlds {
			rest := slices.Clone(served)
			for r := range w {
				l, err := Open(rn.path, opts(w, r))
				if err != nil {
					t.Fatal(err)
				}
				runEpoch(t, l, 0) // a long-lived loader: another epoch ran before
				if err := l.SetResume(st); err != nil {
					t.Fatalf("%s W=%d: %v", rn.path, w, err)
				}
				rest = append(rest, runEpoch(t, l, 1).first...)
				// The next epoch is whole again.
				if n := len(runEpoch(t, l, 2).first); n != l.Len() {
					t.Fatalf("%s: epoch after the resumed one served %d of %d", rn.path, n, l.Len())
				}
				l.Close()
			}
			slices.Sort(rest)
			if len(rest) != 21 || len(slices.Compact(slices.Clone(rest))) != 21 {
				t.Fatalf("%s global=%v W=%d: served before + after = %d rows, want each of 21 once: %v", rn.path, rn.global, w, len(rest), rest)
			}
		}
		if !rn.global && rn.path == shards {
			l, err := Open(rn.path, opts(3, 0))
			if err != nil {
				t.Fatal(err)
			}
			if err := l.SetResume(st); err == nil {
				t.Fatal("a streamed state resumed with another world size")
			}
			l.Close()
		}
	}
}

func TestFillLockstep(t *testing.T) {
	s := State{Version: StateVersion, Samples: 10, Segments: []Segment{{World: 3, Consumed: []int{3, -1, -1}, Steps: 3, Batch: 1}}}
	got, err := FillLockstep(s)
	if err != nil {
		t.Fatal(err)
	}
	// Parts of 10 over 3 ranks: 4, 3, 3.
	if !slices.Equal(got.Segments[0].Consumed, []int{3, 3, 3}) || s.Segments[0].Consumed[1] != -1 {
		t.Fatalf("filled %v (input now %v)", got.Segments[0].Consumed, s.Segments[0].Consumed)
	}
	s.Segments[0] = Segment{World: 3, Consumed: []int{4, -1, -1}}
	if got, _ = FillLockstep(s); !slices.Equal(got.Segments[0].Consumed, []int{4, 3, 3}) {
		t.Fatalf("filled without steps: %v, want capped at each part", got.Segments[0].Consumed)
	}
	s.Segments[0] = Segment{World: 2, Consumed: []int{-1, -1}}
	if _, err := FillLockstep(s); err == nil {
		t.Fatal("a segment without any count was filled")
	}
}

// A file deleted while the epoch runs is a bad sample: skipped and listed
// under the skip policy, named under stop (issue 31 item 15: before, the
// skip policy stopped on it).
func TestFileDeletedMidRunIsSkipped(t *testing.T) {
	folder, _ := makeTree(t, 4) // 12 images
	l, err := Open(folder, Options{Transform: Eval, Resolution: 16, Batch: 4, BadData: BadDataPolicy{Skip: true, MaxBad: 5}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Remove(filepath.Join(folder, "bee", "002.jpg")); err != nil {
		t.Fatal(err)
	}
	ep := runEpoch(t, l, 0)
	if len(ep.first) != 11 || len(l.Bad()) != 1 || !strings.Contains(l.Bad()[0].Reason, "removed since") {
		t.Fatalf("%d samples served, bad %+v", len(ep.first), l.Bad())
	}
	stop, err := Open(folder, Options{Transform: Eval, Resolution: 16, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer stop.Close()
	os.Remove(filepath.Join(folder, "cat", "001.jpg"))
	for _, err := range stop.IterEpoch(context.Background(), 0) {
		if err != nil {
			if !strings.Contains(err.Error(), "001.jpg") {
				t.Fatalf("stop policy: %v", err)
			}
			return
		}
	}
	t.Fatal("stop policy: a deleted file was not an error")
}
