package loader

import (
	"context"
	"fmt"
	"io"
	"slices"
)

type planKey struct{}

// streamKey carries the counter that numbers a streamed epoch's samples
// in the order this rank reads them (Sample.pos), from the epoch's start.
type streamKey struct{}

// number gives a streamed sample its position in this rank's epoch.
func number(ctx context.Context, s Sample) (Sample, error) {
	if c, ok := ctx.Value(streamKey{}).(*int); ok {
		s.pos = *c
		*c++
	}
	return s, nil
}

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
	return l.opts.Resume != nil && (l.resume != nil || l.skip > 0) && e == l.opts.Resume.Epoch
}

// order returns what is left of epoch e to serve over all ranks.
func (l *Loader) order(e int) ordering {
	if l.resumes(e) && l.resume != nil {
		return l.resume
	}
	return l.globalOrder(l.opts.Seed, e)
}

// plan returns this rank's part of epoch e's order: positions rank,
// rank+world, … of what is left (computed, not listed), lengthened as
// DistributedSampler pads (padded) when ranks' parts differ and neither
// Drop nor Exact is set.
func (l *Loader) plan(e int) ordering {
	if l.opts.Sampler == SamplerIndices {
		return l.takeOrder() // this rank's own, as the caller gave it
	}
	s := stride{of: l.order(e), rank: l.opts.ShardIdx, world: l.opts.NumShards}
	if l.opts.Drop || l.opts.Exact {
		return s
	}
	if rows := l.epochRows(l.rankCounts(s.of.Len())); rows > s.Len() {
		p := padded{stride: s, rows: rows, full: s.of}
		if l.resumes(e) {
			// Repeat what the epoch would have repeated had it not been
			// interrupted: the whole epoch's first samples, continuing
			// this rank's positions when the world size is unchanged.
			p.full, p.offset = l.globalOrder(l.opts.Seed, e), l.padOffset
		}
		return p
	}
	return s
}

// padded is a rank's part of an order lengthened to rows positions the way
// PyTorch's DistributedSampler(drop_last=False) pads: the order is
// extended by its own first samples to rows·world positions, rank r
// serving r, r+world, …, so position p beyond the rank's own part serves
// the order's sample (rank + p·world) mod its length. A rank without a
// sample of its own (fewer samples than ranks) still serves rows. In a
// resumed epoch the repeats come from the whole epoch's order (full), the
// positions shifted by what this rank served before (offset), so that
// they are the repeats the uninterrupted epoch serves.
type padded struct {
	stride
	rows   int
	full   ordering
	offset int
}

func (p padded) Len() int { return p.rows }
func (p padded) At(pos int) int {
	if pos < p.stride.Len() {
		return p.stride.At(pos)
	}
	return p.full.At((p.rank + (pos+p.offset)*p.world) % p.full.Len())
}

