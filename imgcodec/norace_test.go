//go:build !race

package imgcodec_test

const raceEnabled = false
