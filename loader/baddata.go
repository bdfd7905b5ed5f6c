package loader

import (
	"errors"
	"fmt"
	"sync"

	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/shard"
)

// BadDataPolicy says what a loader does with a sample whose bytes are
// damaged (a record failing its CRCs, a Datum that does not parse, an
// image that does not decode). The zero value stops at the first one.
type BadDataPolicy struct {
	// Skip skips bad samples, records each in the quarantine list and goes
	// on, until the budget below is exceeded.
	Skip bool
	// MaxBad is the most bad samples tolerated per epoch on this rank, and
	// MaxBadFraction the most as a fraction of the rank's samples; the
	// epoch fails when either is exceeded. Both zero: no limit.
	MaxBad         int
	MaxBadFraction float64
}

// BadSample is one quarantined sample: where it is and why it is bad.
// Offset is the byte offset of the damaged record (-1 when the format
// names records by key, as LMDB does).
type BadSample struct {
	Path   string `json:"path"`
	Offset int64  `json:"offset"`
	Key    string `json:"key,omitempty"`
	Reason string `json:"reason"`
}

// ErrTooManyBad marks an epoch stopped because bad samples exceeded the
// budget.
var ErrTooManyBad = errors.New("loader: too many bad samples")

// isBadData reports whether err is damage in the data rather than a
// failure to read it: the one definition of a bad sample (see
// docs/badinput.md). A path that is no regular file (a FIFO, a device, a
// directory named .JPEG, a dangling symlink, a loop) or above the size
// cap, and an image above the pixel limit, are bad samples too.
func isBadData(err error) bool {
	return shard.IsDamage(err) || errors.Is(err, imgcodec.ErrCorrupt) ||
		errors.Is(err, imgcodec.ErrUnknownFormat) || errors.Is(err, imgcodec.ErrUnsupported) ||
		errors.Is(err, imgcodec.ErrTooLarge)
}

// badOf describes err as a quarantine entry (shard.DamageOf: the file and
// offset its corruption error carries, else path, off and key).
func badOf(err error, path string, off int64, key string) *BadSample {
	d := shard.DamageOf(err, path, off, key)
	return &BadSample{Path: d.Path, Offset: d.Offset, Key: d.Key, Reason: d.Reason}
}

// quarantine is a loader's list of bad samples and its budget check.
type quarantine struct {
	mu     sync.Mutex
	list   []BadSample
	epoch  map[int]int // bad samples per epoch
	seen   map[badKey]bool
	notify func(BadSample)
}

// badKey names one bad sample in one epoch.
type badKey struct {
	epoch int
	path  string
	off   int64
	key   string
}

// add records b in epoch e and returns an error when the budget of policy
// p over a rank of n samples is exceeded. A sample met again in the same
// epoch (the epoch run twice, or re-read to pad it: see StepsPerEpoch) is
// counted once.
func (q *quarantine) add(b BadSample, e int, p BadDataPolicy, n int) error {
	q.mu.Lock()
	bk := badKey{e, b.Path, b.Offset, b.Key}
	if q.seen[bk] {
		q.mu.Unlock()
		return nil
	}
	if q.seen == nil {
		q.seen = map[badKey]bool{}
	}
	q.seen[bk] = true
	q.list = append(q.list, b)
	if q.epoch == nil {
		q.epoch = map[int]int{}
	}
	q.epoch[e]++
	k := q.epoch[e]
	notify := q.notify
	q.mu.Unlock()
	if notify != nil {
		notify(b)
	}
	if p.MaxBad > 0 && k > p.MaxBad || p.MaxBadFraction > 0 && float64(k) > p.MaxBadFraction*float64(n) {
		return fmt.Errorf("%w: %d in epoch %d exceed the budget (max %d, fraction %g of %d); last: %s: offset %d: %s",
			ErrTooManyBad, k, e, p.MaxBad, p.MaxBadFraction, n, b.Path, b.Offset, b.Reason)
	}
	return nil
}

// Bad returns the samples quarantined so far, in the order they were met.
func (l *Loader) Bad() []BadSample {
	l.q.mu.Lock()
	defer l.q.mu.Unlock()
	return append([]BadSample(nil), l.q.list...)
}
