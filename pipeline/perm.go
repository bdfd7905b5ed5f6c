package pipeline

// Permutation is a pseudo-random permutation of 0 … n-1 that takes no
// memory per element: At(i) computes the i-th element of the shuffled
// order on demand, so an epoch order over 100 million records costs a few
// words, not 800 MB, and a rank can start anywhere in it. It is a
// balanced Feistel network (six rounds, SplitMix64 round function keyed by
// the seed and the epoch) over the smallest even power of two at least n,
// with cycle walking to stay inside [0, n): each At takes at most a few
// Feistel evaluations on average (the domain is under 4n).
//
// The same (seed, epoch, salt, n) give the same permutation on every
// machine. It is safe for concurrent use.
type Permutation struct {
	n    uint64
	half uint      // bits of each Feistel half
	mask uint64    // (1 << half) - 1
	keys [6]uint64 // round keys
}

// permRounds is the number of Feistel rounds: Luby and Rackoff's bound for
// a strong pseudo-random permutation is four; six keeps the low bits of
// consecutive indices from correlating even for tiny domains.
const permRounds = 6

// NewPermutation returns the permutation of 0 … n-1 drawn from seed and
// epoch (salt separates the streams of different users).
func NewPermutation(n int, seed uint64, epoch int64, salt uint64) *Permutation {
	p := &Permutation{n: uint64(max(n, 0))}
	bits := uint(1)
	for uint64(1)<<(2*bits) < p.n {
		bits++
	}
	p.half, p.mask = bits, uint64(1)<<bits-1
	k := mix64(seed ^ mix64(uint64(epoch)^salt))
	for r := range p.keys {
		k = mix64(k + uint64(r)*0x9e3779b97f4a7c15)
		p.keys[r] = k
	}
	return p
}

// Len returns n.
func (p *Permutation) Len() int { return int(p.n) }

// At returns element i of the permutation, 0 <= i < n.
func (p *Permutation) At(i int) int {
	x := uint64(i)
	for {
		x = p.feistel(x)
		if x < p.n {
			return int(x)
		}
	}
}

func (p *Permutation) feistel(x uint64) uint64 {
	l, r := x>>p.half, x&p.mask
	for _, k := range p.keys {
		l, r = r, l^(mix64(r^k)&p.mask)
	}
	return l<<p.half | r
}
