package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
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

// TestLongNames: a final name of up to NAME_MAX (255 bytes), ASCII or
// multi-byte, is written atomically, its temporary name recognised by
// IsTemp and valid UTF-8 (before: ".NAME.tmp-N" passed 255 bytes, and
// every rerun failed at the same file with "file name too long").
func TestLongNames(t *testing.T) {
	dir := t.TempDir()
	for _, base := range []string{
		strings.Repeat("a", 255),
		"x" + strings.Repeat("é", 127), // 255 bytes, byte 64 inside a rune
		strings.Repeat("b", 250) + ".jpg",
	} {
		if len(base) > 255 {
			base = base[:255]
		}
		p := filepath.Join(dir, base)
		f, err := Create(p, 0o644)
		if err != nil {
			t.Fatalf("Create(%d-byte name): %v", len(base), err)
		}
		tmp := filepath.Base(f.Name())
		if !IsTemp(tmp) || len(tmp) > 100 || !utf8.ValidString(tmp) {
			t.Errorf("temp name %q (%d bytes)", tmp, len(tmp))
		}
		f.Write([]byte("x"))
		if err := f.Commit(); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != "x" {
			t.Fatalf("%d-byte name: %q %v", len(base), b, err)
		}
	}
	if s := TempStem("short.bin"); s != ".short.bin.tmp-" {
		t.Errorf("TempStem(short) = %q", s)
	}
}
