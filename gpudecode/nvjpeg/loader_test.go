//go:build cgo

package nvjpeg

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/train/cuda"
)

// The loader's table is decls.h's, in order, each symbol in its library.
func TestLoaderTable(t *testing.T) {
	names, libs, _ := resolved()
	if len(names) != len(Decls) {
		t.Fatalf("dl.c resolves %d symbols, Decls lists %d", len(names), len(Decls))
	}
	for i, d := range Decls {
		if names[i] != d.Symbol || libs[i] != d.Lib {
			t.Errorf("dl.c %d: %s in %v, Decls %s in %v", i, names[i], libs[i], d.Symbol, d.Lib)
		}
	}
}

// Without a GPU, Open fails naming every soname tried and why; with one
// (FASTER_REQUIRE_GPU=1 or a driver present) the GPU tests run instead.
func TestOpenWithoutGPU(t *testing.T) {
	if cuda.Probe() != "" && !strings.HasPrefix(cuda.Probe(), "no driver") {
		t.Skip("this machine has a CUDA driver: gpu_test.go runs instead")
	}
	if os.Getenv("FASTER_REQUIRE_GPU") == "1" {
		t.Fatal("FASTER_REQUIRE_GPU=1 and no driver: " + cuda.Probe())
	}
	d, err := Open(Options{Ordinal: 0})
	if err == nil {
		d.Close()
		t.Fatal("Open succeeded without a driver")
	}
	for _, want := range []string{"GPU 0", "libcuda.so.1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	var le *LoadError
	if errors.As(err, &le) {
		for _, so := range []string{"libnvjpeg.so.13", "libnvjpeg.so.12", "libcudart.so.13"} {
			if !strings.Contains(err.Error(), so) {
				t.Errorf("error %q does not name %s", err, so)
			}
		}
	}
	if !errors.Is(err, cuda.ErrNoDriver) {
		t.Errorf("error %q is not cuda.ErrNoDriver", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans lines: %q", err)
	}
	if _, err := Open(Options{Ordinal: -1}); err == nil || !strings.Contains(err.Error(), "GPU -1") {
		t.Errorf("ordinal -1: %v", err)
	}
}

// Stand-ins of libnvjpeg and libcudart built by gcc from Decls, found by
// soname through LD_LIBRARY_PATH in a child process: a library lacking a
// symbol is refused by name and the next soname tried; with every symbol,
// both open.
func TestLoaderWithStubs(t *testing.T) {
	if os.Getenv("FASTER_NVJPEG_STUB_CHILD") == "1" {
		a, err := load()
		for _, x := range a {
			fmt.Printf("attempt %s %s %q\n", x.Lib, x.Soname, x.Err)
		}
		fmt.Printf("load error: %v\n", err)
		_, _, ok := resolved()
		n := 0
		for _, r := range ok {
			if r {
				n++
			}
		}
		fmt.Printf("resolved %d of %d\n", n, len(ok))
		return
	}
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc")
	}
	run := func(omit string) string {
		dir := t.TempDir()
		for l, lib := range libraries {
			var src strings.Builder
			src.WriteString("#include <stddef.h>\nstruct faster_nvjpeg_image;\n")
			for _, d := range Decls {
				if d.Lib != Library(l) || d.Symbol == omit {
					continue
				}
				ret := "return 0;"
				if strings.HasPrefix(d.C, "const char *") {
					ret = `return "stub";`
				}
				fmt.Fprintf(&src, "%s { %s }\n", d.C, ret)
			}
			c := filepath.Join(dir, lib.name+".c")
			if err := os.WriteFile(c, []byte(src.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			so := filepath.Join(dir, lib.sonames[len(lib.sonames)-1]) // the .12: the .13 is tried first and missing
			if out, err := exec.Command(cc, "-shared", "-fPIC", "-w", "-o", so, c).CombinedOutput(); err != nil {
				t.Fatalf("gcc %s: %v\n%s", lib.name, err, out)
			}
		}
		cmd := exec.Command(os.Args[0], "-test.run", "^TestLoaderWithStubs$")
		cmd.Env = append(os.Environ(), "FASTER_NVJPEG_STUB_CHILD=1", "LD_LIBRARY_PATH="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return string(out)
	}
	runtimeDecls := 0
	for _, d := range Decls {
		if d.Lib == Runtime {
			runtimeDecls++
		}
	}
	out := run("nvjpegDecodeBatchedEx")
	for _, want := range []string{
		`attempt nvjpeg libnvjpeg.so.13 "libnvjpeg.so.13: cannot open shared object file`,
		`attempt nvjpeg libnvjpeg.so.12 "nvjpegDecodeBatchedEx missing"`,
		`attempt cudart libcudart.so.12 ""`,
		"load error: nvjpeg: no GPU decode: tried libnvjpeg.so.13 (",
		fmt.Sprintf("resolved %d of %d", runtimeDecls, len(Decls)), // the runtime's; none of a library lacking one
	} {
		if !strings.Contains(out, want) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
	out = run("")
	for _, want := range []string{`attempt nvjpeg libnvjpeg.so.12 ""`, "load error: <nil>", fmt.Sprintf("resolved %d of %d", len(Decls), len(Decls))} {
		if !strings.Contains(out, want) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
}
