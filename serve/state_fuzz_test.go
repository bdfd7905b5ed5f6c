package serve

import (
	"strings"
	"testing"

	"github.com/faster-training/faster/loader"
)

// FuzzConsumerStates: whatever list of states a consumer sends with an
// epoch request, parseStates returns at most loader.MaxWorld states, each
// within loader.State's bounds (Validate), or an error naming the
// consumer's states; never a panic. Merging what it returns fails only
// with loader.ErrResume.
func FuzzConsumerStates(f *testing.F) {
	st := `{"version":2,"epoch":1,"seed":3,"samples":9,"fingerprint":"v1:0123456789abcdef","segments":[{"world":2,"consumed":[%s]}]}`
	f.Add([]byte("[" + strings.Replace(st, "%s", "1,-1", 1) + "," + strings.Replace(st, "%s", "-1,2", 1) + "]"))
	f.Add([]byte("[" + strings.Replace(st, "%s", "1,-1", 1) + "," + strings.Replace(strings.Replace(st, "%s", "-1,2", 1), "0123", "3210", 1) + "]"))
	f.Add([]byte(`[{"version":2,"epoch":-1,"samples":4}]`))
	f.Add([]byte(`[{},{},{}]`))
	f.Add([]byte(`[] []`))
	f.Add([]byte(`[{"version":2,"samples":4,"segments":[{"world":1,"consumed":[1],"steps":-5,"batch":2}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		states, err := parseStates(b)
		if err != nil {
			if !strings.Contains(err.Error(), "the consumer's state") {
				t.Fatalf("error does not name the consumer's states: %v", err)
			}
			return
		}
		if len(states) > loader.MaxWorld {
			t.Fatalf("%d states", len(states))
		}
		for i, s := range states {
			if err := s.Validate(); err != nil {
				t.Fatalf("state %d parsed out of bounds: %v", i, err)
			}
		}
		if len(states) > 0 {
			if _, err := loader.MergeStates(states...); err != nil && !strings.Contains(err.Error(), loader.ErrResume.Error()) {
				t.Fatalf("MergeStates: %v", err)
			}
		}
	})
}
