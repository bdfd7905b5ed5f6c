package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

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

// policy parses --on-error and --max-bad.
func (b badDataFlags) policy() (loader.BadDataPolicy, error) {
	var p loader.BadDataPolicy
	switch b.onError {
	case "", "stop":
		if b.maxBad != "" || b.quarantine != "" {
			return p, usagef("--max-bad and --quarantine need --on-error skip")
		}
		return p, nil
	case "skip":
		p.Skip = true
	default:
		return p, usagef("--on-error %q: want stop or skip", b.onError)
	}
	if b.maxBad == "" {
		return p, nil
	}
	if pct, ok := strings.CutSuffix(b.maxBad, "%"); ok {
		f, err := strconv.ParseFloat(pct, 64)
		if err != nil || f < 0 || f > 100 {
			return p, usagef("--max-bad %q: want a count or a percentage like 0.1%%", b.maxBad)
		}
		p.MaxBadFraction = f / 100
		if f == 0 {
			p.Skip = false
		}
		return p, nil
	}
	n, err := strconv.Atoi(b.maxBad)
	if err != nil || n < 0 {
		return p, usagef("--max-bad %q: want a count or a percentage like 0.1%%", b.maxBad)
	}
	p.MaxBad = n
	if n == 0 { // no bad sample tolerated: the stop policy
		p.Skip = false
	}
	return p, nil
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
