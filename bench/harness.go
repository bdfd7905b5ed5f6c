package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"github.com/faster-training/faster/fit"
)

// The harness: ours and a peer run as child processes, each printing a
// fit.Summary (`faster train --json`, or the PyTorch peer's script, which
// writes the same schema), in rounds whose order alternates so that a
// shared machine's drift hits every entrant alike.

// RunSummary runs the command name with args (and env, when not nil: the
// child's whole environment), which prints one fit.Summary as JSON, and
// returns it. A failure carries the child's stderr; a cancelled ctx is
// ctx's error.
func RunSummary(ctx context.Context, name string, args, env []string) (fit.Summary, error) {
	var out, errb bytes.Buffer
	c := exec.CommandContext(ctx, name, args...)
	c.Env = env
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		if ctx.Err() != nil {
			return fit.Summary{}, ctx.Err()
		}
		return fit.Summary{}, fmt.Errorf("%v: %s", err, strings.TrimSpace(errb.String()))
	}
	var s fit.Summary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		return fit.Summary{}, fmt.Errorf("its --json summary: %v", err)
	}
	return s, nil
}

// Rounds calls run(round, i) for each of n entrants in each of rounds
// rounds (0-based), in order in even rounds and in reverse in odd ones,
// and stops at the first error.
func Rounds(rounds, n int, run func(round, i int) error) error {
	order := make([]int, n)
	for r := range rounds {
		for i := range order {
			order[i] = i
		}
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, i := range order {
			if err := run(r, i); err != nil {
				return err
			}
		}
	}
	return nil
}

// Median returns the index in v of its median (the lower middle of an
// even count) and v's lowest and highest values.
func Median(v []float64) (i int, low, high float64) {
	if len(v) == 0 {
		return -1, 0, 0
	}
	idx := make([]int, len(v))
	for k := range idx {
		idx[k] = k
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(v[a], v[b]) })
	return idx[(len(idx)-1)/2], v[idx[0]], v[idx[len(idx)-1]]
}

// PairedRatio is how many times faster v is than base, round by round
// (base[r]/v[r], rounds with a zero time left out): the median of those
// ratios and their extremes; ok is false when no round has one.
func PairedRatio(base, v []float64) (mid, low, high float64, ok bool) {
	var ratios []float64
	for r := range min(len(base), len(v)) {
		if v[r] > 0 {
			ratios = append(ratios, base[r]/v[r])
		}
	}
	if len(ratios) == 0 {
		return 0, 0, 0, false
	}
	slices.Sort(ratios)
	return ratios[(len(ratios)-1)/2], ratios[0], ratios[len(ratios)-1], true
}

// RatioText is a ratio with its spread (when there were several rounds);
// one whose spread holds 1.0 is marked ≈: the runs do not show a
// difference.
func RatioText(mid, low, high float64, spread bool) string {
	if !spread {
		return fmt.Sprintf("%.2f×", mid)
	}
	t := fmt.Sprintf("%.2f× [%.2f–%.2f]", mid, low, high)
	if low <= 1 && 1 <= high {
		t = "≈" + t
	}
	return t
}
