package main

import (
	"encoding/json"
	"fmt"
	"io"
)

// writeJSON prints v as indented JSON: the machine-readable summary of
// every command's --json mode.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
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
