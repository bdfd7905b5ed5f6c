package fit

import (
	"runtime"

	"github.com/faster-training/faster/collective"
)

// Join joins the group of ranks cc describes for cfg's ddp run, through
// Gloo (registered by the importer of collective/gloo). The rank's threads
// become, unless given, this machine's CPUs divided among the ranks on it
// (cc.LocalSize: LOCAL_WORLD_SIZE, which torchrun and faster's launcher
// set), and cfg's LocalRanks those ranks, which share its memory budget.
func (cfg *Config) Join(cc collective.Config) (collective.Comm, error) {
	cfg.Model.Threads = rankThreads(cfg.Model.Threads, cc)
	cfg.Parallel.LocalRanks = max(cc.LocalSize, 1)
	return collective.Open("gloo", cc)
}

// rankThreads is a rank's threads: as given, or this machine's CPUs
// divided among the ranks on it (LOCAL_WORLD_SIZE, which torchrun and our
// launcher set).
func rankThreads(threads int, cfg collective.Config) int {
	if threads > 0 || cfg.LocalSize < 1 {
		return threads
	}
	return max(1, runtime.NumCPU()/cfg.LocalSize)
}
