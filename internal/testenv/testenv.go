// Package testenv says what the test machine has, as the standard
// library's internal/testenv does: the data, programs and privileges some
// tests need, where they are, and what their absence does to a test. On a
// developer's machine a missing dataset or program skips the test that
// needs it; under FASTER_REQUIRE_DATA=1 (make test and CI set it, after
// scripts/setup.sh installed everything) it fails the test, because there
// a skip would hide a path nothing else tests.
//
// It is imported by tests only.
package testenv

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Where Debian puts what the tests use (scripts/setup.sh installs them).
const (
	// Torchrun is torch 1.13's launcher (needs --redirects 1 --tee 1 on
	// Python 3.11).
	Torchrun = "/usr/bin/torchrun"
	// FashionMNISTDir is the Debian package dataset-fashion-mnist.
	FashionMNISTDir = "/usr/share/datasets/fashion-mnist"
	// PhotoDir holds real photographs (mate-backgrounds' nature set:
	// JPEGs of 1280x1024 to 5640x3172).
	PhotoDir = "/usr/share/backgrounds/mate/nature"
	// MateDir is mate-backgrounds' whole tree.
	MateDir = "/usr/share/backgrounds/mate"
	// CUDALibDir holds real CUDA libraries unpacked from Debian's non-free
	// packages, not installed (nothing finds them unless told): the driver
	// (libcuda1 535: CUDA 12.2's API) as libcuda.so.1, libnvjpeg.so.11
	// and libcudart.so.11.0 (CUDA 11.8). No GPU is behind them: the tests
	// read their exports and open the driver to see cuInit fail.
	CUDALibDir = "/usr/local/lib/faster-test-cuda"
)

// Python is Debian's interpreter, the one with torch, torchvision,
// Pillow, numpy and lmdb (python3 on PATH may be another); FASTER_PYTHON
// names another one, as on the GPU machine, whose torch 2.11 lives in a
// venv's python3 (scripts/h200.sh).
var Python = envOr("FASTER_PYTHON", "/usr/bin/python3")

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// FasterBinary returns a `faster` binary built from this checkout into
// t's temporary directory, or FASTER_TEST_BIN when it is set: a binary
// carried to a machine without Go (the GPU machine), built from the same
// checkout (scripts/h200.sh build).
func FasterBinary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("FASTER_TEST_BIN"); bin != "" {
		return bin
	}
	goBin := "/usr/local/go/bin/go" // where the project's machines have it
	if p, err := exec.LookPath("go"); err == nil {
		goBin = p
	}
	bin := filepath.Join(t.TempDir(), "faster")
	build := exec.Command(goBin, "build", "-o", bin, "github.com/faster-training/faster/cmd/faster")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// The two switches make test sets (after scripts/setup.sh installed
// everything): a missing dataset or program fails a test instead of
// skipping it.
const (
	requireData    = "FASTER_REQUIRE_DATA"
	requireInterop = "FASTER_REQUIRE_INTEROP"
)

// Required reports whether a missing requirement fails the test rather
// than skipping it: FASTER_REQUIRE_DATA is set to anything but "" or "0".
func Required() bool { return on(requireData) }

// Missing skips t saying what is missing, or fails it when Required.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	missing(t, requireData, format, args...)
}

// InteropRequired reports whether a missing peer tool (torch's
// distributed store, torchrun, mpirun, Slurm, node) fails the test rather
// than skipping it: FASTER_REQUIRE_INTEROP is set to anything but "" or
// "0".
func InteropRequired() bool { return on(requireInterop) }

// MissingInterop skips t saying which peer tool is missing, or fails it
// when InteropRequired.
func MissingInterop(t testing.TB, format string, args ...any) {
	t.Helper()
	missing(t, requireInterop, format, args...)
}

func on(env string) bool {
	v := os.Getenv(env)
	return v != "" && v != "0"
}

func missing(t testing.TB, env, format string, args ...any) {
	t.Helper()
	if on(env) {
		t.Fatalf(format+" ("+env+"=1: run scripts/setup.sh)", args...)
		return
	}
	t.Skipf(format, args...)
}

// File returns path when it exists, else calls Missing.
func File(t testing.TB, path string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		Missing(t, "%s missing: %v", path, err)
	}
	return path
}

// FashionMNIST returns the Fashion-MNIST directory (its four IDX files).
func FashionMNIST(t testing.TB) string {
	t.Helper()
	File(t, filepath.Join(FashionMNISTDir, "train-images-idx3-ubyte.gz"))
	return FashionMNISTDir
}

// Photos returns the real photographs under PhotoDir, sorted, at least n
// of them (else Missing).
func Photos(t testing.TB, n int) []string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(PhotoDir, "*.jpg"))
	sort.Strings(paths)
	if len(paths) < n {
		Missing(t, "%d photographs under %s, want %d", len(paths), PhotoDir, n)
	}
	return paths
}

// PythonWith returns Python when it imports every module, else calls
// Missing naming what failed.
func PythonWith(t testing.TB, modules ...string) string {
	t.Helper()
	out, err := exec.Command(Python, "-c", "import "+strings.Join(modules, ", ")).CombinedOutput()
	if err != nil {
		Missing(t, "%s cannot import %s: %v: %s", Python, strings.Join(modules, ", "), err, strings.TrimSpace(string(out)))
	}
	return Python
}

// Exports returns the functions and objects the shared library at path
// defines in its dynamic symbol table (names without their symbol
// versions), or calls Missing when it is absent.
func Exports(t testing.TB, path string) map[string]bool {
	t.Helper()
	File(t, path)
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string]bool{}
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF {
			out[s.Name] = true
		}
	}
	return out
}
