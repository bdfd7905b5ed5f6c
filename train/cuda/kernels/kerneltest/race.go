//go:build race

package kerneltest

// raceEnabled: under the race detector the reruns take several times as
// long (the tests' Go references are instrumented, the kernels are not), so
// Rerun leaves them to make test's schedules step, a build without it.
const raceEnabled = true
