package collective

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/faster-training/faster/internal/testenv"
)

// torchPython is Debian's python3 with torch (scripts/setup.sh installs
// python3-torch); not the python3 first on PATH, which may lack it.
var torchPython = testenv.Python

// needTorch skips where torch is not installed, and fails instead under
// FASTER_REQUIRE_INTEROP=1.
func needTorch(t *testing.T) {
	t.Helper()
	if err := exec.Command(torchPython, "-c", "import torch.distributed").Run(); err != nil {
		testenv.MissingInterop(t, "%s cannot import torch.distributed (%v)", torchPython, err)
	}
}

// play is the Go side of testdata/torch_store.py's play.
func play(t *testing.T, s *Store) {
	t.Helper()
	if err := s.Set("go/hello", []byte("from go")); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get("py/hello"); err != nil || string(v) != "from torch" {
		t.Fatalf("Get(py/hello) = %q, %v", v, err)
	}
	if n, err := s.Add("counter", 7); err != nil || n != 7 {
		t.Fatalf("Add = %d, %v", n, err)
	}
	if err := s.Set("go/big", bytes.Repeat(func() []byte {
		b := make([]byte, 256)
		for i := range b {
			b[i] = byte(i)
		}
		return b
	}(), 4096)); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("go/ready", []byte("yes")); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get("/worker/attempt_0/x"); err != nil || string(v) != "1" {
		t.Fatalf("Get of torch's PrefixStore key = %q, %v", v, err)
	}
	if err := s.Wait([]string{"py/done"}); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get("go/ready"); err != nil || string(v) != "swapped" {
		t.Fatalf("after torch's compare_set: %q, %v", v, err)
	}
	if n, err := s.Add("counter", 0); err != nil || n != 12 {
		t.Fatalf("counter = %d, %v; want 12", n, err)
	}
}

// Our client against torch's TCPStore server.
func TestStoreAgainstTorchServer(t *testing.T) {
	needTorch(t)
	py := exec.Command(torchPython, "testdata/torch_store.py", "server")
	var stderr bytes.Buffer
	py.Stderr = &stderr
	out, err := py.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// The server runs until its stdin closes, after our last answer.
	stdin, err := py.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := py.Start(); err != nil {
		t.Fatal(err)
	}
	defer py.Process.Kill()
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		py.Wait()
		t.Fatalf("torch's server printed no port: %s", stderr.String())
	}
	port := strings.TrimSpace(lines.Text())
	s, err := DialStore("127.0.0.1:"+port, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	play(t, s)
	if err := s.Set("go/done", nil); err != nil {
		t.Fatal(err)
	}
	if !lines.Scan() || lines.Text() != "ok" {
		stdin.Close()
		py.Wait()
		t.Fatalf("torch's side failed: %s", stderr.String())
	}
	stdin.Close()
	if err := py.Wait(); err != nil {
		t.Fatalf("torch's side: %v\n%s", err, stderr.String())
	}
}

// torch's TCPStore client against our server.
func TestStoreServesTorchClient(t *testing.T) {
	needTorch(t)
	checkGoroutines(t)
	srv := startStore(t)
	_, port, _ := strings.Cut(srv.Addr().String(), ":")
	py := exec.Command(torchPython, "testdata/torch_store.py", "client", port)
	var stdout, stderr bytes.Buffer
	py.Stdout, py.Stderr = &stdout, &stderr
	if err := py.Start(); err != nil {
		t.Fatal(err)
	}
	s := dial(t, srv, 30*time.Second)
	play(t, s)
	if err := py.Wait(); err != nil || strings.TrimSpace(stdout.String()) != "ok" {
		t.Fatalf("torch's client: %v\n%s%s", err, stdout.String(), stderr.String())
	}
}
