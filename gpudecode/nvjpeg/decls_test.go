package nvjpeg

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
)

var (
	declLine  = regexp.MustCompile(`^FASTER_NVJ_DECL\((\w+), (.+?), (\w+), \((.*)\)\)$`)
	constLine = regexp.MustCompile(`^FASTER_NVJ_CONST\((\w+), (\d+)\)$`)
)

// Decls is decls.h, line for line.
func TestDeclsMatchHeader(t *testing.T) {
	src, err := os.ReadFile("decls.h")
	if err != nil {
		t.Fatal(err)
	}
	var got []Decl
	for _, line := range strings.Split(string(src), "\n") {
		if !strings.HasPrefix(line, "FASTER_NVJ_DECL(") {
			continue
		}
		m := declLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("decls.h: cannot read %q", line)
		}
		lib := map[string]Library{"NVJPEG": NVJPEG, "CUDART": Runtime}[m[1]]
		got = append(got, Decl{Symbol: m[3], Lib: lib, C: m[2] + " " + m[3] + "(" + m[4] + ")"})
	}
	if len(got) != len(Decls) {
		t.Fatalf("decls.h has %d declarations, Decls %d", len(got), len(Decls))
	}
	for i := range got {
		if got[i] != Decls[i] {
			t.Errorf("decls.h %+v, Decls %+v", got[i], Decls[i])
		}
	}
}

// Consts is consts.h, line for line.
func TestConstsMatchHeader(t *testing.T) {
	src, err := os.ReadFile("consts.h")
	if err != nil {
		t.Fatal(err)
	}
	var got []Const
	for _, line := range strings.Split(string(src), "\n") {
		if m := constLine.FindStringSubmatch(line); m != nil {
			v, _ := strconv.Atoi(m[2])
			got = append(got, Const{m[1], v})
		}
	}
	if len(got) != len(Consts) {
		t.Fatalf("consts.h has %d values, Consts %d", len(got), len(Consts))
	}
	for i := range got {
		if got[i] != Consts[i] {
			t.Errorf("consts.h %+v, Consts %+v", got[i], Consts[i])
		}
	}
}

// Every function declared is exported, by that name, by a real nvJPEG
// (11.9, CUDA 11.8's, from Debian's libnvjpeg11) and a real runtime
// (libcudart 11.8), unpacked by scripts/setup.sh: the stand-ins of the
// loader's tests are built from the declarations, so only a real library
// catches a misspelt or renamed function. (The loader wants the 12 or 13
// sonames; the functions it calls all exist since 11.)
func TestRealLibraryExports(t *testing.T) {
	have := map[Library]map[string]bool{
		NVJPEG:  testenv.Exports(t, filepath.Join(testenv.CUDALibDir, "libnvjpeg.so.11")),
		Runtime: testenv.Exports(t, filepath.Join(testenv.CUDALibDir, "libcudart.so.11.0")),
	}
	for _, d := range Decls {
		if !have[d.Lib][d.Symbol] {
			t.Errorf("%s: not exported by the real %s", d.Symbol, d.Lib)
		}
	}
}
