package loader

import (
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
	f.Fuzz(func(t *testing.T, b []byte) {
		p := "state.json"
		s, err := ParseState(b, p)
		if err != nil {
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if _, err := MergeStates(s, s); err != nil {
			t.Fatalf("merging a state with itself: %v", err)
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
