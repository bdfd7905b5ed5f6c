package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/faster-training/faster/collective"
)

// The tests run the test binary itself as the ranks: childEnv names what a
// rank does, dirEnv a directory it reports to.
const (
	childEnv = "FASTER_LAUNCH_TEST_CHILD"
	dirEnv   = "FASTER_LAUNCH_TEST_DIR"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(child(mode))
	}
	os.Exit(m.Run())
}

var envNames = []string{"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
	"MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_RESTART_COUNT"}

func child(mode string) int {
	dir := os.Getenv(dirEnv)
	rank := os.Getenv("RANK")
	report := func(name, text string) {
		os.WriteFile(filepath.Join(dir, name+"."+rank), []byte(text), 0o644)
	}
	switch mode {
	case "env":
		var b strings.Builder
		for _, k := range envNames {
			fmt.Fprintf(&b, "%s=%s\n", k, os.Getenv(k))
		}
		report("env", b.String())
	case "store":
		// Every rank meets the others through the launcher's store.
		cfg, err := collective.FromEnv()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		s, err := collective.DialStore(cfg.StoreAddr(), 10*time.Second)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer s.Close()
		s.Set(cfg.StorePrefix+"here/"+rank, nil)
		var keys []string
		for r := range cfg.Size {
			keys = append(keys, cfg.StorePrefix+"here/"+strconv.Itoa(r))
		}
		if err := s.Wait(keys); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		report("met", "")
	case "longline":
		if rank == "1" {
			os.Stderr.Write(bytes.Repeat([]byte{'x'}, 4<<20))
			os.Stderr.WriteString("\nshort\nunterminated")
		}
	case "sigint":
		// Count the SIGINTs until exiting, 200 ms after the first.
		c := make(chan os.Signal, 64)
		signal.Notify(c, syscall.SIGINT)
		report("ready", "")
		<-c
		n := 1
		for end := time.After(200 * time.Millisecond); ; {
			select {
			case <-c:
				n++
				continue
			case <-end:
			}
			break
		}
		report("sigints", strconv.Itoa(n))
		return 130
	case "deaf":
		signal.Ignore(syscall.SIGINT)
		report("ready", "")
		time.Sleep(time.Hour) // not select{}: without cgo that is a deadlock (exit 2)
	case "fail1":
		if rank == "1" {
			fmt.Fprintln(os.Stderr, "rank 1 gives up")
			return 3
		}
		time.Sleep(time.Hour) // rank 0 waits until killed
	}
	return 0
}

// run runs Run with the test binary as the ranks doing mode, and fails t
// if Run has not returned after a minute (a hang guard, not a timing
// check: every case returns in well under a second).
func run(t *testing.T, ctx context.Context, mode string, o Options) (string, error) {
	t.Helper()
	dir := t.TempDir()
	o.Command = os.Args[0]
	o.Args = []string{"-test.run=^$"}
	o.Env = append(os.Environ(), childEnv+"="+mode, dirEnv+"="+dir)
	var stderr bytes.Buffer
	o.Stderr = &stderr
	errc := make(chan error, 1)
	go func() { errc <- Run(ctx, o) }()
	select {
	case err := <-errc:
		return dir + "\x00" + stderr.String(), err
	case <-time.After(time.Minute):
		t.Fatalf("Run still running after a minute (%s)", mode)
	}
	return "", nil
}

func split(s string) (dir, stderr string) { dir, stderr, _ = strings.Cut(s, "\x00"); return }

func TestRunEnv(t *testing.T) {
	// Node 1 of 2, three ranks each: ranks 3, 4, 5.
	out, err := run(t, context.Background(), "env", Options{NProc: 3, NNodes: 2, NodeRank: 1, MasterAddr: "10.1.2.3", MasterPort: 29999})
	dir, stderr := split(out)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, stderr)
	}
	for local := range 3 {
		rank := 3 + local
		b, err := os.ReadFile(filepath.Join(dir, "env."+strconv.Itoa(rank)))
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("RANK=%d\nLOCAL_RANK=%d\nWORLD_SIZE=6\nLOCAL_WORLD_SIZE=3\nGROUP_RANK=1\nGROUP_WORLD_SIZE=2\n"+
			"MASTER_ADDR=10.1.2.3\nMASTER_PORT=29999\nTORCHELASTIC_USE_AGENT_STORE=True\nTORCHELASTIC_RESTART_COUNT=0\n", rank, local)
		if string(b) != want {
			t.Errorf("rank %d's environment:\n%s\nwant\n%s", rank, b, want)
		}
	}
}

// On one machine the launcher serves the store on a free loopback port,
// and the ranks meet through it (as clients only: none binds the port).
func TestRunServesStore(t *testing.T) {
	out, err := run(t, context.Background(), "store", Options{NProc: 3})
	dir, stderr := split(out)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, stderr)
	}
	for r := range 3 {
		if _, err := os.Stat(filepath.Join(dir, "met."+strconv.Itoa(r))); err != nil {
			t.Errorf("rank %d did not meet the others: %v", r, err)
		}
	}
	// The port is the master's: node 0 of two serves it on every
	// interface, and a port in use is a clear error.
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = run(t, context.Background(), "env", Options{NProc: 1, NNodes: 2, MasterAddr: "127.0.0.1", MasterPort: ln.Addr().(*net.TCPAddr).Port})
	if err == nil || !strings.Contains(err.Error(), "already in use") {
		t.Errorf("node 0 on a port in use: %v", err)
	}
}

