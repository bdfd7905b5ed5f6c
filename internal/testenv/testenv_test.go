package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRequired(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "1": true, "yes": true} {
		t.Setenv("FASTER_REQUIRE_DATA", v)
		if got := Required(); got != want {
			t.Errorf("FASTER_REQUIRE_DATA=%q: Required() = %v, want %v", v, got, want)
		}
	}
}

// recorder is a testing.TB that records whether it was skipped or failed
// (both stop the test function; here they only record).
type recorder struct {
	testing.TB
	skipped, failed bool
}

func (r *recorder) Helper()                   {}
func (r *recorder) Skipf(string, ...any)      { r.skipped = true }
func (r *recorder) Fatalf(string, ...any)     { r.failed = true }
func (r *recorder) Errorf(f string, a ...any) { r.failed = true }

// A missing file skips, or fails under FASTER_REQUIRE_DATA=1; a present
// one does neither.
func TestMissing(t *testing.T) {
	present := filepath.Join(t.TempDir(), "here")
	if err := os.WriteFile(present, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	absent := filepath.Join(t.TempDir(), "absent")
	for _, req := range []string{"", "1"} {
		t.Setenv("FASTER_REQUIRE_DATA", req)
		r := &recorder{TB: t}
		File(r, absent)
		if r.skipped == (req == "1") || r.failed != (req == "1") {
			t.Errorf("FASTER_REQUIRE_DATA=%q, missing file: skipped %v failed %v", req, r.skipped, r.failed)
		}
		r = &recorder{TB: t}
		if got := File(r, present); got != present || r.skipped || r.failed {
			t.Errorf("FASTER_REQUIRE_DATA=%q, present file: %q skipped %v failed %v", req, got, r.skipped, r.failed)
		}
	}
}
