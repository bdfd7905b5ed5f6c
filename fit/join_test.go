package fit

import (
	"runtime"
	"testing"

	"github.com/faster-training/faster/collective"
)

// A rank's threads default to the machine's CPUs over the ranks on it
// (moved here from cmd/faster with rankThreads).
func TestRankThreads(t *testing.T) {
	n := runtime.NumCPU()
	for _, c := range []struct {
		threads, local, want int
	}{
		{0, 0, 0}, // no launcher: the backend's default (all CPUs)
		{0, 1, n},
		{0, 2, max(1, n/2)},
		{0, 4 * n, 1},
		{3, 2, 3}, // --threads wins
	} {
		if got := rankThreads(c.threads, collective.Config{LocalSize: c.local}); got != c.want {
			t.Errorf("--threads %d, LOCAL_WORLD_SIZE %d: %d threads, want %d", c.threads, c.local, got, c.want)
		}
	}
	cfg := DefaultConfig()
	cfg.Join(collective.Config{LocalSize: 4 * n, Size: 1}) //nolint:errcheck // gloo is not registered here: only the settings are checked
	if cfg.Model.Threads != 1 || cfg.Parallel.LocalRanks != 4*n {
		t.Errorf("Join: %d threads, %d local ranks; want 1, %d", cfg.Model.Threads, cfg.Parallel.LocalRanks, 4*n)
	}
}
