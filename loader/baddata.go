package loader

import (
	"errors"
	"fmt"
	"sync"

	"github.com/faster-training/faster/source"
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

// BadSample is one quarantined sample: where it is and why it is bad
// (source.Damage, the one record of damage: the quarantine file's and
// --json's lines). Offset is the byte offset of the damaged record (-1 when
// the format names records by key, as LMDB does).
type BadSample = source.Damage

// ErrTooManyBad marks an epoch stopped because bad samples exceeded the
// budget.
var ErrTooManyBad = errors.New("loader: too many bad samples")

// isBadData reports whether err is damage in the data rather than a
// failure to read it: source.IsDamage, the one definition of a bad sample
// (see docs/badinput.md).
func isBadData(err error) bool { return source.IsDamage(err) }

// badOf describes err as a quarantine entry (source.DamageOf: the file and
// offset its corruption error carries, else path, off and key).
func badOf(err error, path string, off int64, key string) *BadSample {
	d := source.DamageOf(err, path, off, key)
	return &d
}

// quarantine is a loader's list of bad samples and its budget check.
type quarantine struct {
	mu     sync.Mutex
	list   []BadSample
	epoch  map[int]int // bad samples per epoch
	first  map[int]BadSample
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
	if k == 1 {
		if q.first == nil {
			q.first = map[int]BadSample{}
		}
		q.first[e] = b
	}
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

// inEpoch returns how many bad samples epoch e met.
func (q *quarantine) inEpoch(e int) int {
	_, n := q.firstIn(e)
	return n
}

// firstIn returns the first bad sample epoch e met and how many it met.
func (q *quarantine) firstIn(e int) (BadSample, int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.first[e], q.epoch[e]
}

// Bad returns the samples quarantined so far, in the order they were met.
func (l *Loader) Bad() []BadSample {
	l.q.mu.Lock()
	defer l.q.mu.Unlock()
	return append([]BadSample(nil), l.q.list...)
}
