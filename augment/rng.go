package augment

import "math/rand/v2"

// SampleSeed derives the two PCG seed words of sample index under a run's
// seed. Neighbouring indices give unrelated streams (both words go through
// the SplitMix64 finaliser), so the random choices of a sample depend only
// on (seed, index): not on worker count, order or timing.
func SampleSeed(seed, index uint64) (uint64, uint64) {
	a := mix64(seed ^ 0x9e3779b97f4a7c15)
	b := mix64(index + a)
	return mix64(a ^ b), b
}

// NewRNG returns the random source of sample index under seed. To avoid
// its two small allocations per sample, keep a rand.PCG and reseed it with
// pcg.Seed(SampleSeed(seed, index)), as Augmenter.RNG does.
func NewRNG(seed, index uint64) *rand.Rand {
	return rand.New(rand.NewPCG(SampleSeed(seed, index)))
}

func mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
