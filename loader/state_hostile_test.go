package loader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A state whose fields cannot describe any epoch (issue 41 item 10) is
// refused where it is parsed, naming the file and the field, before a
// loader sees it (before: every one parsed; epoch 2^62 then ended `faster
// serve`'s session, the others were refused later or not at all).
func TestParseStateRefusesImpossibleFields(t *testing.T) {
	seg := func(s string) string {
		return `{"version":2,"epoch":1,"seed":3,"shuffle":true,"samples":10,"segments":[` + s + `]}`
	}
	many := strings.TrimSuffix(strings.Repeat(`{"world":1,"consumed":[0]},`, MaxSegments+1), ",")
	cases := []struct{ name, json, field string }{
		{"epoch-negative", `{"version":2,"epoch":-1,"samples":10}`, "epoch -1"},
		{"epoch-huge", `{"version":2,"epoch":4611686018427387904,"samples":10}`, "epoch 4611686018427387904"},
		{"samples-negative", `{"version":2,"epoch":0,"samples":-5}`, "samples -5"},
		{"world-zero", seg(`{"world":0,"consumed":[]}`), "segments[0].world 0"},
		{"world-huge", seg(`{"world":4294967296,"consumed":[1]}`), "segments[0].world 4294967296"},
		{"counts-mismatch", seg(`{"world":2,"consumed":[1,2,3]}`), "segments[0].consumed: 3 counts for world 2"},
		{"consumed-below", seg(`{"world":2,"consumed":[1,-2]}`), "segments[0].consumed[1] -2"},
		{"consumed-past", seg(`{"world":1,"consumed":[11]}`), "segments[0].consumed[0] 11"},
		{"steps-negative", seg(`{"world":1,"consumed":[2],"steps":-5,"batch":2}`), "segments[0].steps -5"},
		{"batch-negative", seg(`{"world":1,"consumed":[2],"steps":1,"batch":-2}`), "segments[0].batch -2"},
		{"steps-overflow", seg(`{"world":1,"consumed":[2],"steps":4611686018427387904,"batch":4}`), "segments[0].steps 4611686018427387904"},
		{"second-segment", seg(`{"world":1,"consumed":[2]},{"world":2,"consumed":[1]}`), "segments[1].consumed"},
		{"too-many-segments", seg(many), fmt.Sprintf("%d segments", MaxSegments+1)},
		{"fingerprint-long", `{"version":2,"epoch":0,"samples":1,"fingerprint":"` + strings.Repeat("f", 300) + `"}`, "fingerprint"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseState([]byte(tc.json), "st.json")
			if err == nil || !strings.Contains(err.Error(), "st.json") || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("ParseState: %v; want an error naming st.json and %q", err, tc.field)
			}
			if !errors.Is(err, ErrResume) {
				t.Fatalf("%v is not ErrResume", err)
			}
		})
	}
	// Every problem at once.
	_, err := ParseState([]byte(`{"version":2,"epoch":-1,"samples":-1,"segments":[{"world":1,"consumed":[-3],"steps":-1}]}`), "st.json")
	for _, f := range []string{"epoch -1", "samples -1", "consumed[0] -3", "steps -1"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Fatalf("ParseState: %v; want every problem, %q among them", err, f)
		}
	}
	// A state built in Go (Options.Resume, SetResume) is checked the same
	// way.
	folder, _ := makeTree(t, 1)
	l, err := Open(folder, Options{Transform: None, Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.SetResume(State{Version: StateVersion, Epoch: 1 << 62, Samples: 3, Shuffle: true}); err == nil || !strings.Contains(err.Error(), "epoch") {
		t.Fatalf("SetResume with epoch 2^62: %v", err)
	}
}

// A streamed dataset's state with negative steps, or more rows served than
// the rank's epoch has, is refused (issue 41 item 10: before, steps -5 of
// batch 2 made the resumed epoch 10 rows longer than what was left).
func TestStreamStateImpossibleStepsRefused(t *testing.T) {
	_, shards := makeTree(t, 4) // 12 images, 5 shards
	opts := Options{Transform: None, Seed: 2, Batch: 2}
	l, err := Open(shards, opts)
	if err != nil {
		t.Fatal(err)
	}
	st := State{Version: StateVersion, Epoch: 0, Seed: 2, Shuffle: true, Samples: l.DatasetLen(), Stream: true, Fingerprint: l.Fingerprint(),
		Segments: []Segment{{World: 1, Consumed: []int{4}, Steps: 2, Batch: 2}}}
	rows := l.SamplesPerEpoch()
	l.Close()
	if rows != 12 {
		t.Fatalf("%d rows per epoch, want 12", rows)
	}
	// The state as saved: the rest of the epoch, 8 rows.
	good := st
	opts.Resume = &good
	l, err = Open(shards, opts)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(runEpoch(t, l, 0).keys); n != 8 {
		t.Fatalf("resumed after 4 rows: %d served, want 8", n)
	}
	l.Close()
	for _, tc := range []struct {
		seg  Segment
		want string
	}{
		{Segment{World: 1, Consumed: []int{4}, Steps: -5, Batch: 2}, "segments[0].steps -5"},
		{Segment{World: 1, Consumed: []int{4}, Steps: 2, Batch: -2}, "segments[0].batch -2"},
		{Segment{World: 1, Consumed: []int{4}, Steps: 7, Batch: 2}, "segments[0].steps 7 of batch 2: 14 rows"}, // of a 12-row epoch
	} {
		bad := tc.seg
		s := st
		s.Segments = []Segment{bad}
		opts.Resume = &s
		l, err := Open(shards, opts)
		if err == nil {
			n := len(runEpoch(t, l, 0).keys)
			l.Close()
			t.Fatalf("steps %d batch %d: accepted, %d rows served", bad.Steps, bad.Batch, n)
		}
		if !errors.Is(err, ErrResume) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("steps %d batch %d: %v", bad.Steps, bad.Batch, err)
		}
	}
}

