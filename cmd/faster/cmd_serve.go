package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/faster-training/faster/loader"
	"github.com/faster-training/faster/serve"
)

type serveOptions struct {
	data   string
	socket string // listen here for one consumer
	fd     int    // or use this inherited, connected socket
	loaderFlags
	badDataFlags
	workers int
	slots   int
	shmDir  string
	// spec is --spec: a loader.Spec's JSON (a file, - for stdin, or the
	// JSON itself), in place of the loader's flags.
	spec  string
	stdin io.Reader
	flags *pflag.FlagSet // to tell the loader flags given
}

func init() {
	commands = append(commands, func(stdout, stderr io.Writer) *cobra.Command {
		o := serveOptions{fd: -1}
		c := &cobra.Command{
			Use:   "serve (DATA | --spec FILE) (--socket PATH | --fd N)",
			Short: "Serve batches to another process (PyTorch) through shared memory",
			Long: `Serve runs the input pipeline over DATA (an ImageFolder tree, a packed dataset
directory, or TFRecord files) for one consumer and writes its batches into a
ring of slots in a shared-memory file under /dev/shm, announcing each over a
Unix socket and reusing a slot only once the consumer hands it back. The
Python package in python/ (import faster) starts it with --fd; --socket
listens on a path for one consumer instead. The protocol and the file layout
are specified in the documentation of package serve.

Serve exits when the consumer closes the connection, and removes the
shared-memory file on every way out.

Damaged samples: --on-error stop (default) fails the session at the first,
naming file and offset; --on-error skip skips them within --max-bad and lists
them in --quarantine FILE (written when the session ends; FILE.rankN with
--num-shards above 1, so ranks never share one), as bench load does.

--spec FILE describes the loader as JSON (loader.Spec; FILE - reads it from
stdin, and an argument starting with { is the JSON itself): its fields are
the loader flags' (docs/cli.md's flag table), "path" the DATA (an argument
DATA overrides it), and "augment" a list of torchvision ops run in the given
order. Every problem is reported at once, named by its field. The Python
client sends its loader so.

Exit status: 0 the consumer left; 1 failed (unreadable data, a protocol
error); 2 usage error; 130 interrupted.`,
			Args: cobra.MaximumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				if len(args) == 1 {
					o.data = args[0]
				} else if o.spec == "" {
					return usagef("%s: need the data: DATA or --spec FILE", cmd.CommandPath())
				}
				o.stdin, o.flags = cmd.InOrStdin(), cmd.Flags()
				return runServe(cmd.Context(), o, stdout, stderr)
			},
		}
		o.registerFlags(c.Flags())
		return c
	})
}

// registerFlags adds serve's flags to f.
func (o *serveOptions) registerFlags(f *pflag.FlagSet) {
	f.StringVar(&o.socket, "socket", "", "listen on this Unix socket path for one consumer")
	f.IntVar(&o.fd, "fd", -1, "use this inherited file descriptor, a connected stream socket")
	o.register(f, "train or eval")
	o.registerBad(f)
	f.IntVar(&o.workers, "workers", 0, "decode workers (0 = auto)")
	f.IntVar(&o.slots, "slots", 4, "batches in the shared-memory ring for the consumer (the prefetch depth); the file holds 3 more, for the batches the loader decodes into it")
	f.StringVar(&o.shmDir, "shm-dir", "/dev/shm", "directory of the shared-memory file")
	f.StringVar(&o.spec, "spec", "", "the loader as JSON (loader.Spec): a file, - for stdin, or the JSON itself; replaces the loader flags")
}

