package cuda

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var (
	declLine  = regexp.MustCompile(`^FASTER_CUDA_DECL\((\w+), (.+?), (\w+), \((.*)\)\)$`)
	constLine = regexp.MustCompile(`^FASTER_CUDA_CONST\((\w+), (-?\d+)\)$`)
	libEnum   = regexp.MustCompile(`(?m)^\s*FASTER_LIB_(\w+),`)
)

// Decls is decls.h, line for line: symbol, library and C declaration.
func TestDeclsMatchHeader(t *testing.T) {
	src, err := os.ReadFile("decls.h")
	if err != nil {
		t.Fatal(err)
	}
	var got []Decl
	for _, line := range strings.Split(string(src), "\n") {
		if !strings.HasPrefix(line, "FASTER_CUDA_DECL(") {
			continue
		}
		m := declLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("decls.h: cannot read %q", line)
		}
		lib := -1
		for l, x := range libraries {
			if strings.EqualFold(x.name, m[1]) || (m[1] == "DRIVER" && l == int(Driver)) {
				lib = l
			}
		}
		if lib < 0 {
			t.Fatalf("decls.h: library %s unknown", m[1])
		}
		got = append(got, Decl{Symbol: m[3], Lib: Library(lib), C: m[2] + " " + m[3] + "(" + m[4] + ")"})
	}
	if len(got) != len(Decls) {
		t.Fatalf("decls.h has %d declarations, Decls %d", len(got), len(Decls))
	}
	for i := range got {
		if got[i] != Decls[i] {
			t.Errorf("decls.h %+v, Decls %+v", got[i], Decls[i])
		}
	}
	seen := map[string]bool{}
	for _, d := range Decls {
		if seen[d.Symbol] {
			t.Errorf("%s declared twice", d.Symbol)
		}
		seen[d.Symbol] = true
		if !strings.Contains(d.C, " "+d.Symbol+"(") {
			t.Errorf("%s: declaration %q names another symbol", d.Symbol, d.C)
		}
	}
	// Every library has its symbols, and dl.h's enum is the Library order.
	for l := range libraries {
		n := 0
		for _, d := range Decls {
			if d.Lib == Library(l) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s: no symbol declared (its load would prove nothing)", Library(l))
		}
	}
	h, _ := os.ReadFile("dl.h")
	enum := libEnum.FindAllStringSubmatch(string(h), -1)
	if len(enum) != len(libraries) {
		t.Fatalf("dl.h lists %d libraries, Go %d", len(enum), len(libraries))
	}
	for i, m := range enum {
		if want := strings.ToUpper(Library(i).String()); m[1] != want && !(i == int(Driver) && m[1] == "DRIVER") {
			t.Errorf("dl.h's library %d is %s, Go's %s", i, m[1], want)
		}
	}
}

func TestConstsMatchHeader(t *testing.T) {
	checkConsts(t, "consts.h", consts)
	checkConsts(t, "consts_dnn.h", dnnConsts)
	checkConsts(t, "consts_nccl.h", ncclConsts)
}

func checkConsts(t *testing.T, file string, consts map[string]int) {
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(src), "\n") {
		if !strings.HasPrefix(line, "FASTER_CUDA_CONST(") {
			continue
		}
		m := constLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("%s: cannot read %q", file, line)
		}
		v, _ := strconv.Atoi(m[2])
		if got, ok := consts[m[1]]; !ok || got != v {
			t.Errorf("%s %s = %d, Go %d (%v)", file, m[1], v, got, ok)
		}
		n++
	}
	if n != len(consts) {
		t.Errorf("%s has %d, Go %d", file, n, len(consts))
	}
}

