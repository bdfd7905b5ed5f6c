package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// faster train takes the same damaged-sample policy as bench load and
// serve: it stops naming the file, or skips, counts and quarantines; a
// quarantine list that cannot be written fails the run.
func TestTrainBadDataPolicy(t *testing.T) {
	tree, test := writeFolder(t, 2, 6), writeFolder(t, 2, 2)
	bad := filepath.Join(tree, "c0", "zz_corrupt.png")
	if err := os.WriteFile(bad, []byte("\x89PNG\r\n\x1a\n not a PNG"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"train", "--data", tree, "--test-data", test, "--model", "thinnet", "--filters", "4,8",
		"--resolution", "16", "--batch", "4", "--epochs", "1", "--threads", "1"}
	code, _, errs := runCLI(t, args...)
	if code != 1 || !strings.Contains(errs, "zz_corrupt.png") {
		t.Fatalf("stop policy: exit %d, want 1 naming the file: %s", code, errs)
	}
	q := filepath.Join(t.TempDir(), "bad.jsonl")
	code, _, errs = runCLI(t, append(args, "--on-error", "skip", "--quarantine", q)...)
	if code != 0 {
		t.Fatalf("skip policy: exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(q)
	if err != nil || strings.Count(string(b), "\n") != 1 || !strings.Contains(string(b), "zz_corrupt.png") {
		t.Fatalf("quarantine %q (%v): want one line naming zz_corrupt.png", b, err)
	}
	if !strings.Contains(errs, "skipped 1 bad samples") {
		t.Errorf("the run does not say it skipped: %s", errs)
	}
	// A quarantine path that cannot be written is refused before the run.
	code, _, errs = runCLI(t, append(args, "--on-error", "skip", "--quarantine", t.TempDir())...)
	if code == 0 {
		t.Errorf("--quarantine on a directory: exit 0 (%s)", errs)
	}
	if code, _, _ := runCLI(t, append(args, "--quarantine", q)...); code != 2 {
		t.Errorf("--quarantine without --on-error skip: exit %d, want 2", code)
	}
}
