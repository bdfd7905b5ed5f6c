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

	"github.com/spf13/cobra"
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
	}
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

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