// A line longer than any buffer passes whole, prefixed once, and does not
// block its rank (which would then never exit).
func TestRunLongLine(t *testing.T) {
	out, err := run(t, context.Background(), "longline", Options{NProc: 2})
	_, stderr := split(out)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := "[rank 1] " + strings.Repeat("x", 4<<20) + "\n[rank 1] short\n[rank 1] unterminated\n"
	if stderr != want {
		t.Errorf("stderr: %d bytes (starts %.40q, ends %q), want %d", len(stderr), stderr, stderr[max(0, len(stderr)-40):], len(want))
	}
}

// An interrupt sends each rank one SIGINT, not one per turn of a loop.
func TestRunInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	// Cancel once both ranks are ready for the signal.
	go func() {
		for {
			a, _ := filepath.Glob(filepath.Join(dir, "ready.*"))
			if len(a) == 2 {
				cancel()
				return
			}
			select {
			case <-time.After(5 * time.Millisecond):
			case <-ctx.Done():
				return
			}
		}
	}()
	o := Options{NProc: 2, Command: os.Args[0], Args: []string{"-test.run=^$"},
		Env: append(os.Environ(), childEnv+"=sigint", dirEnv+"="+dir)}
	errc := make(chan error, 1)
	go func() { errc <- Run(ctx, o) }()
	var err error
	select {
	case err = <-errc:
	case <-time.After(time.Minute):
		t.Fatal("Run still running a minute after the interrupt")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	for r := range 2 {
		b, err := os.ReadFile(filepath.Join(dir, "sigints."+strconv.Itoa(r)))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != "1" {
			t.Errorf("rank %d got %s SIGINTs, want 1", r, b)
		}
	}
}

// Ranks that ignore the interrupt are killed after the grace.
func TestRunKillsAfterGrace(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	dir := t.TempDir()
	go func() {
		for ctx.Err() == nil {
			if a, _ := filepath.Glob(filepath.Join(dir, "ready.*")); len(a) == 2 {
				once.Do(cancel)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	o := Options{NProc: 2, Grace: 50 * time.Millisecond, Command: os.Args[0], Args: []string{"-test.run=^$"},
		Env: append(os.Environ(), childEnv+"=deaf", dirEnv+"="+dir)}
	errc := make(chan error, 1)
	go func() { errc <- Run(ctx, o) }()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute):
		cancel()
		t.Fatal("deaf ranks still running a minute after the interrupt")
	}
}

// A failed rank is reported by rank and exit status; the others, left to
// fail on their own, are killed after the grace.
func TestRunFailure(t *testing.T) {
	out, err := run(t, context.Background(), "fail1", Options{NProc: 2, Grace: 50 * time.Millisecond})
	_, stderr := split(out)
	var le *Error
	if !errors.As(err, &le) {
		t.Fatalf("Run = %v, want an *Error", err)
	}
	ranks := []int{}
	for _, f := range le.Failed {
		ranks = append(ranks, f.Rank)
	}
	if !slices.Equal(ranks, []int{1, 0}) || !strings.Contains(le.Failed[0].Error(), "exit status 3") ||
		!strings.Contains(le.Failed[1].Error(), "killed") {
		t.Errorf("failures %v", le)
	}
	if !strings.Contains(stderr, "[rank 1] rank 1 gives up\n") {
		t.Errorf("stderr %q", stderr)
	}
}

func TestOptionsCheck(t *testing.T) {
	for _, o := range []Options{
		{},
		{Command: "x"},
		{Command: "x", NProc: 1, NNodes: 2, NodeRank: 2, MasterAddr: "a", MasterPort: 1},
		{Command: "x", NProc: 1, NNodes: 2},
		{Command: "x", NProc: 1, MasterPort: 70000},
	} {
		if err := Run(context.Background(), o); err == nil || !strings.HasPrefix(err.Error(), "launch: ") {
			t.Errorf("%+v: Run = %v", o, err)
		}
	}
}

// Counts are bounded before anything is sized or multiplied by them
// (before: NProc 2^40 panicked in makechan; NNodes 2^62 × NProc 4 wrapped
// to WORLD_SIZE=0 in every rank's environment).
func TestOptionsCheckBounds(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Command: "x", NProc: 1 << 40}, "nproc 1099511627776"},
		{Options{Command: "x", NProc: 65537}, "nproc 65537"},
		{Options{Command: "x", NProc: 4, NNodes: 1 << 62, MasterAddr: "a", MasterPort: 1}, "4611686018427387904 nodes × nproc 4"},
		{Options{Command: "x", NProc: 1 << 16, NNodes: 1 << 16, NodeRank: 1, MasterAddr: "a", MasterPort: 1}, "65536 nodes × nproc 65536"},
	} {
		err := Run(context.Background(), c.o)
		if err == nil || !strings.HasPrefix(err.Error(), "launch: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: Run = %v, want it to name %q", c.o, err, c.want)
		}
	}
}
