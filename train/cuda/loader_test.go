//go:build cgo

package cuda

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The loader's table (dl.c, from decls.h) is Decls: same symbols, same
// libraries, same order; each resolved exactly when its library opened.
func TestLoaderTable(t *testing.T) {
	load()
	names, libs, ok := resolved()
	if len(names) != len(Decls) {
		t.Fatalf("loader has %d symbols, Decls %d", len(names), len(Decls))
	}
	for i, d := range Decls {
		if names[i] != d.Symbol || libs[i] != d.Lib {
			t.Errorf("loader %d: %s in %s; Decls %s in %s", i, names[i], libs[i], d.Symbol, d.Lib)
		}
		if ok[i] != loaded(d.Lib) {
			t.Errorf("%s resolved %v, its library opened %v", d.Symbol, ok[i], loaded(d.Lib))
		}
	}
}

// Without a driver (this machine, unless a GPU test machine), Open fails
// with one error naming every soname tried and why.
func TestOpenWithoutDriver(t *testing.T) {
	if loaded(Driver) {
		t.Skip("a driver is here")
	}
	d, err := Open(Options{})
	if d != nil || err == nil {
		t.Fatal("Open succeeded without a driver")
	}
	var le *LoadError
	if !errors.As(err, &le) || !errors.Is(err, ErrNoDriver) {
		t.Fatalf("Open: %v (%T), want a *LoadError that is ErrNoDriver", err, err)
	}
	msg := err.Error()
	for _, lib := range libraries {
		for _, so := range lib.sonames {
			if !strings.Contains(msg, so+" (") && !slices.ContainsFunc(le.Attempts, func(a Attempt) bool { return a.Soname == so && a.Err == "" }) {
				t.Errorf("error does not name %s: %s", so, msg)
			}
		}
	}
	if !strings.HasPrefix(msg, "cuda: no driver: tried libcuda.so.1 (") || !strings.Contains(msg, "cannot open shared object file") {
		t.Errorf("error %q: want dlerror's words after the soname", msg)
	}
	if p := Probe(); !strings.HasPrefix(p, "no driver: tried libcuda.so.1 (") {
		t.Errorf("Probe = %q", p)
	}
	t.Logf("Open: %v", err)
}

// With stand-in libraries built here from the declarations (every
// function a stub: cuInit answers CUDA_ERROR_NO_DEVICE), the loader finds
// them by soname through LD_LIBRARY_PATH and calls through its table; a
// library missing a symbol is refused, naming the symbol.
func TestLoaderWithStubs(t *testing.T) {
	if os.Getenv("FASTER_CUDA_STUB_CHILD") == "1" {
		stubChild()
		return
	}
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc")
	}
	// A stand-in NVRTC that lacks nvrtcGetCUBIN, under its last soname
	// (runStubs names each stand-in so).
	out := runStubs(t, cc, "nvrtcGetCUBIN")
	nv := libraries[NVRTC].sonames
	for _, want := range []string{
		"open: cuda: no nvrtc: tried ",
		"libnvrtc.so.13 (libnvrtc.so.13: cannot open shared object file",
		nv[len(nv)-1] + " (nvrtcGetCUBIN missing)",
		"driver: true nvrtc: false cudnn: true",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
	// Complete stand-ins: the calls go through, cuInit's error is named.
	out = runStubs(t, cc, "")
	for _, want := range []string{
		"open: cuda: cuInit: CUDA_ERROR_NO_DEVICE (100)",
		"driver: true nvrtc: true cudnn: true",
		"probe: driver 0.0 found, cuInit failed: cuda: cuInit: CUDA_ERROR_NO_DEVICE (100)", // the stub leaves the version 0
	} {
		if !strings.Contains(out, want) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
}

// runStubs builds the stand-ins (without symbol omit) and runs stubChild
// in a child process that finds them.
func runStubs(t *testing.T, cc, omit string) string {
	t.Helper()
	dir := t.TempDir()
	for l, lib := range libraries {
		var src strings.Builder
		src.WriteString(stubPrelude)
		for _, d := range Decls {
			if d.Lib != Library(l) || d.Symbol == omit {
				continue
			}
			ret := "return 0;"
			switch {
			case d.Symbol == "cuInit":
				ret = "return 100;" // CUDA_ERROR_NO_DEVICE
			case d.Symbol == "cuGetErrorName":
				ret = `*name = "CUDA_ERROR_NO_DEVICE"; return 0;`
			case strings.HasPrefix(d.C, "const char *"):
				ret = `return "stub";`
			}
			fmt.Fprintf(&src, "%s { %s }\n", d.C, ret)
		}
		c := filepath.Join(dir, lib.name+".c")
		if err := os.WriteFile(c, []byte(src.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		so := filepath.Join(dir, lib.sonames[len(lib.sonames)-1])
		if out, err := exec.Command(cc, "-shared", "-fPIC", "-w", "-o", so, c).CombinedOutput(); err != nil {
			t.Fatalf("gcc %s: %v\n%s", lib.name, err, out)
		}
	}
	return string(inChild(t, "TestLoaderWithStubs", "FASTER_CUDA_STUB_CHILD", dir))
}

// inChild runs test again in a child process of the test binary, with
// childEnv=1 (the test's cue to be the child) and LD_LIBRARY_PATH=libs
// (the loader opens the libraries once a process: another set needs
// another process), failing t when the child fails, and returns what the
// child printed.
func inChild(t *testing.T, test, childEnv, libs string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^" + test + "$"}, args...)...)
	cmd.Env = append(os.Environ(), childEnv+"=1", "LD_LIBRARY_PATH="+libs)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	return out
}

// stubChild runs in the child process of TestLoaderWithStubs.
func stubChild() {
	_, err := Open(Options{NoCache: true})
	fmt.Printf("open: %v\n", err)
	fmt.Printf("driver: %v nvrtc: %v cudnn: %v\n", loaded(Driver), loaded(NVRTC), loaded(CUDNN))
	fmt.Printf("probe: %s\n", Probe())
}

// stubPrelude opens a generated stub library's C: what decls.h's
// declarations need (size_t, the NCCL id passed by value).
const stubPrelude = "#include <stddef.h>\nstruct faster_nccl_id { char internal[128]; };\n"
