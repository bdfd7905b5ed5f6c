package repocheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// root is the repository's top directory (this package is two below it).
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", r, err)
	}
	return r
}

// Every fuzz target, as the Go parser finds them in the test files, is in
// the list scripts/fuzz.sh (make fuzz, make test) runs: none is written and
// then never fuzzed.
func TestFuzzTargetsAllRun(t *testing.T) {
	r := root(t)
	var want []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(r, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != r && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Fuzz") || fn.Type.Params.NumFields() != 1 {
				continue
			}
			rel, _ := filepath.Rel(r, filepath.Dir(path))
			want = append(want, "./"+filepath.ToSlash(rel)+":"+fn.Name.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatal("the parser found no fuzz targets")
	}
	out, err := exec.Command(filepath.Join(r, "scripts", "fuzz.sh"), "1s", "--list").Output()
	if err != nil {
		t.Fatalf("scripts/fuzz.sh --list: %v", err)
	}
	got := strings.Fields(string(out))
	slices.Sort(want)
	want = slices.Compact(want)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("fuzz target %s is not run by scripts/fuzz.sh (it lists %v)", w, got)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("scripts/fuzz.sh lists %s, which is no fuzz target", g)
		}
	}
	t.Logf("%d fuzz targets, all run", len(want))
}
