//go:build !race

package augment

// raceOn: the race detector is on (tests that walk large spaces sample them).
const raceOn = false
