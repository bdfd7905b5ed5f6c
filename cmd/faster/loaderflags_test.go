package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Shuffling is its own choice, not the transform's: `bench load
// --transform none` reads in the random order a trainer would (by --seed),
// --no-shuffle in the source order; eval keeps the order unless --shuffle.
func TestShuffleFlags(t *testing.T) {
	folder := writeFolder(t, 3, 6)
	keys := func(args ...string) []string {
		t.Helper()
		p := filepath.Join(t.TempDir(), "keys.txt")
		args = append([]string{"bench", "load", folder, "--batch", "4", "--resolution", "16", "--dump-keys", p, "--json"}, args...)
		if code, _, errs := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		b, _ := os.ReadFile(p)
		return strings.Fields(string(b))
	}
	source := keys("--transform", "none", "--no-shuffle")
	if len(source) != 18 || !slices.IsSorted(source) {
		t.Fatalf("--no-shuffle: %v, want the 18 keys in source order", source)
	}
	a, b := keys("--transform", "none", "--seed", "1"), keys("--transform", "none", "--seed", "2")
	if slices.Equal(a, source) || slices.Equal(a, b) || !slices.Equal(slices.Sorted(slices.Values(a)), source) {
		t.Fatalf("--transform none does not read in a random order by seed:\n%v\n%v", a, b)
	}
	if got := keys("--transform", "none", "--seed", "1", "--shuffle"); !slices.Equal(got, a) {
		t.Fatal("--shuffle is not the default for --transform none")
	}
	if got := keys("--transform", "eval"); !slices.Equal(got, source) {
		t.Fatalf("--transform eval shuffles by default: %v", got)
	}
	if got := keys("--transform", "eval", "--shuffle", "--seed", "1"); slices.Equal(got, source) {
		t.Fatal("--transform eval --shuffle keeps the source order")
	}
	if got := keys("--transform", "train", "--no-shuffle"); !slices.Equal(got, source) {
		t.Fatal("--transform train --no-shuffle shuffles")
	}
}
