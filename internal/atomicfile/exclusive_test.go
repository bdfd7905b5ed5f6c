package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// WriteNew creates once and never replaces; no temporary file is left.
func TestWriteNewNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "part.json")
	if err := WriteNew(p, []byte("first"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteNew(p, []byte("second"), 0o644)
	if !errors.Is(err, ErrExists) || !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second WriteNew: %v, want ErrExists", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "first" {
		t.Fatalf("file holds %q", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("%d entries left, want the file alone", len(ents))
	}
}
