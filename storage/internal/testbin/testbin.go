// Package testbin builds the servers the tests run as subprocesses
// (storage/s3test's versitygw, storage/gcstest's fake-gcs-server) from the
// nested module internal/testservers, which pins them as tool
// dependencies, so that the library's own go.mod does not require them.
// A binary is cached under os.UserCacheDir()/faster-test-bin, keyed by the
// pinned version and the Go version, and written atomically (a temporary
// file renamed into place): test binaries building in parallel never see
// a half-written one. FreePort and SetDeathSignal help start them.
//
// It is imported by tests only.
package testbin

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// ModuleDir returns the directory of the nested module
// internal/testservers: found from this file's own path, or (when the test
// binary was built with -trimpath) from the root module's go.mod that `go
// env GOMOD` names from the working directory.
func ModuleDir() (string, error) {
	const rel = "internal/testservers"
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		// file is ROOT/storage/internal/testbin/testbin.go.
		dir := filepath.Join(filepath.Dir(file), "..", "..", "..", filepath.FromSlash(rel))
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("cannot find " + rel + ": not inside the faster module")
	}
	dir := filepath.Join(filepath.Dir(gomod), filepath.FromSlash(rel))
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("cannot find %s: %w", rel, err)
	}
	return dir, nil
}

// Version returns the version of module the nested go.mod requires.
func Version(module string) (string, error) {
	dir, err := ModuleDir()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == "require" {
			f = f[1:]
		}
		if len(f) >= 2 && f[0] == module {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("%s/go.mod does not require %s", dir, module)
}

// Path returns where the binary name of module's pinned version is cached.
func Path(name, module string) (bin, version string, err error) {
	version, err = Version(module)
	if err != nil {
		return "", "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "faster-test-bin", fmt.Sprintf("%s-%s-%s", name, version, runtime.Version())), version, nil
}

// Build returns the cached binary name of pkg (a package of module), built
// from the nested module first when it is not cached yet.
func Build(name, module, pkg string) (string, error) {
	bin, version, err := Path(name, module)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	src, err := ModuleDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(bin)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, name+"-build-*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	out, err := filepath.Abs(tmp.Name())
	if err != nil {
		return "", err
	}
	start := time.Now()
	cmd := exec.Command("go", "build", "-C", src, "-o", out, "-ldflags=-s -w", pkg)
	// GOWORK=off: the nested module alone decides the versions, whatever
	// go.work the developer has.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build -C %s %s (%s): %w\n%s", src, pkg, version, err, msg)
	}
	fmt.Fprintf(os.Stderr, "testbin: built %s %s in %v (cached at %s)\n", name, version, time.Since(start).Round(time.Second), bin)
	// Rename is atomic: concurrent test binaries see no half-written file.
	return bin, os.Rename(tmp.Name(), bin)
}

// FreePort returns a loopback address (127.0.0.1:port) no one listened on
// a moment ago.
func FreePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Binary is one test server's binary: built (or found cached) once per
// process.
type Binary struct {
	Name, Module, Pkg string // the cache name, the module pinned in internal/testservers, the command's package
	once              sync.Once
	path              string
	err               error
}

// Build returns the binary's path, building it on first use.
func (b *Binary) Build() (string, error) {
	b.once.Do(func() { b.path, b.err = Build(b.Name, b.Module, b.Pkg) })
	return b.path, b.err
}

// Path returns where the binary of the pinned version is cached.
func (b *Binary) Path() (bin, version string, err error) { return Path(b.Name, b.Module) }
