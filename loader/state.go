package loader

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/faster-training/faster/internal/atomicfile"
	"github.com/faster-training/faster/pipeline"
	"github.com/faster-training/faster/source"
)

// StateVersion is the version of the State JSON written by this package.
const StateVersion = 2 // 2: orders from pipeline.Permutation (1: math/rand's Perm)

// State is a loader's exact position within an epoch, small enough to save
// at every step. The epoch's order is a deterministic function of (Seed,
// Epoch, Samples, Shuffle): the global permutation of all samples. A run
// with World ranks serves, on rank r, positions r, r+World, … of the
// samples not yet served; Segments records, run by run, the world size and
// how many positions each rank consumed (served, or skipped as bad data),
// so the served set is known exactly. Resuming removes the served
// positions (keeping permutation order) and re-shards the rest by stride
// over the new world size: the same samples are never served twice and
// none is lost, whatever the number of ranks.
type State struct {
	Version int    `json:"version"`
	Epoch   int    `json:"epoch"`
	Seed    uint64 `json:"seed"`
	Shuffle bool   `json:"shuffle"`
	Samples int    `json:"samples"` // dataset size
	// Stream marks the state of a streamed dataset (shards read without
	// an index): its order depends on the ranks, so it resumes only with
	// the world size it was saved with, each rank skipping what it read.
	Stream   bool      `json:"stream,omitempty"`
	Segments []Segment `json:"segments,omitempty"`
	// Fingerprint names the data the state was saved on (see
	// Loader.Fingerprint): a loader over other data refuses the state,
	// naming both. A state saved before fingerprints has none and is
	// checked by the fields above only.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Repeats is the loader's Options.Repeats (RASampler's repetitions; 0:
	// none): the order it counts positions of.
	Repeats int `json:"repeated_augmentation,omitempty"`
}

// Bounds on a State's fields, checked (Validate) before any of them sizes
// anything: a state comes from a file or a client.
const (
	// MaxEpoch is the largest epoch a state (or `faster serve`'s epoch
	// request) may name.
	MaxEpoch = 1 << 31
	// MaxSegments is the most runs one epoch's state may record: each
	// interruption and resume within the epoch adds one, and each costs
	// a step of indirection per sample served.
	MaxSegments = 1024
	// MaxWorld is the most ranks a segment may record.
	MaxWorld = 1 << 20
	// maxSteps and maxBatch bound a segment's Steps and Batch, so that
	// their product (the rows a rank served) cannot overflow.
	maxSteps = 1 << 40
	maxBatch = 1 << 20
	// maxFingerprint bounds the length of State.Fingerprint.
	maxFingerprint = 64
)

// Validate reports every field of s that no epoch of any dataset can have,
// each named as in the JSON ("segments[1].consumed[0] -2"), as ErrResume:
// an epoch outside [0, MaxEpoch], a negative sample count, more than
// MaxSegments segments, a world outside [1, MaxWorld] or with another
// number of counts, a count below -1 (unknown) or above the samples (when
// known: a stream's may be 0), negative or overflowing steps and batch.
// Whether s fits a given loader (its size, seed, data) is checked when the
// loader takes it.
func (s State) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if s.Epoch < 0 || s.Epoch > MaxEpoch {
		bad("epoch %d: want 0 to %d", s.Epoch, MaxEpoch)
	}
	if s.Samples < 0 {
		bad("samples %d: want at least 0", s.Samples)
	}
	if len(s.Fingerprint) > maxFingerprint {
		bad("fingerprint of %d bytes: want at most %d", len(s.Fingerprint), maxFingerprint)
	}
	if len(s.Segments) > MaxSegments {
		bad("%d segments: want at most %d (one per run within the epoch)", len(s.Segments), MaxSegments)
		return joinResume(errs)
	}
	for i, seg := range s.Segments {
		if seg.World < 1 || seg.World > MaxWorld {
			bad("segments[%d].world %d: want 1 to %d", i, seg.World, MaxWorld)
		} else if len(seg.Consumed) != seg.World {
			bad("segments[%d].consumed: %d counts for world %d", i, len(seg.Consumed), seg.World)
		}
		for r, c := range seg.Consumed {
			if c < -1 || (s.Samples > 0 && c > s.Samples) {
				bad("segments[%d].consumed[%d] %d: want -1 (unknown) to %d", i, r, c, max(s.Samples, 0))
				break // one per segment: a forged list may be long
			}
		}
		if seg.Steps < 0 || seg.Steps > maxSteps {
			bad("segments[%d].steps %d: want 0 to %d", i, seg.Steps, maxSteps)
		}
		if seg.Batch < 0 || seg.Batch > maxBatch {
			bad("segments[%d].batch %d: want 0 to %d", i, seg.Batch, maxBatch)
		}
	}
	return joinResume(errs)
}

