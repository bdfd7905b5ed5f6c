package nvjpeg

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
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
