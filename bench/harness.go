package bench

import (
	"bytes"
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