// joinResume is errs as one ErrResume on one line, or nil.
func joinResume(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	msg := make([]string, len(errs))
	for i, e := range errs {
		msg[i] = e.Error()
	}
	return fmt.Errorf("%w: %s", ErrResume, strings.Join(msg, "; "))
}

// Segment is one run within an epoch: its world size and the positions each
// rank consumed (-1: not known on this rank; see MergeStates).
type Segment struct {
	World    int   `json:"world"`
	Consumed []int `json:"consumed"`
	// Steps, if set, is how many batches of Batch rows every rank had
	// taken, the ranks running in lockstep (what a client that saves one
	// rank's state knows of the others; see FillLockstep).
	Steps int `json:"steps,omitempty"`
	Batch int `json:"batch,omitempty"`
}

// FillLockstep returns s with the unknown counts (-1) of its segments
// filled in as ranks that ran in lockstep consumed them: every rank Steps
// batches of Batch rows of its own part, or, without Steps, as many
// positions as the most any known rank consumed, each capped at the size
// of the rank's part. A state saved by one rank then stands for all, as a
// training script that checkpoints on rank 0 only needs. It is exact
// unless ranks skipped different numbers of bad samples; merge every
// rank's state (MergeStates) for that.
func FillLockstep(s State) (State, error) {
	n := s.Samples
	out := s
	out.Segments = slices.Clone(s.Segments)
	for i := range out.Segments {
		seg := &out.Segments[i]
		if seg.World < 1 || len(seg.Consumed) != seg.World {
			return State{}, fmt.Errorf("%w: segment %d: world %d with %d counts", ErrResume, i, seg.World, len(seg.Consumed))
		}
		known := -1
		for _, c := range seg.Consumed {
			known = max(known, c)
		}
		if known < 0 {
			return State{}, fmt.Errorf("%w: segment %d has no rank's count", ErrResume, i)
		}
		if seg.Steps > 0 && seg.Batch > 0 {
			known = seg.Steps * seg.Batch
		}
		if slices.Contains(seg.Consumed, -1) {
			seg.Consumed = slices.Clone(seg.Consumed)
			for r, c := range seg.Consumed {
				if c < 0 {
					seg.Consumed[r] = min(known, strideLen(n, seg.World, r))
				}
			}
		}
		for _, c := range seg.Consumed {
			n -= c
		}
	}
	return out, nil
}

// ErrResume marks a state that cannot resume this loader.
var ErrResume = errors.New("loader: cannot resume from this state")

// MergeStates combines the states saved by the ranks of one run (each knows
// its own rank's count) into one State with every count known.
func MergeStates(states ...State) (State, error) {
	if len(states) == 0 {
		return State{}, fmt.Errorf("%w: no states", ErrResume)
	}
	out := states[0]
	out.Segments = slices.Clone(out.Segments)
	if n := len(out.Segments); n > 0 {
		out.Segments[n-1].Consumed = slices.Clone(out.Segments[n-1].Consumed)
	}
	for _, s := range states[1:] {
		if s.Fingerprint != out.Fingerprint && s.Fingerprint != "" && out.Fingerprint != "" {
			return State{}, fmt.Errorf("%w: states of different data (fingerprint %s and %s)", ErrResume, out.Fingerprint, s.Fingerprint)
		}
		if out.Fingerprint == "" {
			out.Fingerprint = s.Fingerprint
		}
		if s.Epoch != out.Epoch || s.Seed != out.Seed || s.Samples != out.Samples || s.Shuffle != out.Shuffle || s.Repeats != out.Repeats || len(s.Segments) != len(out.Segments) {
			return State{}, fmt.Errorf("%w: states of different runs (epoch %d/%d, seed %d/%d, samples %d/%d)", ErrResume, out.Epoch, s.Epoch, out.Seed, s.Seed, out.Samples, s.Samples)
		}
		for i, seg := range s.Segments {
			o := &out.Segments[i]
			if seg.World != o.World || len(seg.Consumed) != len(o.Consumed) {
				return State{}, fmt.Errorf("%w: segment %d: world %d vs %d", ErrResume, i, o.World, seg.World)
			}
			for r, c := range seg.Consumed {
				switch {
				case c < 0:
				case o.Consumed[r] < 0:
					o.Consumed[r] = c
				case o.Consumed[r] != c:
					return State{}, fmt.Errorf("%w: segment %d rank %d consumed %d and %d", ErrResume, i, r, o.Consumed[r], c)
				}
			}
		}
	}
	return out, nil
}

// LoadState reads a State saved with SaveState.
func LoadState(path string) (State, error) {
	b, err := source.ReadFile(path, maxStateSize) // a regular file: a FIFO would block
	if err != nil {
		return State{}, err
	}
	return ParseState(b, path)
}

