package repocheck

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The CLI is thin (docs/architecture.md: flags → options, one call into a
// library room, printing), and stays so by measure: cmd/faster's non-test
// files hold at most maxCmdLines lines, and none of its functions (with
// the function literals inside it) is longer than maxFuncLines lines. A
// command that grows past either has logic that belongs in a room below.
const (
	maxCmdLines  = 2500
	maxFuncLines = 100
)

func TestCmdSize(t *testing.T) {
	dir := filepath.Join(root(t), "cmd", "faster")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	lines, counted := 0, 0
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		counted++
		lines += bytes.Count(src, []byte("\n"))
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
			if n := end.Line - start.Line + 1; n > maxFuncLines {
				t.Errorf("%s:%d: %s is %d lines, more than %d: move its logic into the room it belongs to",
					filepath.Base(path), start.Line, funcName(fn), n, maxFuncLines)
			}
		}
	}
	if counted < 5 {
		t.Fatalf("only %d non-test files under %s", counted, dir)
	}
	if lines > maxCmdLines {
		t.Errorf("cmd/faster: %d non-test lines in %d files, more than %d: the CLI parses flags, calls one library function and prints",
			lines, counted, maxCmdLines)
	}
}

// funcName is a function's name as its declaration reads, with its
// receiver's type for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
