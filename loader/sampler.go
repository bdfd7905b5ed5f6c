package loader

import (
	"fmt"

	"github.com/faster-training/faster/source"
)

// SamplerIndices is Options.Sampler for an order the caller gives each
// epoch (SetOrder).
const SamplerIndices = "indices"

// MaxRepeats bounds Options.Repeats (RASampler's repetitions).
const MaxRepeats = 64

// MaxOrder bounds the positions of one epoch's order given to SetOrder.
const MaxOrder = 1 << 31

// raBatchUnit is RASampler's rounding: it serves floor(n // 256 · 256 /
// world) samples per rank (torchvision's references/classification/
// sampler.py, num_selected_samples).
const raBatchUnit = 256

// RASamplerCounts returns what torchvision's RASampler serves of n samples
// with reps repetitions on world ranks: numSamples (each rank's part of
// the repeated order, padded: ceil(n·reps/world)), total (numSamples ·
// world) and selected (what each rank serves of its part:
// floor(n//256·256/world)).
func RASamplerCounts(n, reps, world int) (numSamples, total, selected int) {
	numSamples = (n*reps + world - 1) / world
	return numSamples, numSamples * world, n / raBatchUnit * raBatchUnit / world
}

// repeated is RASampler's order over all ranks: of's samples each
// repeated reps times in a row, padded by its own start to total
// positions, cut to selected·world positions so that rank r's stride
// r, r+world, … is RASampler's indices[r:total:world][:selected]. A
// position's value is copy·n + sample: the copy (which repetition; a
// padding position counts on from reps) gives each its own augmentation
// (copies.Record).
type repeated struct {
	of                 ordering
	n, reps, positions int
}

func (r repeated) Len() int { return r.positions }
func (r repeated) At(pos int) int {
	k, pad := pos, 0
	if all := r.n * r.reps; k >= all {
		k, pad = k%all, r.reps
	}
	return (k%r.reps+pad)*r.n + r.of.At(k/r.reps)
}

// list is an order given as values (SetOrder).
type list []int

func (l list) Len() int       { return len(l) }
func (l list) At(pos int) int { return l[pos] }

// globalOrder is epoch e's order over all ranks, of seed: the dataset's
// permutation (or index order), or RASampler's repeated one.
func (l *Loader) globalOrder(seed uint64, e int) ordering {
	perm := epochPerm(seed, e, l.n, l.shuffles())
	if l.opts.Repeats > 0 {
		_, _, sel := RASamplerCounts(l.n, l.opts.Repeats, l.opts.NumShards)
		return repeated{of: perm, n: l.n, reps: l.opts.Repeats, positions: sel * l.opts.NumShards}
	}
	return perm
}

// initSampler checks Repeats and Sampler against the data, and sizes the
// ranks' epochs by them.
func (l *Loader) initSampler() error {
	o := l.opts
	if o.Repeats == 0 && o.Sampler == "" {
		return nil
	}
	if o.Sampler != "" && o.Sampler != SamplerIndices {
		return fmt.Errorf("sampler %q: want %q (an order given each epoch) or none", o.Sampler, SamplerIndices)
	}
	if o.Repeats < 0 || o.Repeats > MaxRepeats {
		return fmt.Errorf("repeated augmentation %d: want 0 (off) to %d repetitions", o.Repeats, MaxRepeats)
	}
	if o.Repeats > 0 && o.Sampler != "" {
		return fmt.Errorf("repeated augmentation %d with sampler %q: the sampler's order is the whole order; repeat in it", o.Repeats, o.Sampler)
	}
	what := fmt.Sprintf("sampler %q (an order of dataset positions)", o.Sampler)
	if o.Repeats > 0 {
		what = fmt.Sprintf("repeated augmentation (RASampler, %d repetitions)", o.Repeats)
	}
	if !l.indexed {
		return fmt.Errorf("%s needs data read by position; this %s dataset is streamed in file order (TFRecord shards without --global-shuffle, .tar.gz): pack it with indexes, or use --global-shuffle with indexed shards", what, l.kind)
	}
	if o.Repeats > 0 {
		_, _, sel := RASamplerCounts(l.n, o.Repeats, o.NumShards)
		if sel == 0 {
			return fmt.Errorf("%s: RASampler serves floor(%d // 256 · 256 / %d) = 0 samples per rank of this dataset of %d", what, l.n, o.NumShards, l.n)
		}
		l.local, l.per = sel, l.rankCounts(sel*o.NumShards)
	}
	if o.Sampler == SamplerIndices {
		l.local, l.per = -1, nil // the caller's order says
	}
	return nil
}