// maxStateSize bounds a State file (a few integers per rank and run).
const maxStateSize = 64 << 20

// ParseState decodes a State as written by SaveState and checks its
// fields (Validate); name is used in errors.
func ParseState(b []byte, name string) (State, error) {
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return State{}, fmt.Errorf("%s: %w", name, err)
	}
	if s.Version != StateVersion {
		return State{}, fmt.Errorf("%s: state version %d, this build reads %d", name, s.Version, StateVersion)
	}
	if err := s.Validate(); err != nil {
		return State{}, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

// SaveState writes s as JSON, atomically.
func SaveState(path string, s State) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(b, '\n'), 0o644)
}

// ordering is an epoch's order of samples, by position: the global order,
// one rank's part of it, or what a resumed epoch has left. Computed orders
// (identity, Permutation, a rank's stride) take no memory per sample.
type ordering interface {
	Len() int
	At(pos int) int // the sample's global index
}

type identity int

func (n identity) Len() int     { return int(n) }
func (identity) At(pos int) int { return pos }

// stride is positions rank, rank+world, … of an ordering.
type stride struct {
	of          ordering
	rank, world int
}

func (s stride) Len() int       { return strideLen(s.of.Len(), s.world, s.rank) }
func (s stride) At(pos int) int { return s.of.At(s.rank + pos*s.world) }

// epochPerm is the epoch's global order of n samples: a keyed permutation
// computed position by position (pipeline.Permutation), so 100 million
// samples cost no memory for the order.
func epochPerm(seed uint64, epoch, n int, shuffle bool) ordering {
	if !shuffle {
		return identity(n)
	}
	return pipeline.NewPermutation(n, seed, int64(epoch), 0x726573756d65)
}

// mix64 is SplitMix64's finaliser.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// remaining applies the segments to the epoch's order: what is left to
// serve, in order. A segment's ranks consumed positions r, r+W, … up to
// their counts, so what it served is every position below min(count)·W
// and a band below max(count)·W: what is left is the band's unserved
// positions (at most W·(max−min) of them, listed) and then the whole
// tail, computed. The memory is O(world × the ranks' spread), never
// O(samples), whatever the epoch's size.
func remaining(ord ordering, segs []Segment) (ordering, error) {
	budget := ord.Len() // positions the bands may list in all: 8 bytes a sample at most
	for si, seg := range segs {
		if seg.World < 1 || len(seg.Consumed) != seg.World {
			return nil, fmt.Errorf("%w: segment %d: world %d with %d counts", ErrResume, si, seg.World, len(seg.Consumed))
		}
		n := ord.Len()
		lo, hi := -1, 0
		for r, c := range seg.Consumed {
			if c < 0 {
				return nil, fmt.Errorf("%w: segment %d lacks rank %d's count (merge the ranks' states)", ErrResume, si, r)
			}
			if c > strideLen(n, seg.World, r) {
				return nil, fmt.Errorf("%w: segment %d: rank %d consumed %d of %d", ErrResume, si, r, c, strideLen(n, seg.World, r))
			}
			if lo < 0 || c < lo {
				lo = c
			}
			hi = max(hi, c)
		}
		tail := min(hi*seg.World, n)
		// The band's size, counted before it is listed: rank r left
		// positions c..hi-1 of its stride below tail unserved. Ranks
		// that ran in lockstep leave a few (the bad samples one skipped
		// more than another); a forged state may leave what is left of
		// the epoch in every run.
		size := 0
		for r, c := range seg.Consumed {
			size += max(0, strideLen(tail, seg.World, r)-c)
		}
		if budget -= size; budget < 0 {
			return nil, fmt.Errorf("%w: segment %d leaves %d positions unserved behind its ranks' counts (%d to %d): more, over the state's runs, than the epoch has; ranks that ran in lockstep differ by the bad samples they skipped",
				ErrResume, si, size, lo, hi)
		}
		band := make([]int, 0, size)
		for p := lo * seg.World; p < tail; p++ {
			if r, k := p%seg.World, p/seg.World; k >= seg.Consumed[r] {
				band = append(band, p)
			}
		}
		ord = rest{of: ord, band: band, tail: tail}
	}
	return ord, nil
}

// rest is what is left of an ordering once a segment served from it: the
// listed band positions, then every position from tail on.
type rest struct {
	of   ordering
	band []int
	tail int
}

func (r rest) Len() int { return len(r.band) + r.of.Len() - r.tail }
func (r rest) At(pos int) int {
	if pos < len(r.band) {
		return r.of.At(r.band[pos])
	}
	return r.of.At(r.tail + pos - len(r.band))
}

// strideLen is the size of part i of n parts of total taken by stride.
func strideLen(total, n, i int) int {
	if i >= total {
		return 0
	}
	return (total - i + n - 1) / n
}
