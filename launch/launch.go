package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/faster-training/faster/collective"
)

// MaxNProc is the most ranks Run starts on one machine: more than any
// machine has CPUs. NNodes × NProc is at most collective.MaxSize.
const MaxNProc = 1 << 16

// DefaultGrace is the Grace a zero Options.Grace stands for.
const DefaultGrace = 15 * time.Second

// Options says what to start. Command, Args and NProc are required.
type Options struct {
	// Command and Args are run for every rank (Args exclude the command).
	Command string
	Args    []string
	// Env is the environment every rank starts from (nil: os.Environ());
	// the variables of the package documentation are added to it.
	Env []string
	// NProc ranks run on this machine (1 … MaxNProc); NNodes machines take
	// part (0: 1), this one being NodeRank (0 … NNodes-1); NNodes × NProc
	// is at most collective.MaxSize.
	NProc, NNodes, NodeRank int
	// MasterAddr and MasterPort are where node 0's launcher serves the
	// rendezvous store. On one machine they may be left empty and 0: the
	// store then listens on a free loopback port.
	MasterAddr string
	MasterPort int
	// Stdout and Stderr receive the ranks' output (nil: discarded).
	Stdout, Stderr io.Writer
	// Grace is how long ranks may take to stop on their own after one has
	// failed or after an interrupt before they are killed (0: DefaultGrace).
	Grace time.Duration
}

// RankError is the failure of one rank.
type RankError struct {
	Rank int
	Err  error // from exec.Cmd.Wait, usually an *exec.ExitError
}

func (e RankError) Error() string { return fmt.Sprintf("rank %d: %v", e.Rank, e.Err) }

// Error reports the ranks that failed, in the order they ended.
type Error struct {
	Failed []RankError
}

func (e *Error) Error() string {
	parts := make([]string, len(e.Failed))
	for i, f := range e.Failed {
		parts[i] = f.Error()
	}
	return strings.Join(parts, "; ")
}

// check reports every problem of o at once.
func (o *Options) check() error {
	var problems []string
	if o.Command == "" {
		problems = append(problems, "no command")
	}
	if o.NProc < 1 || o.NProc > MaxNProc {
		problems = append(problems, fmt.Sprintf("nproc %d: want 1 to %d", o.NProc, MaxNProc))
	}
	if o.NNodes == 0 {
		o.NNodes = 1
	}
	if o.NNodes < 1 || o.NodeRank < 0 || o.NodeRank >= o.NNodes {
		problems = append(problems, fmt.Sprintf("node rank %d of %d nodes: want 0 <= node rank < nodes", o.NodeRank, o.NNodes))
	}
	// The world is NNodes × NProc: checked by division, before the product.
	if o.NProc >= 1 && o.NNodes >= 1 && o.NNodes > collective.MaxSize/o.NProc {
		problems = append(problems, fmt.Sprintf("%d nodes × nproc %d: more than %d ranks (collective.MaxSize)", o.NNodes, o.NProc, collective.MaxSize))
	}
	if o.MasterPort < 0 || o.MasterPort > 65535 {
		problems = append(problems, fmt.Sprintf("master port %d out of range", o.MasterPort))
	}
	if o.NNodes > 1 && (o.MasterAddr == "" || o.MasterPort == 0) {
		problems = append(problems, "several nodes need the master address and port")
	}
	if len(problems) > 0 {
		return fmt.Errorf("launch: %s", strings.Join(problems, "; "))
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	return nil
}

// Run starts the ranks of this node and waits for them. It returns nil
// when every rank exited 0, ctx's error after an interrupt, and an *Error
// naming the ranks that failed otherwise.
func Run(ctx context.Context, o Options) error {
	if err := o.check(); err != nil {
		return err
	}
	addr, port := o.MasterAddr, o.MasterPort
	if o.NodeRank == 0 {
		// Serve the store, as torchrun's agent does: on every interface for
		// several nodes, on loopback for one.
		host := ""
		if o.NNodes == 1 {
			if addr == "" {
				addr = "127.0.0.1"
			}
			host = addr
		}
		srv, err := collective.ListenStore(net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return fmt.Errorf("launch: rendezvous store: %w", err)
		}
		defer srv.Close()
		port = srv.Addr().(*net.TCPAddr).Port
	}
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	world := o.NNodes * o.NProc
	errOut := o.Stderr
	if _, ok := errOut.(*os.File); !ok {
		errOut = &lockedWriter{w: errOut}
	}

	type exit struct {
		rank int
		err  error
	}
	exits := make(chan exit, o.NProc)
	var procs []*exec.Cmd
	var outs []*prefixWriter
	var wg sync.WaitGroup
	defer wg.Wait()
	for local := range o.NProc {
		rank := o.NodeRank*o.NProc + local
		c := exec.Command(o.Command, o.Args...)
		c.Env = append(append([]string(nil), env...),
			"RANK="+strconv.Itoa(rank), "LOCAL_RANK="+strconv.Itoa(local),
			"WORLD_SIZE="+strconv.Itoa(world), "LOCAL_WORLD_SIZE="+strconv.Itoa(o.NProc),
			"GROUP_RANK="+strconv.Itoa(o.NodeRank), "GROUP_WORLD_SIZE="+strconv.Itoa(o.NNodes),
			"MASTER_ADDR="+addr, "MASTER_PORT="+strconv.Itoa(port),
			"TORCHELASTIC_USE_AGENT_STORE=True", "TORCHELASTIC_RESTART_COUNT=0")
		// Output a grandchild keeps open must not hold Wait forever.
		c.WaitDelay = 5 * time.Second
		if rank == 0 {
			c.Stdout, c.Stderr = o.Stdout, errOut
		} else {
			pw := &prefixWriter{w: errOut, prefix: []byte(fmt.Sprintf("[rank %d] ", rank))}
			c.Stderr = pw
			outs = append(outs, pw)
		}
		if err := c.Start(); err != nil {
			for _, p := range procs {
				p.Process.Kill()
			}
			for range procs {
				<-exits
			}
			return fmt.Errorf("launch rank %d: %w", rank, err)
		}
		procs = append(procs, c)
		wg.Go(func() { exits <- exit{rank, c.Wait()} })
	}

	var failed []RankError
	interrupted := false
	done := ctx.Done() // nil once handled: one SIGINT per rank, no busy loop
	var grace <-chan time.Time
	startGrace := func() {
		if grace == nil {
			grace = time.After(o.Grace)
		}
	}
	for left := len(procs); left > 0; {
		select {
		case e := <-exits:
			left--
			if errors.Is(e.err, exec.ErrWaitDelay) {
				e.err = nil // exited 0; a child of its own keeps its stderr open
			}
			if e.err != nil {
				var ee *exec.ExitError
				if errors.As(e.err, &ee) && ee.ExitCode() == 130 {
					interrupted = true
				}
				failed = append(failed, RankError{e.rank, e.err})
				startGrace()
			}
		case <-done:
			done = nil
			for _, p := range procs {
				p.Process.Signal(syscall.SIGINT) // fails harmlessly for an exited one
			}
			startGrace()
		case <-grace:
			for _, p := range procs {
				p.Process.Kill() // the ranks that did not stop on their own
			}
			grace = nil
		}
	}
	for _, pw := range outs {
		pw.Flush()
	}
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case interrupted:
		return context.Canceled
	case len(failed) > 0:
		return &Error{Failed: failed}
	}
	return nil
}

// lockedWriter serialises writes from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
