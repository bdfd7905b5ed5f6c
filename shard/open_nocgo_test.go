//go:build !cgo

package shard

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/faster-training/faster/source"
)

// TestOpenLMDBNoCgo: without cgo an LMDB is still recognised, and refused
// with ErrNoCgo.
func TestOpenLMDBNoCgo(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "data.mdb"), []byte("x"), 0o644)
	if _, err := Open(context.Background(), dir, OpenOptions{}); !errors.Is(err, source.ErrNoCgo) {
		t.Fatalf("LMDB without cgo: %v", err)
	}
}