// SetOrder gives the order of this rank's next epoch (Sampler
// SamplerIndices): the dataset positions to serve, in order, repeats
// allowed (each repeat of a position is augmented anew). The epoch serves
// exactly these, batched as usual; the next epoch needs its own order.
func (l *Loader) SetOrder(idx []int) error {
	if l.opts.Sampler != SamplerIndices {
		return fmt.Errorf("an order of dataset positions needs the loader opened with sampler %q", SamplerIndices)
	}
	if len(idx) > MaxOrder {
		return fmt.Errorf("sampler order of %d positions: at most %d", len(idx), MaxOrder)
	}
	seen := make([]int32, l.n)
	vals := make(list, len(idx))
	for i, v := range idx {
		if v < 0 || v >= l.n {
			return fmt.Errorf("sampler index %d (at position %d of the epoch's order): the dataset has %d samples, 0 to %d", v, i, l.n, l.n-1)
		}
		vals[i] = int(seen[v])*l.n + v
		seen[v]++
	}
	l.mu.Lock()
	l.custom = vals
	l.mu.Unlock()
	return nil
}

// orderReady reports why epoch e cannot run with the sampler's order: none
// was given.
func (l *Loader) orderReady(e int) error {
	if l.opts.Sampler != SamplerIndices {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.custom == nil {
		return fmt.Errorf("epoch %d: sampler %q: no order given for it (SetOrder, or the client's sampler each epoch)", e, SamplerIndices)
	}
	return nil
}

// takeOrder returns the order SetOrder gave and forgets it.
func (l *Loader) takeOrder() ordering {
	l.mu.Lock()
	defer l.mu.Unlock()
	o := l.custom
	l.custom = nil
	if o == nil {
		return list(nil)
	}
	return o
}

// copies wraps an indexed dataset whose orders hold copies (Repeats, or a
// sampler's order with repeats): a value copy·n + sample reads sample,
// its ID mixed with the copy so that each copy draws its own
// augmentation.
func (l *Loader) copies(ds source.Indexed) source.Indexed {
	if l.opts.Repeats == 0 && l.opts.Sampler == "" {
		return ds
	}
	c := copied{Indexed: ds, n: ds.Len()}
	if r, ok := ds.(source.Remote); ok {
		return remoteCopied{c, r}
	}
	return c
}

type copied struct {
	source.Indexed
	n int
}

func (c copied) Record(v int) (source.Record, error) {
	if c.n == 0 {
		return c.Indexed.Record(v)
	}
	r, err := c.Indexed.Record(v % c.n)
	if k := v / c.n; k > 0 {
		r.ID = mix64(r.ID ^ uint64(k)*0x9e3779b97f4a7c15)
	}
	return r, err
}

type remoteCopied struct {
	copied
	source.Remote
}

// SetSeed makes seed the loader's Options.Seed from the next epoch on: its
// orders and augmentations are then those of a loader opened with it (the
// Python client's seed drawn from torch's generator at its first
// iteration). Call it between epochs, not while one runs.
func (l *Loader) SetSeed(seed uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.opts.Seed == seed {
		return
	}
	l.opts.Seed = seed
	// The pipelines built so far hold the old seed.
	clear(l.byRes)
	clear(l.stats)
}
