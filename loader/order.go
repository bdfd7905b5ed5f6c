package loader

import (
	"context"
	"fmt"
	"io"
	"slices"
)

type planKey struct{}

// planOf returns the epoch's order for this rank: the samples' global
// indices, in the order served.
func planOf(ctx context.Context) ordering {
	p, _ := ctx.Value(planKey{}).(ordering)
	if p == nil {
		return identity(0)
	}
	return p
}

// resumes reports whether epoch e is the one Options.Resume continues.
func (l *Loader) resumes(e int) bool {
	return l.indexed && l.opts.Resume != nil && l.resume != nil && e == l.opts.Resume.Epoch
}

// order returns what is left of epoch e to serve over all ranks.
func (l *Loader) order(e int) ordering {
	if l.resumes(e) {
		return l.resume
	}
	return epochPerm(l.opts.Seed, e, l.n, l.shuffles())
}

// plan returns this rank's part of epoch e's order: positions rank,
// rank+world, … of what is left (computed, not listed).
func (l *Loader) plan(e int) ordering {
	return stride{of: l.order(e), rank: l.opts.ShardIdx, world: l.opts.NumShards}
}

// rankCounts returns how many samples each rank serves of n left.
func (l *Loader) rankCounts(n int) []int {
	c := make([]int, l.opts.NumShards)
	for r := range c {
		c[r] = strideLen(n, l.opts.NumShards, r)
	}
	return c
}

// positions is the list stage of indexed sources: it yields the positions
// 0 … len(plan)-1 of the epoch's plan.
func positions(ctx context.Context, i int) (int, error) {
	if i >= planOf(ctx).Len() {
		return 0, io.EOF
	}
	return i, nil
}

// advance records that the consumer has been given batch b.
func (l *Loader) advance(b *Batch) {
	hi := -1
	for i := range b.Valid {
		hi = max(hi, b.Items[i].pos)
	}
	if hi < 0 {
		return
	}
	l.stMu.Lock()
	l.stCons = max(l.stCons, hi+1)
	l.stMu.Unlock()
}

// State returns the loader's position: the epoch being served and how
// many positions this rank has consumed (every sample of the batches
// yielded so far, and the bad ones skipped before them). After an epoch
// ends it names the start of the next. Other ranks' counts are -1: merge
// the ranks' states with MergeStates (in lockstep data-parallel training
// they are equal to within the last batch). Only indexed sources have a
// state.
func (l *Loader) State() (State, error) {
	if !l.indexed {
		return State{}, fmt.Errorf("%w: %s sources stream their records; exact resume needs an indexed source (ImageFolder, LMDB, WebDataset, or shards with GlobalShuffle)", ErrResume, l.kind)
	}
	l.stMu.Lock()
	defer l.stMu.Unlock()
	s := State{Version: StateVersion, Seed: l.opts.Seed, Shuffle: l.shuffles(), Samples: l.n}
	switch {
	case !l.stAny && l.opts.Resume != nil:
		r := *l.opts.Resume
		r.Segments = slices.Clone(r.Segments)
		return r, nil
	case !l.stAny:
		return s, nil
	case l.stDone:
		s.Epoch = l.stEpoch + 1
		return s, nil
	}
	s.Epoch = l.stEpoch
	if l.resumes(l.stEpoch) {
		s.Segments = slices.Clone(l.opts.Resume.Segments)
	}
	cons := make([]int, l.opts.NumShards)
	for r := range cons {
		cons[r] = -1
	}
	cons[l.opts.ShardIdx] = l.stCons
	s.Segments = append(s.Segments, Segment{World: l.opts.NumShards, Consumed: cons})
	return s, nil
}

// initResume checks a state against this loader and computes what is left
// of its epoch.
func (l *Loader) initResume(s State) error {
	if !l.indexed {
		_, err := l.State()
		return err
	}
	if s.Version != StateVersion {
		return fmt.Errorf("%w: state version %d", ErrResume, s.Version)
	}
	if s.Samples != l.n || s.Seed != l.opts.Seed || s.Shuffle != l.shuffles() || s.Epoch < 0 {
		return fmt.Errorf("%w: state is of %d samples, seed %d, shuffle %v; this loader has %d samples, seed %d, shuffle %v",
			ErrResume, s.Samples, s.Seed, s.Shuffle, l.n, l.opts.Seed, l.shuffles())
	}
	rem, err := remaining(epochPerm(s.Seed, s.Epoch, s.Samples, s.Shuffle), s.Segments)
	if err != nil {
		return err
	}
	l.resume = rem
	return nil
}
