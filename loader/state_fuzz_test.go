package loader

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

// FuzzState: any bytes load as a State or give an error naming the file;
// a loaded state, resumed over a dataset of its size, leaves a duplicate-
// free subset of the epoch's order of the size the segments imply, or is
// refused with ErrResume; merging it with itself never fails.
func FuzzState(f *testing.F) {
	f.Add([]byte(`{"version":1,"epoch":2,"seed":7,"shuffle":true,"samples":10,"segments":[{"world":2,"consumed":[3,2]}]}`))
	f.Add([]byte(`{"version":1,"epoch":0,"samples":5,"segments":[{"world":3,"consumed":[-1,1,0]}]}`))
	f.Add([]byte(`{"version":1,"samples":4,"segments":[{"world":1,"consumed":[9]}]}`))
	f.Add([]byte(`{"version":1,"samples":4,"segments":[{"world":0,"consumed":[]}]}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`{`))
	// The fields of today's states: fingerprints, a stream's steps and
	// batch, several runs, forged counts (issue 41).
	f.Add([]byte(`{"version":2,"epoch":2,"seed":7,"shuffle":true,"samples":10,"fingerprint":"v1:0123456789abcdef","segments":[{"world":2,"consumed":[3,2]}]}`))
	f.Add([]byte(`{"version":2,"epoch":0,"samples":12,"stream":true,"segments":[{"world":1,"consumed":[4],"steps":2,"batch":2}]}`))
	f.Add([]byte(`{"version":2,"epoch":0,"samples":12,"stream":true,"segments":[{"world":1,"consumed":[4],"steps":-5,"batch":2}]}`))
	f.Add([]byte(`{"version":2,"epoch":1,"samples":9,"segments":[{"world":3,"consumed":[1,-1,-1],"steps":1,"batch":1},{"world":2,"consumed":[2,2]}]}`))
	f.Add([]byte(`{"version":2,"epoch":-1,"samples":4}`))
	f.Add([]byte(`{"version":2,"epoch":4611686018427387904,"samples":4}`))
	f.Add([]byte(`{"version":2,"samples":4,"segments":[{"world":2,"consumed":[9,-7,1]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := "state.json"
		s, err := ParseState(b, p)
		if err != nil {
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		// What parsed is in bounds: nothing it sizes can overflow.
		if s.Epoch < 0 || s.Epoch > MaxEpoch || s.Samples < 0 || len(s.Segments) > MaxSegments || len(s.Fingerprint) > maxFingerprint {
			t.Fatalf("out of bounds, parsed: %+v", s)
		}
		for _, seg := range s.Segments {
			if seg.World < 1 || seg.World > MaxWorld || len(seg.Consumed) != seg.World || seg.Steps < 0 || seg.Batch < 0 ||
				(seg.Batch > 0 && seg.Steps > math.MaxInt/seg.Batch) {
				t.Fatalf("segment out of bounds, parsed: %+v", seg)
			}
		}
		// It saves and parses back as itself.
		if j, err := json.Marshal(s); err != nil {
			t.Fatal(err)
		} else if s2, err := ParseState(j, p); err != nil {
			t.Fatalf("round trip: %+v -> %s: %v", s, j, err)
		} else if j2, _ := json.Marshal(s2); !bytes.Equal(j, j2) {
			t.Fatalf("round trip: %s -> %s", j, j2)
		}
		if _, err := MergeStates(s, s); err != nil {
			t.Fatalf("merging a state with itself: %v", err)
		}
		if _, err := FillLockstep(s); err != nil && !errors.Is(err, ErrResume) {
			t.Fatalf("FillLockstep: %v is not ErrResume", err)
		}
		if s.Samples < 0 || s.Samples > 4096 {
			return // a loader of that size refuses it before any allocation (initResume)
		}
		order := epochPerm(s.Seed, s.Epoch, s.Samples, s.Shuffle)
		rem, err := remaining(order, s.Segments)
		if err != nil {
			return
		}
		left := order.Len()
		for _, seg := range s.Segments {
			for _, c := range seg.Consumed {
				left -= c
			}
		}
		seen := map[int]bool{}
		for i := range rem.Len() {
			g := rem.At(i)
			if g < 0 || g >= s.Samples || seen[g] {
				t.Fatalf("remaining holds %d twice or out of range", g)
			}
			seen[g] = true
		}
		if rem.Len() != left {
			t.Fatalf("%d left, the segments say %d", rem.Len(), left)
		}
	})
}