// A state names the data it was saved on (State.Fingerprint): another
// dataset of the same size is refused naming both fingerprints (issue 41
// item 10: before, accepted, serving "the rest" of an order of other
// samples); the same data moved elsewhere, or a state saved before
// fingerprints (none), resumes.
func TestStateRefusesOtherDataSameSize(t *testing.T) {
	folder, shards := makeTree(t, 3) // 9 images
	other, otherShards := makeTreeShards(t, 3, 3)
	// Another dataset of the same size and classes: one file named
	// otherwise.
	if err := os.Rename(filepath.Join(other, "bee", "001.jpg"), filepath.Join(other, "bee", "001b.jpg")); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(t.TempDir(), "moved")
	if err := os.Rename(folder, moved); err != nil {
		t.Fatal(err)
	}
	opts := func(global bool) Options {
		return Options{Transform: None, Seed: 4, Batch: 2, GlobalShuffle: global}
	}
	for _, tc := range []struct {
		name        string
		from, same  string
		other       string
		global      bool
		streamState bool
	}{
		{"imagefolder", moved, moved, other, false, false},
		{"shards-indexed", shards, shards, otherShards, true, false},
		{"shards-streamed", shards, shards, otherShards, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Open(tc.from, opts(tc.global))
			if err != nil {
				t.Fatal(err)
			}
			for b, err := range l.IterEpoch(context.Background(), 1) {
				if err != nil {
					t.Fatal(err)
				}
				b.Release()
				break
			}
			st, err := l.State()
			l.Close()
			if err != nil {
				t.Fatal(err)
			}
			if st.Fingerprint == "" || len(st.Segments) != 1 {
				t.Fatalf("state %+v: no fingerprint or segment", st)
			}
			b, _ := json.Marshal(st)
			if st, err = ParseState(b, "st.json"); err != nil {
				t.Fatal(err)
			}
			o := opts(tc.global)
			o.Resume = &st
			if l, err := Open(tc.same, o); err != nil {
				t.Fatalf("the same data: %v", err)
			} else {
				l.Close()
			}
			ol, err := Open(tc.other, opts(tc.global))
			if err != nil {
				t.Fatal(err)
			}
			ofp := ol.Fingerprint()
			ol.Close()
			if ofp == st.Fingerprint {
				t.Fatalf("both datasets have fingerprint %s", ofp)
			}
			_, err = Open(tc.other, o)
			if err == nil || !errors.Is(err, ErrResume) || !strings.Contains(err.Error(), st.Fingerprint) || !strings.Contains(err.Error(), ofp) {
				t.Fatalf("another dataset of %d samples: %v; want ErrResume naming %s and %s", st.Samples, err, st.Fingerprint, ofp)
			}
			// A state saved before fingerprints resumes (the checks it
			// had still hold).
			old := st
			old.Fingerprint = ""
			o.Resume = &old
			if l, err := Open(tc.same, o); err != nil {
				t.Fatalf("a state without a fingerprint: %v", err)
			} else {
				l.Close()
			}
			// States of two datasets do not merge.
			o2 := st
			o2.Fingerprint = ofp
			if _, err := MergeStates(st, o2); err == nil || !strings.Contains(err.Error(), ofp) {
				t.Fatalf("merging states of two datasets: %v", err)
			}
		})
	}
}

// A forged state whose runs each leave a band of unserved positions as
// wide as what is left (one rank of many consumed, the others nothing,
// run after run) is refused before the bands are listed: in all they may
// list at most the epoch's samples (before: 1,024 such runs of 1,024
// ranks, 4 MB of JSON, listed about 0.6 × 1,024 × the dataset's size:
// 6.6 GB on ImageNet's 1.28 million).
func TestStateBandsBounded(t *testing.T) {
	const n, world = 100_000, 100
	var segs []Segment
	left := n
	for range 40 {
		c := make([]int, world)
		c[0] = left / world
		left -= c[0]
		segs = append(segs, Segment{World: world, Consumed: c})
	}
	_, err := remaining(identity(n), segs)
	if err == nil || !errors.Is(err, ErrResume) || !strings.Contains(err.Error(), "unserved") {
		t.Fatalf("40 runs each leaving ~%d positions unserved behind one rank: %v", n, err)
	}
	// A lockstep state's bands (ranks a bad sample or two apart) resume.
	c := make([]int, world)
	for r := range c {
		c[r] = 300 + r%3
	}
	rem, err := remaining(identity(n), []Segment{{World: world, Consumed: c}, {World: world, Consumed: c}})
	if err != nil {
		t.Fatal(err)
	}
	if want := n - 2*(300*world+world/3*3); rem.Len() != want {
		t.Fatalf("%d left, want %d", rem.Len(), want)
	}
}
