package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/faster-training/faster/collective"
	_ "github.com/faster-training/faster/collective/gloo" // registers "gloo" when built with cgo
	"github.com/faster-training/faster/train"
)

// launchEnv marks a process started by `faster train --nproc N`: it is one
// rank and does not launch again.
const launchEnv = "FASTER_LAUNCH_CHILD"

func addParallelFlags(f *pflag.FlagSet, o *trainOptions) {
	f.StringVar(&o.strategy, "strategy", "single", "single (one device), dp (one process splits each batch over --devices) or ddp (one process per device, gradients all-reduced through Gloo)")
	f.IntVar(&o.devices, "devices", 0, "devices for --strategy dp, each a oneDNN engine with --threads/N threads (default 2)")
	f.IntVar(&o.nproc, "nproc", 0, "with --strategy ddp: start N processes on this machine (else RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT say which rank this is, as with torchrun)")
	f.BoolVar(&o.syncBN, "sync-bn", false, "with dp or ddp: BatchNorm uses the statistics of the whole batch across devices (SyncBN; off by default, as in torch: it adds two blocking all-reduces per BatchNorm layer per step)")
	f.BoolVar(&o.amp, "amp", false, "mixed precision: convolutions and matrix products in --amp-dtype, fp32 master weights")
	f.StringVar(&o.ampDtype, "amp-dtype", "bf16", "bf16, or fp16 (with dynamic loss scaling like torch's GradScaler)")
	f.BoolVar(&o.autotune, "autotune", false, "time each layer's candidate implementations once per shape and keep the fastest (like cudnn.benchmark)")
	f.BoolVar(&o.noOverlap, "no-overlap", false, "prepare each batch only after the previous step (default: while it runs)")
	f.BoolVar(&o.zeroGrad, "zero-grad", false, "zero the gradients and accumulate into them each step (default: overwrite, like zero_grad(set_to_none=True))")
	f.IntVar(&o.bucketKB, "bucket-kb", train.DefaultBucketBytes>>10, "ddp: gradient all-reduce bucket size in KiB")
	f.DurationVar(&o.timeout, "collective-timeout", 60*time.Second, "ddp: how long to wait for the other ranks (rendezvous, each collective)")
}

// checkParallel validates the strategy flags and fills their defaults.
func checkParallel(o *trainOptions) []string {
	var problems []string
	switch o.strategy {
	case "single", "ddp":
		if o.devices > 1 {
			problems = append(problems, fmt.Sprintf("--devices %d needs --strategy dp (ddp runs one device per process)", o.devices))
		}
		o.devices = 1
	case "dp":
		if o.devices == 0 {
			o.devices = 2
		}
		if o.devices < 1 {
			problems = append(problems, "--devices must be positive")
		}
	default:
		problems = append(problems, fmt.Sprintf("--strategy %q: want single, dp or ddp", o.strategy))
	}
	if o.nproc < 0 || (o.nproc > 0 && o.strategy != "ddp") {
		problems = append(problems, "--nproc N (N ≥ 1) goes with --strategy ddp")
	}
	if _, err := train.ParsePrecision(o.ampDtype); err != nil || o.ampDtype == "fp32" {
		problems = append(problems, fmt.Sprintf("--amp-dtype %q: want bf16 or fp16", o.ampDtype))
	}
	if o.bucketKB < 1 {
		problems = append(problems, "--bucket-kb must be positive")
	}
	if o.strategy == "dp" && o.batch < o.devices {
		problems = append(problems, fmt.Sprintf("--batch %d is smaller than --devices %d", o.batch, o.devices))
	}
	return problems
}

// setupParallel adds dp's replicas or joins ddp's group. The returned
// function closes the replicas' networks and backends; call it after the
// trainer's Close (it is never nil).
func setupParallel(o trainOptions, tr *train.Trainer, comm collective.Comm, newNet func() (train.Backend, *train.Sequential, error)) (func(), error) {
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	switch o.strategy {
	case "dp":
		var comms []collective.Comm
		if o.syncBN {
			comms = collective.NewLocal(o.devices)
			train.SyncBatchNorm(tr.Net, comms[0].AllReduceF64)
		}
		for i := 1; i < o.devices; i++ {
			b, net, err := newNet()
			if err != nil {
				return closeAll, err
			}
			closers = append(closers, func() { net.Close(); b.Close() })
			if comms != nil {
				train.SyncBatchNorm(net, comms[i].AllReduceF64)
			}
			if err := tr.AddReplica(b, net); err != nil {
				return closeAll, err
			}
		}
	case "ddp":
		if o.syncBN {
			train.SyncBatchNorm(tr.Net, comm.AllReduceF64)
		}
		return closeAll, tr.Distribute(comm, o.bucketKB<<10)
	}
	return closeAll, nil
}

