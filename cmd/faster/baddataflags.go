package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/loader"
)

// badDataFlags are the damaged-sample policy flags every command that
// reads a dataset takes (bench load, serve, train): one definition of what
// --on-error skip, --max-bad and --quarantine mean.
type badDataFlags struct {
	onError    string
	maxBad     string
	quarantine string
}

func (b *badDataFlags) registerBad(f *pflag.FlagSet) {
	f.StringVar(&b.onError, "on-error", "stop", "damaged samples: stop or skip")
	f.StringVar(&b.maxBad, "max-bad", "", "with --on-error skip: fail when more than N (or P%) samples of an epoch are bad (default: no limit)")
	f.StringVar(&b.quarantine, "quarantine", "", "with --on-error skip: write the skipped samples (JSON lines: path, offset, reason) to this file")
}

// policy parses --on-error and --max-bad, as loader.Spec checks its
// on_error and max_bad (one check: a spec sent to serve and the flags
// agree), its problem worded by the flags.
func (b badDataFlags) policy() (loader.BadDataPolicy, error) {
	s := loader.Spec{OnError: b.onError, MaxBad: loader.Budget(b.maxBad), Quarantine: b.quarantine}
	p, err := s.BadDataPolicy()
	var pr augment.Problem
	if errors.As(err, &pr) {
		return p, usagef("--%s %s", loaderFlagOf(pr.Field), strings.ReplaceAll(pr.Msg, "on_error", "--on-error"))
	}
	return p, err
}

// forRank returns the flags of rank of world ranks: with several ranks each
// lists what it skipped in FILE.rankN, so that ranks sharing the flags
// never write one file.
func (b badDataFlags) forRank(rank, world int) badDataFlags {
	if world > 1 && b.quarantine != "" {
		b.quarantine += fmt.Sprintf(".rank%d", rank)
	}
	return b
}

// openQuarantine creates the --quarantine file up front
// (loader.CreateQuarantine: a path that cannot be written fails before the
// run, not after it) and returns the function that writes the list into
// it at the end: its error fails the run, for a lost list would be a
// silent loss. Without --quarantine both are no-ops.
func (b badDataFlags) openQuarantine() (write func([]loader.BadSample) error, abort func(), err error) {
	if b.quarantine == "" {
		return func([]loader.BadSample) error { return nil }, func() {}, nil
	}
	q, err := loader.CreateQuarantine(b.quarantine)
	if errors.Is(err, loader.ErrQuarantinePath) {
		return nil, nil, usagef("%v", err)
	}
	if err != nil {
		return nil, nil, err
	}
	return q.Commit, q.Abort, nil
}
