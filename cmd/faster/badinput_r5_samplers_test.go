package main

import (
	"path/filepath"
	"testing"
)

// The sampler rows of docs/badinput.md (issue 39 items 4 and 5): repeated
// augmentation (RASampler) and a client's order of positions are refused
// where they cannot be honoured, naming the flag or why, never dropped.
func init() {
	usageRow := func(needle string, args ...string) func(t *testing.T) badFixture {
		return func(t *testing.T) badFixture {
			return badFixture{data: writeFolder(t, 2, 2), needle: needle, loadArgs: args}
		}
	}
	badFixtures["repeated-augmentation-negative"] = usageRow("--repeated-augmentation -1", "--repeated-augmentation", "-1")
	badFixtures["sampler-unknown"] = usageRow(`--sampler "random"`, "--sampler", "random")
	badFixtures["ra-small"] = func(t *testing.T) badFixture {
		return badFixture{data: writeFolder(t, 2, 3), needle: "RASampler serves", loadArgs: []string{"--repeated-augmentation", "3"}}
	}
	badFixtures["ra-streamed"] = func(t *testing.T) badFixture {
		root := writeFolder(t, 2, 3)
		dir := filepath.Join(t.TempDir(), "shards")
		if code, _, errs := runCLI(t, "pack", root, dir, "--shards", "2"); code != 0 {
			t.Fatalf("pack: %s", errs)
		}
		return badFixture{data: dir, needle: "streamed in file order", loadArgs: []string{"--repeated-augmentation", "3"}}
	}
}
