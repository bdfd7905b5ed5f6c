package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCommitAndAbort(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.bin")
	f, err := Create(p, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("partial"))
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatal("final name exists before Commit")
	}
	if !IsTemp(filepath.Base(f.Name())) {
		t.Fatalf("temp name %q not recognised", f.Name())
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	f.Abort() // no-op
	if b, _ := os.ReadFile(p); string(b) != "partial" {
		t.Fatalf("content %q", b)
	}
	if err := f.Commit(); err == nil {
		t.Fatal("second Commit succeeded")
	}

	g, _ := Create(filepath.Join(dir, "gone.bin"), 0o644)
	g.Write([]byte("x"))
	g.Abort()
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("after Abort the directory holds %d entries, want 1", len(ents))
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", st.Mode())
	}
	if err := WriteFile(p, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Fatalf("WriteFile content %q", b)
	}
}
