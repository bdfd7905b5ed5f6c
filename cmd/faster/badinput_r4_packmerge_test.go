//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/faster-training/faster/shard"
)

// packTaskParts packs a small folder into a new destination as count
// tasks of shards shards (split "train"), and returns the destination.
func packTaskParts(t *testing.T, shards, count int) string {
	t.Helper()
	setTaskEnv(t)
	src, dst := writeFolder(t, 2, 4), filepath.Join(t.TempDir(), "dst")
	for i := range count {
		if code, _, errs := runCLI(t, "pack", src, dst, "--shards", strconv.Itoa(shards), "--task", strconv.Itoa(i)+"/"+strconv.Itoa(count)); code != 0 {
			t.Fatalf("task %d: %s", i, errs)
		}
	}
	return dst
}

func init() {
	// pack and pack --merge with --split "..": refused before anything is
	// written or removed (before: the merge removed all of DST).
	otherFixtures["split-not-plain"] = func(t *testing.T) ([]string, string) {
		setTaskEnv(t)
		src, dst := writeFolder(t, 2, 2), filepath.Join(t.TempDir(), "dst")
		if code, _, errs := runCLI(t, "pack", src, dst, "--split", "..", "--task", "0/1"); code != 2 || !strings.Contains(errs, "--split") {
			t.Fatalf("pack --split ..: exit %d: %s", code, errs)
		}
		return []string{"pack", "--merge", dst, "--split", ".."}, "--split"
	}
	// A stray part name saying task 0 of 2^40 (before: out of memory).
	otherFixtures["merge-task-count-huge"] = func(t *testing.T) ([]string, string) {
		dst := t.TempDir()
		dir := filepath.Join(dst, shard.PartsDir, "train")
		os.MkdirAll(dir, 0o755)
		p := filepath.Join(dir, "task-00000-of-1099511627776.json")
		os.WriteFile(p, []byte("{}"), 0o644)
		return []string{"pack", "--merge", dst}, p
	}
	// A part manifest that is a FIFO (or a link to /dev/zero): damage
	// named by its file (before: the merge hung, or ran out of memory).
	otherFixtures["part-manifest-fifo"] = func(t *testing.T) ([]string, string) {
		dst := packTaskParts(t, 2, 2)
		p := filepath.Join(dst, shard.PartsDir, "train", "task-00001-of-00002.json")
		os.Remove(p)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
		return []string{"pack", "--merge", dst}, p + ": not a regular file (named pipe)"
	}
	// A progress manifest that is a link to /dev/zero (or a FIFO), at a
	// task's resume (before: read until out of memory, or hung).
	otherFixtures["progress-manifest-dev-zero"] = func(t *testing.T) ([]string, string) {
		setTaskEnv(t)
		src, dst := writeFolder(t, 2, 2), filepath.Join(t.TempDir(), "dst")
		args := []string{"pack", src, dst, "--shards", "2", "--task", "0/1"}
		if code, _, errs := runCLI(t, args...); code != 0 {
			t.Fatal(errs)
		}
		dir := filepath.Join(dst, shard.PartsDir, "train")
		os.Remove(filepath.Join(dir, "task-00000-of-00001.json"))
		p := filepath.Join(dir, "task-00000-of-00001.progress.json")
		os.Remove(p)
		if err := os.Symlink("/dev/zero", p); err != nil {
			t.Fatal(err)
		}
		return args, p + ": not a regular file (character device)"
	}
	// A part listing another task's shards (or its own reordered): damage
	// named by the part file (before: merged).
	otherFixtures["part-foreign-shards"] = func(t *testing.T) ([]string, string) {
		dst := packTaskParts(t, 4, 2)
		dir := filepath.Join(dst, shard.PartsDir, "train")
		read := func(i int) (string, map[string]any) {
			p := filepath.Join(dir, "task-0000"+strconv.Itoa(i)+"-of-00002.json")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			json.Unmarshal(b, &m)
			return p, m
		}
		_, zero := read(0)
		p, one := read(1)
		one["layout"].(map[string]any)["shards"] = zero["layout"].(map[string]any)["shards"]
		b, _ := json.Marshal(one)
		os.Remove(p)
		os.WriteFile(p, b, 0o644)
		return []string{"pack", "--merge", dst}, p + ": lists \"train-00000-of-00004.tfrecord\""
	}
	// A stray resize part name saying task 0 of 2^40 (before: out of
	// memory; "-of-00000": a merge of nothing reported done).
	otherFixtures["resize-merge-task-count-huge"] = func(t *testing.T) ([]string, string) {
		dst := t.TempDir()
		dir := filepath.Join(dst, shard.PartsDir, "resize")
		os.MkdirAll(dir, 0o755)
		p := filepath.Join(dir, "task-00000-of-1099511627776.started")
		os.WriteFile(p, nil, 0o644)
		return []string{"resize", "--merge", "--dst", dst}, p
	}
	// A resize part manifest that is a FIFO (before: the merge hung).
	otherFixtures["resize-part-fifo"] = func(t *testing.T) ([]string, string) {
		setTaskEnv(t)
		src, dst := writeFolder(t, 2, 2), filepath.Join(t.TempDir(), "dst")
		if code, _, errs := runCLI(t, "resize", "--src", src, "--dst", dst, "--max-size", "16", "--task", "0/1"); code != 0 {
			t.Fatal(errs)
		}
		p := filepath.Join(dst, shard.PartsDir, "resize", "task-00000-of-00001.json")
		os.Remove(p)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
		return []string{"resize", "--merge", "--dst", dst}, p + ": not a regular file (named pipe)"
	}
	// A task rerun after its split is merged: nothing written, said so
	// (before: its shards packed again, and the merge then said "missing
	// (never started): 0").
	otherFixtures["task-rerun-merged"] = func(t *testing.T) ([]string, string) {
		setTaskEnv(t)
		src, dst := writeFolder(t, 2, 4), filepath.Join(t.TempDir(), "dst")
		for _, task := range []string{"0/2", "1/2"} {
			if code, _, errs := runCLI(t, "pack", src, dst, "--shards", "4", "--task", task); code != 0 {
				t.Fatal(errs)
			}
		}
		if code, _, errs := runCLI(t, "pack", "--merge", dst); code != 0 {
			t.Fatal(errs)
		}
		return []string{"pack", src, dst, "--shards", "4", "--task", "1/2"}, ""
	}
}