func TestDescribe(t *testing.T) {
	noDriver := []Attempt{
		{Driver, "libcuda.so.1", "libcuda.so.1: cannot open shared object file: No such file or directory"},
		{NVRTC, "libnvrtc.so.13", "libnvrtc.so.13: cannot open shared object file"},
		{NVRTC, "libnvrtc.so.12", "libnvrtc.so.12: cannot open shared object file"},
	}
	if got, want := describe(noDriver, false), "no driver: tried libcuda.so.1 (libcuda.so.1: cannot open shared object file: No such file or directory), libnvrtc.so.13"; !strings.HasPrefix(got, want) {
		t.Errorf("describe = %q, want %q…", got, want)
	}
	withOptional := append(noDriver, Attempt{CUDNN, "libcudnn.so.9", "no"})
	if got, want := describe(withOptional, true), "no driver: tried libcuda.so.1 (libcuda.so.1: cannot open shared object file: No such file or directory)"; got != want {
		t.Errorf("short describe = %q, want %q", got, want)
	}
	noNVRTC := []Attempt{{Driver, "libcuda.so.1", ""}, {NVRTC, "libnvrtc.so.13", "nvrtcGetCUBIN missing"}}
	if got := describe(noNVRTC, false); !strings.HasPrefix(got, "no nvrtc: tried libnvrtc.so.13 (nvrtcGetCUBIN missing)") {
		t.Errorf("describe = %q", got)
	}
	ok := []Attempt{{Driver, "libcuda.so.1", ""}, {NVRTC, "libnvrtc.so.13", ""}, {CUDNN, "libcudnn.so.9", "not found"}}
	if got, want := describe(ok, false), "opened libcuda.so.1, libnvrtc.so.13; not libcudnn.so.9 (not found)"; got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := (Options{}).Validate(); err != nil {
		t.Error(err)
	}
	if err := (Options{Ordinal: -1}).Validate(); err == nil {
		t.Error("ordinal -1 accepted")
	}
	if _, err := Open(Options{Ordinal: -1}); err == nil {
		t.Error("Open took ordinal -1")
	}
}

// Every symbol with other export names is declared, each list ends with
// the declared name (the fallback where the renamed one is absent), and
// the probe checks the renamed one.
func TestExportNames(t *testing.T) {
	declared := map[string]bool{}
	for _, d := range Decls {
		declared[d.Symbol] = true
	}
	probe, err := os.ReadFile("probe/probe.cpp")
	if err != nil {
		t.Fatal(err)
	}
	for sym, names := range exportNames {
		if !declared[sym] || len(names) < 2 || names[len(names)-1] != sym {
			t.Errorf("%s: names %v: want a declared symbol, its other names first and itself last", sym, names)
		}
		if !strings.Contains(string(probe), "&::"+names[0]+")") {
			t.Errorf("probe.cpp does not check %s's first name %s", sym, names[0])
		}
	}
}

// TestForDriver: a toolkit library's sonames of a CUDA major above the
// driver's go last, the rest in their order; a library not named by the
// toolkit's major (cuDNN 9, NCCL 2), or no driver, keeps the order given.
func TestForDriver(t *testing.T) {
	for _, c := range []struct {
		lib    Library
		driver int
		want   []string
	}{
		{Runtime, 13000, []string{"libcudart.so.13", "libcudart.so.12"}},
		{Runtime, 13010, []string{"libcudart.so.13", "libcudart.so.12"}},
		{Runtime, 12080, []string{"libcudart.so.12", "libcudart.so.13"}},
		{Runtime, 0, []string{"libcudart.so.13", "libcudart.so.12"}},
		{NVRTC, 12020, []string{"libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so.13"}},
		{NVRTC, 11080, []string{"libnvrtc.so.11.2", "libnvrtc.so.13", "libnvrtc.so.12"}},
		{CUBLAS, 12020, []string{"libcublas.so.12", "libcublas.so.13"}},
		{CUBLASLt, 12020, []string{"libcublasLt.so.12", "libcublasLt.so.13"}},
		{CUDNN, 8000, []string{"libcudnn.so.9"}},
		{NCCL, 1000, []string{"libnccl.so.2"}},
		{Driver, 12020, []string{"libcuda.so.1"}},
	} {
		if got := sonamesFor(c.lib, c.driver); !slices.Equal(got, c.want) {
			t.Errorf("sonamesFor(%v, %d) = %v, want %v", c.lib, c.driver, got, c.want)
		}
	}
	if got := ForDriver([]string{"libx.so", "libnvjpeg.so.13", "libnvjpeg.so.12"}, 12000); !slices.Equal(got, []string{"libx.so", "libnvjpeg.so.12", "libnvjpeg.so.13"}) {
		t.Errorf("ForDriver with a soname of no major: %v", got)
	}
}
