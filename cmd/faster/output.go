package main

import (
	"encoding/json"
	"io"
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