func runServe(ctx context.Context, o serveOptions, stdout, stderr io.Writer) error {
	if (o.socket == "") == (o.fd < 0) {
		return usagef("serve: give exactly one of --socket PATH and --fd N")
	}
	if o.transform != string(loader.Train) && o.transform != string(loader.Eval) {
		return usagef("--transform %q: want train or eval", o.transform)
	}
	if o.slots < 1 {
		return usagef("--slots %d: must be at least 1", o.slots)
	}
	lo, err := o.loaderOptions()
	if err != nil {
		return err
	}
	lo.Workers = capWorkers(stderr, "--workers", lo.Workers, runtime.NumCPU())
	flags := o.forRank(lo.ShardIdx, lo.NumShards)
	writeQ, abortQ, err := flags.openQuarantine()
	if err != nil {
		return err
	}
	defer abortQ()
	l, err := loader.OpenContext(ctx, o.data, lo)
	if err != nil {
		return err
	}
	defer l.Close()
	conn, err := serveConn(ctx, o)
	if err != nil {
		return err
	}
	so := serve.ForLoader(l, lo)
	// The loader decodes straight into the ring: its batch being filled and
	// its prefetch queue (2) take slots too.
	so.Slots, so.Dir = o.slots+3, o.shmDir
	err = serve.Serve(ctx, conn, l, so)
	// The skipped samples are listed however the session ended; a list that
	// cannot be written fails the command.
	if bad := l.Bad(); len(bad) > 0 {
		where := ""
		if flags.quarantine != "" {
			where = " (listed in " + flags.quarantine + ")"
		}
		fmt.Fprintf(stderr, "faster: serve: skipped %d bad samples%s\n", len(bad), where)
	}
	return errors.Join(err, writeQ(l.Bad()))
}

// loaderOptions are the loader's options: from --spec, or from the flags
// (and o.data, the spec's path, the quarantine flags set from it).
func (o *serveOptions) loaderOptions() (loader.Options, error) {
	if o.spec == "" {
		if err := o.check(); err != nil {
			return loader.Options{}, err
		}
		policy, err := o.policy()
		if err != nil {
			return loader.Options{}, err
		}
		lo := o.options(o.workers)
		lo.BadData = policy
		return lo, nil
	}
	s, err := readSpecArg(o.spec, o.stdin, loader.Defaults())
	if err != nil {
		return loader.Options{}, err
	}
	if given := loaderFlagsGiven(o.flags); len(given) > 0 {
		return loader.Options{}, usagef("--spec and %s: give the loader in the spec or as flags, not both", strings.Join(given, ", "))
	}
	if o.flags != nil && o.flags.Changed("workers") {
		s.Workers = o.workers
	}
	if o.data == "" {
		o.data = s.Path
	}
	if s.Transform != loader.Train && s.Transform != loader.Eval {
		return loader.Options{}, usagef("--spec: transform %q: want train or eval", s.Transform)
	}
	lo, err := s.Options()
	if err != nil {
		return loader.Options{}, specUsage(err)
	}
	if o.data == "" {
		return loader.Options{}, usagef("--spec: no path: give DATA or the spec's \"path\"")
	}
	o.badDataFlags = badDataFlags{onError: s.OnError, maxBad: string(s.MaxBad), quarantine: s.Quarantine}
	return lo, nil
}

// serveConn returns the consumer's connection: the inherited descriptor, or
// the first connection accepted on the socket path (removed once accepted).
func serveConn(ctx context.Context, o serveOptions) (net.Conn, error) {
	if o.fd >= 0 {
		f := os.NewFile(uintptr(o.fd), "consumer")
		if f == nil {
			return nil, usagef("--fd %d: not an open descriptor", o.fd)
		}
		defer f.Close() // FileConn dups it
		c, err := net.FileConn(f)
		if err != nil {
			return nil, fmt.Errorf("--fd %d: %w", o.fd, err)
		}
		return c, nil
	}
	c, err := serve.AcceptOne(ctx, o.socket)
	var se *serve.SocketError
	switch {
	case errors.As(err, &se) && se.Long:
		return nil, usagef("--socket %v", err)
	case errors.As(err, &se):
		return nil, fmt.Errorf("--socket %w", err)
	}
	return c, err
}
