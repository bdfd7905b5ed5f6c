package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
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

// checkOutputDir reports why a file cannot be written at path: its folder
// is missing, is not a folder, or refuses a new file (a temporary one is
// created and removed, which also catches a read-only mount). Checked
// before a run, so that the run does not fail at its first save.
func checkOutputDir(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("folder %s does not exist", dir)
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s is not a folder", dir)
	}
	f, err := os.CreateTemp(dir, ".faster-write-check-*")
	if err != nil {
		return fmt.Errorf("folder %s is not writable: %w", dir, errors.Unwrap(err))
	}
	f.Close()
	return os.Remove(f.Name())
}
