package pipeline

import "math/rand/v2"

// epochRand returns the generator of one epoch of a seeded stage: the seed
// and the epoch number both select the stream, so every epoch is shuffled
// differently and the same (seed, epoch) always gives the same order, on
// every machine. salt separates the streams of different kinds of stage.
func epochRand(seed uint64, epoch int64, salt uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, mix64(uint64(epoch)^salt)))
}

// mix64 is SplitMix64's finaliser.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

const (
	saltFiles   = 0x66696c6573 // "files"
	saltBuffer  = 0x627566666572
	saltIndexed = 0x696e646578
)
