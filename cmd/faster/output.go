package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/faster-training/faster/internal/atomicfile"
)

// writeJSON prints v as indented JSON: the machine-readable summary of
// every command's --json mode.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func mbPerSec(bytes int64, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return float64(bytes) / seconds / 1e6
}

// workersPerCPU is the most workers per CPU a command starts: beyond it
// they only add memory and contention.
const workersPerCPU = 4

// capWorkers caps a --workers (or --threads) value n at workersPerCPU per
// CPU of cpus, warning on stderr when it does; 0 (auto) and values within
// the cap pass unchanged.
func capWorkers(stderr io.Writer, flag string, n, cpus int) int {
	limit := workersPerCPU * max(cpus, 1)
	if n <= limit {
		return n
	}
	fmt.Fprintf(stderr, "faster: %s %d on %d CPUs: using %d (more than %d per CPU only add memory and contention)\n", flag, n, cpus, limit, workersPerCPU)
	return limit
}

// checkOutputDir reports why a file cannot be written at path
// (atomicfile.CheckDir).
func checkOutputDir(path string) error { return atomicfile.CheckDir(path) }
