package repocheck

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// generated lists each generated file with the command that writes it (to
// the path given as its last argument), as its //go:generate line runs it.
var generated = []struct {
	file string   // committed, relative to the repository root
	gen  []string // the generator and its arguments, before the output path
}{
	{"augment/kernels_unrolled.go", []string{"python3", "augment/internal/gen/gen_kernels.py"}},
}

// Every generated file is what its generator writes today: the generator
// runs into a temporary file and the bytes must equal the committed ones
// (an edit by hand, or a generator changed without regenerating, fails).
func TestGeneratedFilesFresh(t *testing.T) {
	r := root(t)
	for _, g := range generated {
		out := filepath.Join(t.TempDir(), filepath.Base(g.file))
		args := append(append([]string{}, g.gen[1:]...), out)
		cmd := exec.Command(g.gen[0], args...)
		cmd.Dir = r
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", g.gen, err, msg)
		}
		fresh, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(filepath.Join(r, g.file))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fresh, committed) {
			t.Errorf("%s differs from what %v writes now: run go generate ./%s", g.file, g.gen, filepath.Dir(g.file))
		}
	}
}

// The list above is every file marked as generated: a new generator must
// be added to it (and so to this check).
func TestGeneratedFilesListed(t *testing.T) {
	r := root(t)
	out, err := exec.Command("git", "-C", r, "grep", "-l", "-E", "^// Code generated .* DO NOT EDIT\\.$", "--", "*.go").Output()
	if err != nil {
		t.Fatalf("git grep: %v", err)
	}
	for _, f := range bytes.Fields(out) {
		found := false
		for _, g := range generated {
			found = found || g.file == string(f)
		}
		if !found {
			t.Errorf("%s is marked generated but not checked by TestGeneratedFilesFresh", f)
		}
	}
}
