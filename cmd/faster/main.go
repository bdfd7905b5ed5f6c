// Command faster is the command-line face of the faster toolkit: dataset
// tools (pack, verify, inspect, resize), loading and training benchmarks,
// and training.
//
// Exit status: 0 on success; 1 when the command failed (bad data, a failed
// check, an I/O error); 2 on a usage error (unknown flag, missing argument);
// 130 when interrupted.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/faster-training/faster/internal/buildinfo"
)

// usageError marks a mistake in how the command was called.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// failError marks a command that ran and found a problem it already
// reported (for example verify finding corrupt records): exit 1, no extra
// message.
type failError struct{ msg string }

func (e *failError) Error() string { return e.msg }

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "faster",
		Short:         "Fast deep-learning input pipelines and training tools",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildinfo.Version, // the flag; --version prints versionText
	}
	// Built only when --version is asked for: the CUDA probe loads the
	// driver (cuInit), which no other command should pay for.
	root.SetVersionTemplate(`{{fasterVersion}}` + "\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{err.Error()}
	})
	for _, add := range commands {
		root.AddCommand(add(stdout, stderr))
	}
	return root
}

func init() { cobra.AddTemplateFunc("fasterVersion", versionText) }

// commands is filled by the init function of each cmd_*.go file.
var commands []func(stdout, stderr io.Writer) *cobra.Command

// minArgs and exactArgs are cobra's argument checks returning usage errors.
func minArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usagef("%s: need at least %d argument(s), got %d", cmd.CommandPath(), n, len(args))
		}
		return nil
	}
}

func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s: need %d argument(s), got %d", cmd.CommandPath(), n, len(args))
		}
		return nil
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return exitCode(ctx, err, stderr)
}

func exitCode(ctx context.Context, err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ue *usageError
	var fe *failError
	switch {
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "faster: interrupted")
		return 130
	case errors.As(err, &ue), strings.HasPrefix(err.Error(), "unknown command "):
		fmt.Fprintf(stderr, "faster: %v\nRun 'faster --help' for usage.\n", err)
		return 2
	case errors.As(err, &fe):
		if fe.msg != "" {
			fmt.Fprintf(stderr, "faster: %s\n", fe.msg)
		}
		return 1
	default:
		fmt.Fprintf(stderr, "faster: %v\n", err)
		return 1
	}
}

// interruptGrace is how long an interrupted command may take to stop
// (close files, remove temporaries) before the process exits anyway.
const interruptGrace = 5 * time.Second

// interruptSignals end a command as an interrupt does: its context is
// cancelled, so that it stops cleanly (train saves its checkpoint) and
// exits 130. SIGHUP is one of them: a closed terminal or a dropped SSH
// session must not kill a run without its checkpoint.
var interruptSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

func main() { os.Exit(cli(os.Args[1:])) }

// cli runs the command line args as the faster command and returns its
// exit status, the interrupt signals handled.
func cli(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), interruptSignals...)
	return runUntilInterrupted(ctx, stop, time.After, func() int { return run(ctx, args, os.Stdout, os.Stderr) }, os.Stderr)
}

// runUntilInterrupted runs cmd and returns its exit status. After SIGINT,
// SIGTERM or SIGHUP (ctx done) it restores the default signal handling, so that a
// second signal kills the process at once, and waits for cmd at most the
// grace period (after(interruptGrace) fires), whatever cmd is blocked on;
// then it returns 130. Writes are atomic, so exiting early leaves at most
// temporary files, which the next run removes. after is time.After, a
// parameter so that tests decide when the grace period ends.
func runUntilInterrupted(ctx context.Context, stop func(), after func(time.Duration) <-chan time.Time, cmd func() int, stderr io.Writer) int {
	done := make(chan int, 1)
	go func() { done <- cmd() }() // owned here: either it returns or the process exits
	select {
	case code := <-done:
		stop()
		return code
	case <-ctx.Done():
	}
	stop()
	select {
	case code := <-done:
		return code
	case <-after(interruptGrace):
		fmt.Fprintln(stderr, "faster: interrupted (the command did not stop in time; exiting)")
		return 130
	}
}
