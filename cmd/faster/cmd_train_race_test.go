//go:build race

package main

// raceEnabled skips the longest training tests under -race: the arithmetic
// runs in oneDNN (C, not instrumented) and the Go paths it would cover are
// already covered by the shorter tests.
const raceEnabled = true