// The task commands say what they did: a task with no shards (more tasks
// than shards) says so and how many the split has; a rerun of a merged
// split's task says it is merged; --split is checked in pack and
// --merge alike, naming the flag.
func TestPackTaskMessages(t *testing.T) {
	setTaskEnv(t)
	src, dst := writeFolder(t, 2, 4), filepath.Join(t.TempDir(), "dst")
	code, out, errs := runCLI(t, "pack", src, dst, "--shards", "2", "--task", "0/5")
	if code != 0 || !strings.Contains(out, "no shards of its own: the split has 2 shards, fewer than the 5 tasks") {
		t.Errorf("task 0/5 over 2 shards: exit %d: %s%s", code, out, errs)
	}
	for i := 1; i < 5; i++ {
		if code, _, errs := runCLI(t, "pack", src, dst, "--shards", "2", "--task", strconv.Itoa(i)+"/5"); code != 0 {
			t.Fatal(errs)
		}
	}
	code, out, errs = runCLI(t, "pack", "--merge", dst)
	if code != 0 || !strings.Contains(out, "8 records in 2 shards") {
		t.Fatalf("merge of 5 tasks over 2 shards: exit %d: %s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, "pack", src, dst, "--shards", "2", "--task", "4/5")
	if code != 0 || !strings.Contains(out, `split "train" is merged already`) || strings.Contains(out, "part committed") {
		t.Errorf("rerun of a merged task: exit %d: %s%s", code, out, errs)
	}
	code, _, errs = runCLI(t, "pack", "--merge", dst)
	if code != 1 || strings.Contains(errs, "never started") || !strings.Contains(errs, "merged before?") {
		t.Errorf("merge after the rerun: exit %d: %s", code, errs)
	}
	// A task file left by an older build's rerun: --json says the split
	// was merged before.
	os.MkdirAll(filepath.Join(dst, shard.PartsDir, "train"), 0o755)
	os.WriteFile(filepath.Join(dst, shard.PartsDir, "train", "task-00004-of-00005.lock"), nil, 0o644)
	code, out, errs = runCLI(t, "pack", "--merge", dst, "--json")
	if code != 1 || !strings.Contains(out, `"merged_before": true`) || !strings.Contains(errs, "merged before?") {
		t.Errorf("merge of a leftover task file: exit %d: %s%s", code, out, errs)
	}
	for _, split := range []string{"", ".", "..", "a/b", "a\nb"} {
		for _, args := range [][]string{{"pack", src, filepath.Join(t.TempDir(), "d"), "--split", split}, {"pack", "--merge", dst, "--split", split}} {
			if code, _, errs := runCLI(t, args...); code != 2 || !strings.Contains(errs, "--split") {
				t.Errorf("%q: exit %d: %s", args, code, errs)
			}
		}
	}
}
