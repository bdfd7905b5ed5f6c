package loader

import (
	"testing"
)

// A profile counts every sample in each phase the recipe runs, on either
// kind of dataset, and serves exactly what an unprofiled loader serves.
func TestProfilePhases(t *testing.T) {
	folder, shards := makeTree(t, 4) // 12 images
	for _, c := range []struct {
		data      string
		transform Transform
		want      []string // phases that must have taken time
	}{
		{folder, Train, []string{"read", "decode", "crop/resize", "normalise/convert + batch copy"}},
		{shards, Eval, []string{"read", "decode", "crop/resize", "normalise/convert + batch copy"}},
		{folder, None, []string{"read"}},
	} {
		opts := Options{Transform: c.transform, Resolution: 32, Batch: 5, Seed: 3}
		plain := runEpoch(t, open(t, c.data, opts), 1)
		prof := new(Profile)
		opts.Profile = prof
		got := runEpoch(t, open(t, c.data, opts), 1)
		if len(got.keys) != len(plain.keys) {
			t.Fatalf("%s %s: %d rows profiled, %d without", c.data, c.transform, len(got.keys), len(plain.keys))
		}
		for i := range got.keys {
			if got.keys[i] != plain.keys[i] || len(got.rows) > 0 && string(got.rows[i]) != string(plain.rows[i]) {
				t.Fatalf("%s %s: row %d differs with a profile", c.data, c.transform, i)
			}
		}
		if n := prof.reads.Load(); n != 12 {
			t.Errorf("%s %s: %d reads timed, want 12", c.data, c.transform, n)
		}
		wantDecoded := int64(12)
		if c.transform == None {
			wantDecoded = 0
		}
		if n := prof.decoded.Load(); n != wantDecoded {
			t.Errorf("%s %s: %d decodes timed, want %d", c.data, c.transform, n, wantDecoded)
		}
		r := prof.Report()
		took := map[string]bool{}
		sum := 0.0
		for _, ph := range r.Phases {
			took[ph.Name] = ph.MicrosPerItem > 0
			sum += ph.MicrosPerItem
		}
		for _, name := range c.want {
			if !took[name] {
				t.Errorf("%s %s: phase %q took no time: %+v", c.data, c.transform, name, r.Phases)
			}
		}
		if sum != r.MicrosPerItem || r.PerCoreImagesPS <= 0 {
			t.Errorf("%s %s: phases sum to %g, report says %g (%g images/s per core)", c.data, c.transform, sum, r.MicrosPerItem, r.PerCoreImagesPS)
		}
	}
}

func open(t *testing.T, path string, o Options) *Loader {
	t.Helper()
	l, err := Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}
