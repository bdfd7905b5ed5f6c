//go:build linux

package serve

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/faster-training/faster/loader"
)

// TestPythonDeviceStandIn runs the Python client's device path
// (python/tests/test_device_standin.py: faster.Loader reading the DEVICE
// frame, DeviceRing, the slots' hand-back) against the host stand-in: this
// test binary, started by the client as its server through a small script
// (binary=), serves a loader whose batch-decode stage is the shm stand-in,
// injected here; the shipped binary has no such switch. The client's
// batches of epochs 0 and 1 must be the CPU path's (digests the Go loader
// makes), and an early break must leave the next epoch whole.
func TestPythonDeviceStandIn(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if _, err := os.Stat(python); err != nil {
		t.Skipf("no %s", python)
	}
	if out, err := exec.Command(python, "-c", "import numpy").CombinedOutput(); err != nil {
		t.Skipf("%s has no numpy: %s", python, out)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	data := makeTree(t, 5)
	lo := loader.Options{Transform: loader.Train, Layout: loader.U8HWC, Resolution: 16, Batch: 4, Seed: 7}
	var epochs [2][]string
	for e := range 2 {
		epochs[e], _ = loaderDigests(t, data, lo, nil, e)
	}
	expect := filepath.Join(tmp, "standin.json")
	js, _ := json.Marshal(map[string]any{"data": data, "batch": lo.Batch, "resolution": lo.Resolution, "seed": lo.Seed, "epochs": epochs})
	if err := os.WriteFile(expect, js, 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(tmp, "standin-server")
	body := fmt.Sprintf("#!/bin/sh\nexec %s -test.run='^TestDeviceStandInServer$' -- \"$@\"\n", strconv.Quote(self))
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-m", "unittest", "-v", "test_device_standin")
	cmd.Dir = filepath.Join(root, "python", "tests")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(root, "python"), "FASTER_STANDIN_BIN="+script,
		"FASTER_STANDIN_EXPECT="+expect, "FASTER_SERVE_STANDIN=1", "PYTHONDONTWRITEBYTECODE=1", "OMP_NUM_THREADS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	if s := string(out); !strings.Contains(s, "OK") || strings.Contains(s, "skipped") {
		t.Fatalf("python ran no device test:\n%s", s)
	}
	t.Logf("%s", out)
}

// TestDeviceStandInServer is the server TestPythonDeviceStandIn's client
// starts (FASTER_SERVE_STANDIN=1; skipped otherwise): `serve --fd N
// --spec -` as the client calls it, the loader from the spec on stdin with
// the shm stand-in as its batch-decode stage.
func TestDeviceStandInServer(t *testing.T) {
	if os.Getenv("FASTER_SERVE_STANDIN") != "1" {
		t.Skip("the stand-in server of TestPythonDeviceStandIn's client")
	}
	args := flag.Args()
	fd := -1
	for i, a := range args {
		if a == "--fd" && i+1 < len(args) {
			fd, _ = strconv.Atoi(args[i+1])
		}
	}
	if fd < 0 {
		t.Fatalf("no --fd in %q", args)
	}
	s, _, err := loader.ReadSpecArg("-", os.Stdin, loader.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	lo, err := s.Options()
	if err != nil {
		t.Fatal(err)
	}
	l, d, o := openStandIn(t, s.Path, lo)
	f := os.NewFile(uintptr(fd), "consumer")
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := Serve(context.Background(), conn, l, o); err != nil {
		t.Fatal(err)
	}
	if b, r := o.Counters.Batches.Load(), o.Counters.Released.Load(); b != r {
		t.Fatalf("%d batches announced, %d given back to the stage", b, r)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := d.Live(); n != 0 {
		t.Fatalf("%d stage buffers not freed", n)
	}
}
