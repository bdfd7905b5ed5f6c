package loader

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadSpecArg reads a spec as faster serve's --spec takes it: a file,
// - for stdin, or the JSON itself, each named for a message; a file that
// cannot be opened has no name, a bad spec its name (moved here from
// cmd/faster, whose TestServeSpecProblems runs it end to end).
func TestReadSpecArg(t *testing.T) {
	file := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(file, []byte(`{"batch": 32}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		arg, stdin, name string
	}{
		{file, "", file},
		{"-", `{"batch": 32}`, "(stdin)"},
		{` {"batch": 32}`, "", "(inline JSON)"},
	} {
		s, name, err := ReadSpecArg(c.arg, strings.NewReader(c.stdin), Defaults())
		if err != nil || name != c.name || s.Batch != 32 || s.Resolution != Defaults().Resolution {
			t.Errorf("%q: batch %d resolution %d, name %q, %v; want 32, the default, %q", c.arg, s.Batch, s.Resolution, name, err, c.name)
		}
	}
	if _, name, err := ReadSpecArg(filepath.Join(t.TempDir(), "none"), nil, Defaults()); !os.IsNotExist(err) || name != "" {
		t.Errorf("a missing file: %q %v", name, err)
	}
	base := Defaults()
	base.Batch = 7
	s, name, err := ReadSpecArg(`{"batch": "x"}`, nil, base)
	if err == nil || name != "(inline JSON)" || s.Batch != 7 {
		t.Errorf("a bad spec: batch %d, %q, %v; want the base's 7 and an error", s.Batch, name, err)
	}
}
