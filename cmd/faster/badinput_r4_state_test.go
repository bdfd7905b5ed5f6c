//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// saveState runs `bench load DATA --steps 1 --save-state` (with args) and
// returns the state file and its decoded JSON.
func saveState(t *testing.T, data string, args ...string) (string, map[string]any) {
	t.Helper()
	st := filepath.Join(t.TempDir(), "state.json")
	cmd := append([]string{"bench", "load", data, "--transform", "none", "--batch", "2", "--steps", "1", "--save-state", st}, args...)
	if code, _, errs := runCLI(t, cmd...); code != 0 {
		t.Fatalf("saving the state: %s", errs)
	}
	var m map[string]any
	if err := json.Unmarshal(mustRead(t, st), &m); err != nil {
		t.Fatal(err)
	}
	return st, m
}

// writeStateJSON writes v as JSON to path.
func writeStateJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func init() {
	// A saved position naming epoch 2^62 (or -1): refused when it is
	// read, naming the file and the field (before: exit 0, the state
	// ignored — no epoch of the run was 2^62 — and the epoch served whole).
	otherFixtures["state-epoch-huge"] = func(t *testing.T) ([]string, string) {
		data := writeFolder(t, 2, 2)
		st, m := saveState(t, data)
		m["epoch"] = 1 << 62
		writeStateJSON(t, st, m)
		return []string{"bench", "load", data, "--transform", "none", "--batch", "2", "--resume-from", st},
			st + ": loader: cannot resume from this state: epoch 4611686018427387904"
	}
	// A streamed dataset's state whose steps are negative (before: exit 0,
	// the resumed epoch served 10 rows more than was left).
	otherFixtures["state-stream-steps"] = func(t *testing.T) ([]string, string) {
		shards := filepath.Join(t.TempDir(), "packed")
		if code, _, errs := runCLI(t, "pack", writeFolder(t, 2, 3), shards); code != 0 {
			t.Fatalf("pack: %s", errs)
		}
		st, m := saveState(t, shards)
		if m["stream"] != true {
			t.Fatalf("the packed shards' state is not a stream's: %v", m)
		}
		seg := m["segments"].([]any)[0].(map[string]any)
		seg["steps"], seg["batch"] = -5, 2
		writeStateJSON(t, st, m)
		return []string{"bench", "load", shards, "--transform", "none", "--batch", "2", "--resume-from", st}, st + ": loader: cannot resume from this state: segments[0].steps -5"
	}
	// A state saved on another dataset of the same size, seed and classes
	// (one file named otherwise): refused naming both fingerprints and the
	// state's file (before: exit 0, "the rest" of the other data's order).
	otherFixtures["state-other-data"] = func(t *testing.T) ([]string, string) {
		data, other := writeFolder(t, 2, 2), writeFolder(t, 2, 2)
		ents, err := os.ReadDir(filepath.Join(other, "c0"))
		if err != nil || len(ents) == 0 {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(other, "c0", ents[0].Name()), filepath.Join(other, "c0", "z"+ents[0].Name())); err != nil {
			t.Fatal(err)
		}
		st, m := saveState(t, data)
		return []string{"bench", "load", other, "--transform", "none", "--batch", "2", "--resume-from", st},
			"--resume-from " + st + ": loader: cannot resume from this state: the state was saved on other data (fingerprint " + m["fingerprint"].(string) + ")"
	}
}
