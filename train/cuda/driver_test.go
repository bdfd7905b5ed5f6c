//go:build cgo

package cuda

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
)

// A real CUDA driver library (Debian's libcuda1, no GPU behind it), found
// by the loader through LD_LIBRARY_PATH in a child process: it opens,
// every driver function declared resolves in it, Open fails with cuInit's
// own error (not a load error), and Probe names the driver's version and
// that error. And the names are the ones to call: each declared symbol is
// exported, and none has a newer version the driver also exports
// (cuMemAlloc beside cuMemAlloc_v2 is the legacy 32-bit entry point a
// header's #define would have steered a C caller away from; a dlsym
// caller must name the _v2 itself). The stand-ins of TestLoaderWithStubs
// are built from the declarations, so only a real driver can catch a
// wrong name.
func TestRealDriverWithoutGPU(t *testing.T) {
	if os.Getenv("FASTER_CUDA_DRIVER_CHILD") == "1" {
		driverChild()
		return
	}
	if load(); loaded(Driver) {
		t.Skip("a driver is installed here: the device tests use it")
	}
	lib := filepath.Join(testenv.CUDALibDir, "libcuda.so.1")
	exported := testenv.Exports(t, lib)
	out := inChild(t, "TestRealDriverWithoutGPU", "FASTER_CUDA_DRIVER_CHILD", testenv.CUDALibDir)
	var r driverReport
	line, _, _ := strings.Cut(string(out), "\n")
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("child's report: %v\n%s", err, out)
	}
	t.Logf("probe: %s", r.Probe)
	if !r.Opened {
		t.Fatalf("the driver did not open: %+v", r.Attempts)
	}
	for _, s := range r.Unresolved {
		t.Errorf("%s: not exported by the real driver", s)
	}
	if r.LoadError || !strings.HasPrefix(r.Open, "cuda: cuInit: CUDA_ERROR_") {
		t.Errorf("Open = %q (a load error: %v), want cuInit's error", r.Open, r.LoadError)
	}
	if m := regexp.MustCompile(`^driver (\d+)\.(\d+) found, cuInit failed: cuda: cuInit: CUDA_ERROR_`).FindStringSubmatch(r.Probe); m == nil {
		t.Errorf("Probe = %q, want the driver's version and cuInit's error", r.Probe)
	} else if major, _ := strconv.Atoi(m[1]); major < 12 {
		t.Errorf("Probe = %q: a driver before CUDA 12 (the backend's graphs need 12)", r.Probe)
	}

	// The toolkit's libraries in the order the driver runs: Debian's 535
	// is CUDA 12.2, so libcudart.so.12 is tried before .so.13 (here
	// neither is installed: both attempts fail, in that order).
	if r.Driver/1000 != 12 {
		t.Errorf("DriverVersion = %d, want Debian's 535 driver's CUDA 12.x", r.Driver)
	}
	var tried []string
	for _, a := range r.Attempts {
		if a.Lib == Runtime {
			tried = append(tried, a.Soname)
		}
	}
	if want := []string{"libcudart.so.12", "libcudart.so.13"}; !slices.Equal(tried, want) {
		t.Errorf("the runtime's sonames tried under driver %d: %v, want %v", r.Driver, tried, want)
	}

	for _, name := range newerVersions(Decls, exported) {
		t.Error(name)
	}
	// The runtime's functions (its version, for Probe) by name in CUDA
	// 11.8's libcudart (the loader wants 12 or 13; the names are older).
	rt := testenv.Exports(t, filepath.Join(testenv.CUDALibDir, "libcudart.so.11.0"))
	for _, d := range Decls {
		if d.Lib == Runtime && !rt[d.Symbol] {
			t.Errorf("%s: not exported by libcudart 11.8", d.Symbol)
		}
	}
}

// newerVersions lists, for each driver function of decls, a newer
// versioned name the library exports (base_vN past the declared one) that
// the loader would not look up first (exportNames), and any declared
// symbol it does not export under any of its names.
func newerVersions(decls []Decl, exported map[string]bool) []string {
	var bad []string
	suffix := regexp.MustCompile(`^(.*)_v(\d+)$`)
	for _, d := range decls {
		if d.Lib != Driver {
			continue
		}
		names := exportNames[d.Symbol]
		if len(names) == 0 {
			names = []string{d.Symbol}
		}
		first := ""
		for _, n := range names {
			if exported[n] {
				first = n
				break
			}
		}
		if first == "" {
			bad = append(bad, fmt.Sprintf("%s: exported under none of %v", d.Symbol, names))
			continue
		}
		base, v := first, 1
		if m := suffix.FindStringSubmatch(first); m != nil {
			v, _ = strconv.Atoi(m[2]) // digits: the pattern's
			base = m[1]
		}
		for n := v + 1; n <= 9; n++ {
			if name := fmt.Sprintf("%s_v%d", base, n); exported[name] {
				bad = append(bad, fmt.Sprintf("%s: the loader resolves %s, the driver also exports %s", d.Symbol, first, name))
			}
		}
	}
	return bad
}

// driverReport is what the child saw.
type driverReport struct {
	Attempts   []Attempt
	Opened     bool
	Unresolved []string // driver functions declared and not resolved
	Open       string   // Open's error
	LoadError  bool     // it is a *LoadError
	Probe      string
	Driver     int // DriverVersion
}

// driverChild runs in TestRealDriverWithoutGPU's child process.
func driverChild() {
	r := driverReport{Attempts: load(), Opened: loaded(Driver)}
	names, libs, ok := resolved()
	for i := range names {
		if libs[i] == Driver && !ok[i] {
			r.Unresolved = append(r.Unresolved, names[i])
		}
	}
	_, err := Open(Options{NoCache: true})
	if err != nil {
		r.Open = err.Error()
		var le *LoadError
		r.LoadError = errors.As(err, &le)
	}
	r.Probe = Probe()
	r.Driver = DriverVersion()
	b, _ := json.Marshal(r)
	fmt.Printf("%s\n", b)
}

// newerVersions on names of its own: the legacy name beside a _v2, a _v2
// beside a _v3, a symbol missing; and the renamed timer of exportNames,
// looked up as _v2 first, is no finding.
func TestNewerVersions(t *testing.T) {
	decls := []Decl{
		{"cuMemAlloc", Driver, ""},
		{"cuFoo_v2", Driver, ""},
		{"cuGone", Driver, ""},
		{"cuEventElapsedTime", Driver, ""},
		{"cuFine_v2", Driver, ""},
		{"cublasOther", CUBLAS, ""},
	}
	exported := map[string]bool{"cuMemAlloc": true, "cuMemAlloc_v2": true, "cuFoo_v2": true, "cuFoo_v3": true,
		"cuEventElapsedTime": true, "cuEventElapsedTime_v2": true, "cuFine_v2": true, "cuFine": true}
	got := strings.Join(newerVersions(decls, exported), "\n")
	want := strings.Join([]string{
		"cuMemAlloc: the loader resolves cuMemAlloc, the driver also exports cuMemAlloc_v2",
		"cuFoo_v2: the loader resolves cuFoo_v2, the driver also exports cuFoo_v3",
		"cuGone: exported under none of [cuGone]",
	}, "\n")
	if got != want {
		t.Errorf("newerVersions:\n%s\nwant:\n%s", got, want)
	}
}