// ownLen is how many positions of ord are this rank's own samples, the
// rest (padded) repeating others'.
func ownLen(ord ordering) int {
	if p, ok := ord.(padded); ok {
		return p.stride.Len()
	}
	return ord.Len()
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

// Consumed returns how many positions of this rank's epoch order have been
// consumed once batch b, of the epoch running, is served: the samples of b
// and of the batches before it, and the bad samples skipped among them
// (what State counts at b). It is -1 when b holds only repeats, which
// consume nothing.
func (l *Loader) Consumed(b *Batch) int {
	hi := -1
	for i := range b.Valid {
		if it := &b.Items[i]; !it.rep && it.pos >= 0 {
			hi = max(hi, it.pos)
		}
	}
	if hi < 0 {
		return -1
	}
	l.stMu.Lock()
	defer l.stMu.Unlock()
	return min(hi+1, l.stLen)
}

// advance records that the consumer has been given batch b.
func (l *Loader) advance(b *Batch) {
	c := l.Consumed(b)
	l.stMu.Lock()
	l.stCons = max(l.stCons, c)
	l.stMu.Unlock()
}

// State returns the loader's position: the epoch being served and how
// many positions this rank has consumed (every sample of the batches
// yielded so far, and the bad ones skipped before them). After an epoch
// ends it names the start of the next. Other ranks' counts are -1: merge
// the ranks' states with MergeStates (in lockstep data-parallel training
// they are equal to within the last batch), or let FillLockstep infer
// them. A streaming source's state resumes only with the same ranks.
func (l *Loader) State() (State, error) {
	fp := l.Fingerprint()
	l.stMu.Lock()
	defer l.stMu.Unlock()
	s := State{Version: StateVersion, Seed: l.opts.Seed, Shuffle: l.shuffles(), Samples: l.n, Stream: !l.indexed, Fingerprint: fp, Repeats: l.opts.Repeats}
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
	if l.opts.Sampler == SamplerIndices {
		return State{}, fmt.Errorf("%w: epoch %d runs the caller's order (sampler %q), which a state cannot hold: save between epochs, or resume the sampler itself", ErrResume, s.Epoch, SamplerIndices)
	}
	if l.resumes(l.stEpoch) && l.indexed { // a stream counts from the epoch's start
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

// SetResume makes the epoch s names continue from s's position when it
// next runs (as Options.Resume does at Open): the way a long-lived loader,
// such as the one behind `faster serve`, loads a saved state. Call it
// between epochs, not while one runs.
func (l *Loader) SetResume(s State) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	old, oldRes, oldSkip, oldRows := l.opts.Resume, l.resume, l.skip, l.skipRows
	l.opts.Resume = &s
	if err := l.initResume(s); err != nil {
		l.opts.Resume, l.resume, l.skip, l.skipRows = old, oldRes, oldSkip, oldRows
		return err
	}
	for k := range l.byRes {
		if k.resumed { // built for the last state's rows
			delete(l.byRes, k)
			delete(l.stats, k)
		}
	}
	l.stAny = false
	return nil
}

// initResume checks a state against this loader and computes what is left
// of its epoch.
func (l *Loader) initResume(s State) error {
	if s.Version != StateVersion {
		return fmt.Errorf("%w: state version %d", ErrResume, s.Version)
	}
	if err := s.Validate(); err != nil {
		return err
	}
	if fp := l.Fingerprint(); s.Fingerprint != "" && s.Fingerprint != fp {
		return fmt.Errorf("%w: the state was saved on other data (fingerprint %s); this loader's data has fingerprint %s (a %s dataset of %d samples: %s)",
			ErrResume, s.Fingerprint, fp, l.kind, l.n, fingerprintCovers)
	}
	if s.Repeats != l.opts.Repeats {
		return fmt.Errorf("%w: the state's order repeats each sample %d times (repeated augmentation); this loader's %d", ErrResume, max(s.Repeats, 1), max(l.opts.Repeats, 1))
	}
	if l.opts.Sampler == SamplerIndices && len(s.Segments) > 0 {
		return fmt.Errorf("%w: sampler %q: the caller's order is sent each epoch and a position within it is not kept; resume at an epoch's start (the state of a finished epoch)", ErrResume, SamplerIndices)
	}
	if s.Samples != l.n || s.Seed != l.opts.Seed || s.Shuffle != l.shuffles() || s.Epoch < 0 || s.Stream == l.indexed {
		return fmt.Errorf("%w: state is of %d samples, seed %d, shuffle %v, %s; this loader has %d samples, seed %d, shuffle %v, %s",
			ErrResume, s.Samples, s.Seed, s.Shuffle, kindOfState(s.Stream), l.n, l.opts.Seed, l.shuffles(), kindOfState(!l.indexed))
	}
	s, err := FillLockstep(s)
	if err != nil {
		return err
	}
	l.resume, l.skip, l.skipRows = nil, 0, 0
	if !l.indexed {
		// A stream's order depends on the ranks (files are sharded among
		// them): only the same ranks can go on, each skipping what it read.
		if len(s.Segments) > 1 || (len(s.Segments) == 1 && s.Segments[0].World != l.opts.NumShards) {
			return fmt.Errorf("%w: a streamed dataset (shards without an index) resumes with the ranks it was saved with (%s), not %d; pack with indexes or use global shuffle to change the world size",
				ErrResume, segmentWorlds(s.Segments), l.opts.NumShards)
		}
		if len(s.Segments) == 1 {
			c := s.Segments[0].Consumed[l.opts.ShardIdx]
			if c > l.local {
				return fmt.Errorf("%w: rank %d consumed %d of its %d samples", ErrResume, l.opts.ShardIdx, c, l.local)
			}
			seg := s.Segments[0]
			if rows := l.SamplesPerEpoch(); rows >= 0 && seg.Steps*seg.Batch > rows {
				return fmt.Errorf("%w: segments[0].steps %d of batch %d: %d rows, more than rank %d's epoch has (%d)",
					ErrResume, seg.Steps, seg.Batch, seg.Steps*seg.Batch, l.opts.ShardIdx, rows)
			}
			l.skip = c
			l.skipRows = seg.Steps * seg.Batch
		}
		return nil
	}
	rem, err := remaining(l.globalOrder(s.Seed, s.Epoch), s.Segments)
	if err != nil {
		return err
	}
	l.resume, l.padOffset = rem, 0
	if n := len(s.Segments); n > 0 && s.Segments[n-1].World == l.opts.NumShards {
		l.padOffset = s.Segments[n-1].Consumed[l.opts.ShardIdx]
	}
	return nil
}

func kindOfState(stream bool) string {
	if stream {
		return "streamed"
	}
	return "indexed"
}

func segmentWorlds(segs []Segment) string {
	w := make([]int, len(segs))
	for i, s := range segs {
		w[i] = s.World
	}
	return fmt.Sprint(w)
}
