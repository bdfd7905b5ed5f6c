//go:build linux && !cgo

package serve

import "testing"

// lmdbOf needs the LMDB writer, which needs cgo: no LMDB case without it.
func lmdbOf(*testing.T, string) string { return "" }