// launch starts o.nproc ranks of this command on this machine, as torchrun
// does: each gets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT.
// Rank 0's output is this command's; the others' stderr is prefixed with
// their rank. When a rank fails the others fail on their own (their
// collectives see the dead peer); any still running after a grace period
// are killed.
func launch(ctx context.Context, o trainOptions, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	args := append([]string{"train"}, o.argv...)
	if o.threads == 0 {
		args = append(args, "--threads="+strconv.Itoa(max(1, runtime.NumCPU()/o.nproc)))
	}
	type exit struct {
		rank int
		err  error
	}
	exits := make(chan exit, o.nproc)
	// Rank 0 writes to stderr directly when it is a file (a terminal keeps
	// rank 0's progress line); other writers are shared through a lock.
	errOut := stderr
	if _, ok := stderr.(*os.File); !ok {
		errOut = &lockedWriter{w: stderr}
	}
	var procs []*exec.Cmd
	var copies sync.WaitGroup
	for r := range o.nproc {
		c := exec.Command(exe, args...)
		c.Env = append(os.Environ(), launchEnv+"=1", "RANK="+strconv.Itoa(r), "LOCAL_RANK="+strconv.Itoa(r),
			"WORLD_SIZE="+strconv.Itoa(o.nproc), "MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port))
		if r == 0 {
			c.Stdout, c.Stderr = stdout, errOut
		} else {
			pipe, err := c.StderrPipe()
			if err != nil {
				return err
			}
			copies.Add(1)
			go func() {
				defer copies.Done()
				prefixLines(errOut, pipe, fmt.Sprintf("[rank %d] ", r))
			}()
		}
		if err := c.Start(); err != nil {
			for _, p := range procs {
				p.Process.Kill()
				p.Wait()
			}
			return fmt.Errorf("launch rank %d: %w", r, err)
		}
		procs = append(procs, c)
	}
	for r, c := range procs {
		go func() { exits <- exit{r, c.Wait()} }()
	}
	var failed []string
	interrupted := false
	var grace <-chan time.Time
	for left := o.nproc; left > 0; {
		select {
		case e := <-exits:
			left--
			if e.err != nil {
				var ee *exec.ExitError
				if errors.As(e.err, &ee) && ee.ExitCode() == 130 {
					interrupted = true
				}
				failed = append(failed, fmt.Sprintf("rank %d: %v", e.rank, e.err))
				if grace == nil {
					grace = time.After(15 * time.Second)
				}
			}
		case <-ctx.Done():
			for _, p := range procs {
				p.Process.Signal(syscall.SIGINT)
			}
			if grace == nil {
				grace = time.After(15 * time.Second)
			}
		case <-grace:
			for _, p := range procs {
				p.Process.Kill() // the ranks that did not stop on their own
			}
			grace = make(chan time.Time) // never again
		}
	}
	copies.Wait()
	switch {
	case interrupted || ctx.Err() != nil:
		return context.Canceled
	case len(failed) > 0:
		return &failError{fmt.Sprintf("train --nproc %d: %s", o.nproc, strings.Join(failed, "; "))}
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

// freePort asks the kernel for a TCP port free on the loopback interface.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// prefixLines copies r to w line by line, each line prefixed.
func prefixLines(w io.Writer, r io.Reader, prefix string) {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		fmt.Fprintf(w, "%s%s\n", prefix, s.Text())
	}
}

// reportTuning prints the autotuner's choices, one line per op.
func reportTuning(w io.Writer, choices []train.TuneChoice) {
	if len(choices) == 0 {
		return
	}
	fmt.Fprintf(w, "autotune: %d choices\n", len(choices))
	for _, c := range choices {
		var alts []string
		for _, k := range c.Candidates {
			if k.Err != "" {
				alts = append(alts, k.Name+" (unavailable)")
			} else {
				alts = append(alts, fmt.Sprintf("%s %.2f ms", k.Name, 1e3*k.Seconds))
			}
		}
		fmt.Fprintf(w, "  %s: %s  [%s]\n", c.Op, c.Chosen, strings.Join(alts, ", "))
	}
}

func describeStrategy(s trainSummary) string {
	switch s.Strategy {
	case "dp":
		return fmt.Sprintf("dp over %d devices", s.Devices)
	case "ddp":
		return fmt.Sprintf("ddp rank 0 of %d", s.WorldSize)
	}
	return "single device"
}

func nativeNote(s trainSummary) string {
	if s.Precision == "fp32" {
		return ""
	}
	if s.NativeAMP {
		return " native"
	}
	return " emulated: this CPU has no bf16/fp16 arithmetic"
}
