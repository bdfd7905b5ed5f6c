//go:build unix

package shard

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/faster-training/faster/internal/task"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/faster-training/faster/source"
)

// packTasks packs the split "train" of root into dst as count tasks of
// shards shards, each task in turn.
func packTasks(t *testing.T, src source.Source, root, dst string, shards, count int) {
	t.Helper()
	for i := range count {
		if _, err := Pack(context.Background(), src, root, dst, PackOptions{Shards: shards, Workers: 1, TaskIndex: i, TaskCount: count}); err != nil {
			t.Fatalf("task %d of %d: %v", i, count, err)
		}
	}
}

func partPath(dst, split string, i, n int) string {
	return filepath.Join(dst, PartsDir, split, task.FileStem(i, n)+".json")
}

// A split name is a plain name, in Pack and in MergeParts: ".." and "."
// name folders (a merge of split ".." removed all of DST, of "." the
// other splits' parts), and separators, control characters, bytes that
// are not UTF-8 (manifest.json cannot record them) and overlong names
// are refused before anything is written or removed.
func TestSplitNameMustBePlain(t *testing.T) {
	root := makeFolder(t, []string{"a", "b"}, 3)
	src, err := source.OpenImageFolder(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"..", ".", "a/b", `a\b`, "a\x00b", "a\nb", "\xff\xfe", strings.Repeat("s", MaxSplitName+1)} {
		dst := filepath.Join(t.TempDir(), "dst")
		os.MkdirAll(filepath.Join(dst, PartsDir, "val"), 0o755)
		keep := []string{filepath.Join(dst, "keep.txt"), filepath.Join(dst, PartsDir, "val", "task-00000-of-00001.json")}
		for _, k := range keep {
			os.WriteFile(k, []byte("keep"), 0o644)
		}
		if _, err := Pack(context.Background(), src, root, dst, PackOptions{Split: name, Shards: 2, Workers: 1, TaskCount: 1}); err == nil || !strings.Contains(err.Error(), "plain name") {
			t.Errorf("task pack of split %q: %v", name, err)
		}
		if _, err := Pack(context.Background(), src, root, dst, PackOptions{Split: name, Shards: 2, Workers: 1}); err == nil || !strings.Contains(err.Error(), "plain name") {
			t.Errorf("pack of split %q: %v", name, err)
		}
		if _, err := MergeParts(context.Background(), dst, name, 1); err == nil || !strings.Contains(err.Error(), "plain name") {
			t.Errorf("merge of split %q: %v", name, err)
		}
		for _, k := range keep {
			if b, err := os.ReadFile(k); err != nil || string(b) != "keep" {
				t.Errorf("split %q: %s: %q %v", name, k, b, err)
			}
		}
	}
	for _, name := range []string{"train", "val", "test-2024", "café", strings.Repeat("s", MaxSplitName)} {
		if err := CheckSplitName(name); err != nil {
			t.Errorf("split %q: %v", name, err)
		}
	}
}

// The merge removes the part files it matched and the folders it made
// when they are left empty, never a file of someone else's beside them.
func TestMergeRemovesOnlyItsFiles(t *testing.T) {
	root := makeFolder(t, []string{"a", "b"}, 3)
	src, _ := source.OpenImageFolder(root)
	dst := t.TempDir()
	packTasks(t, src, root, dst, 3, 2)
	dir := filepath.Join(dst, PartsDir, "train")
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("mine"), 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	if _, err := MergeParts(context.Background(), dst, "train", 1); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(notes); err != nil || string(b) != "mine" {
		t.Fatalf("merge removed a file it did not make: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "sub")); err != nil {
		t.Fatalf("merge removed a folder it did not make: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "task-") {
			t.Errorf("merge left %s", e.Name())
		}
	}
	// With nothing else there, the folders go.
	dst2 := t.TempDir()
	packTasks(t, src, root, dst2, 3, 2)
	if _, err := MergeParts(context.Background(), dst2, "train", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dst2, PartsDir)); err == nil {
		t.Error("merge left the empty parts folder")
	}
}

// A task count is bounded before anything is allocated by it: a stray
// part name saying task 0 of 2^40 (or of 0, or of a number past int)
// is refused naming the file; Pack refuses such a count.
func TestMergeBoundsTaskCount(t *testing.T) {
	for _, name := range []string{"task-00000-of-1099511627776.json", "task-00000-of-00000.json",
		"task-00000-of-99999999999999999999999.lock", "task-00003-of-00002.progress.json"} {
		dst := t.TempDir()
		dir := filepath.Join(dst, PartsDir, "train")
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, name), []byte("{}"), 0o644)
		_, err := MergeParts(context.Background(), dst, "train", 1)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, name)) {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s removed: %v", name, err)
		}
	}
	root := makeFolder(t, []string{"a"}, 2)
	src, _ := source.OpenImageFolder(root)
	for _, n := range []int{MaxTasks + 1, 1 << 40} {
		dst := filepath.Join(t.TempDir(), "dst")
		if _, err := Pack(context.Background(), src, root, dst, PackOptions{Shards: 2, TaskCount: n}); err == nil || !strings.Contains(err.Error(), "at most") {
			t.Errorf("task 0 of %d: %v", n, err)
		}
		if _, err := os.Stat(dst); err == nil {
			t.Errorf("task 0 of %d created its destination", n)
		}
	}
}

// Part and progress manifests are read by the data-file rules: a FIFO
// in their place is refused at once (before: a task pack or a merge hung
// until a signal), /dev/zero too (before: read until out of memory), a
// listed shard that is a FIFO or /dev/zero is damage, never read.
func TestPartManifestsByDataFileRules(t *testing.T) {
	root := makeFolder(t, []string{"a", "b"}, 3)
	src, _ := source.OpenImageFolder(root)
	fifo := func(p string) {
		os.Remove(p)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	zero := func(p string) {
		os.Remove(p)
		if err := os.Symlink("/dev/zero", p); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []struct {
		name string
		mk   func(string)
	}{{"fifo", fifo}, {"zero", zero}} {
		// The progress manifest of a task being resumed.
		dst := t.TempDir()
		packTasks(t, src, root, dst, 2, 1)
		os.Remove(partPath(dst, "train", 0, 1))
		progress := filepath.Join(dst, PartsDir, "train", task.FileStem(0, 1)+".progress.json")
		bad.mk(progress)
		_, err := Pack(context.Background(), src, root, dst, PackOptions{Shards: 2, Workers: 1, TaskCount: 1})
		if err == nil || !strings.Contains(err.Error(), progress) {
			t.Errorf("%s progress manifest: %v", bad.name, err)
		}

		// A committed part, at a rerun of its task and at the merge.
		dst = t.TempDir()
		packTasks(t, src, root, dst, 2, 1)
		part := partPath(dst, "train", 0, 1)
		bad.mk(part)
		_, err = Pack(context.Background(), src, root, dst, PackOptions{Shards: 2, Workers: 1, TaskCount: 1})
		if err == nil || !strings.Contains(err.Error(), part) {
			t.Errorf("%s part at its task's rerun: %v", bad.name, err)
		}
		_, err = MergeParts(context.Background(), dst, "train", 1)
		var ie *IncompleteError
		if !errors.As(err, &ie) || ie.Damaged[0] == "" || !strings.Contains(err.Error(), part) {
			t.Errorf("%s part at the merge: %v", bad.name, err)
		}

		// A shard a part lists.
		dst = t.TempDir()
		packTasks(t, src, root, dst, 2, 1)
		shard := filepath.Join(dst, Name("train", 1, 2))
		bad.mk(shard)
		_, err = MergeParts(context.Background(), dst, "train", 1)
		if !errors.As(err, &ie) || !strings.Contains(ie.Damaged[0], Name("train", 1, 2)) {
			t.Errorf("%s shard at the merge: %v", bad.name, err)
		}
	}
}

// editPart rewrites a committed part manifest through fn.
func editPart(t *testing.T, path string, fn func(*Part)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pt Part
	if err := json.Unmarshal(b, &pt); err != nil {
		t.Fatal(err)
	}
	fn(&pt)
	b, _ = json.Marshal(&pt)
	os.Remove(path)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A part listing its shards out of order, or another task's shards, is
// damaged, named by its file (before: merged, a manifest listing shards
// twice or out of order).
func TestMergeRefusesForeignOrReorderedShards(t *testing.T) {
	root := makeFolder(t, []string{"a", "b"}, 4)
	src, _ := source.OpenImageFolder(root)
	for _, c := range []struct {
		what string
		task int
		edit func(pt *Part, other *Part)
	}{
		{"reordered", 0, func(pt, _ *Part) {
			pt.Layout.Shards[0], pt.Layout.Shards[1] = pt.Layout.Shards[1], pt.Layout.Shards[0]
		}},
		{"another task's", 1, func(pt, other *Part) { pt.Layout.Shards = other.Layout.Shards }},
		{"another task's, first shard too", 1, func(pt, other *Part) {
			pt.Layout.Shards, pt.FirstShard = other.Layout.Shards, other.FirstShard
		}},
	} {
		dst := t.TempDir()
		packTasks(t, src, root, dst, 4, 2)
		b, _ := os.ReadFile(partPath(dst, "train", 1-c.task, 2))
		var other Part
		json.Unmarshal(b, &other)
		p := partPath(dst, "train", c.task, 2)
		editPart(t, p, func(pt *Part) { c.edit(pt, &other) })
		_, err := MergeParts(context.Background(), dst, "train", 1)
		var ie *IncompleteError
		if !errors.As(err, &ie) || ie.Damaged[c.task] == "" || !strings.Contains(err.Error(), p) {
			t.Errorf("%s shards: %v", c.what, err)
		}
		if _, err := os.Stat(filepath.Join(dst, ManifestName)); err == nil {
			t.Errorf("%s shards: manifest written", c.what)
		}
	}
}

// A task rerun after its split is merged finds the split in manifest.json
// and writes nothing; a merge then says the split is merged (before: the
// task packed its shards again and the merge said "missing (never
// started): 0").
func TestTaskRerunAfterMerge(t *testing.T) {
	root := makeFolder(t, []string{"a", "b"}, 3)
	src, _ := source.OpenImageFolder(root)
	dst := t.TempDir()
	packTasks(t, src, root, dst, 4, 2)
	if _, err := MergeParts(context.Background(), dst, "train", 1); err != nil {
		t.Fatal(err)
	}
	st0, _ := os.Stat(filepath.Join(dst, Name("train", 3, 4)))
	res, err := Pack(context.Background(), src, root, dst, PackOptions{Shards: 4, Workers: 1, TaskIndex: 1, TaskCount: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Merged || res.KeptShards != 2 || res.Shards != 2 {
		t.Errorf("rerun of a merged task: %+v", res)
	}
	if st1, _ := os.Stat(filepath.Join(dst, Name("train", 3, 4))); !os.SameFile(st0, st1) || !st0.ModTime().Equal(st1.ModTime()) {
		t.Error("the rerun rewrote a merged shard")
	}
	if _, err := os.Lstat(filepath.Join(dst, PartsDir)); err == nil {
		t.Error("the rerun made a parts folder")
	}
	_, err = MergeParts(context.Background(), dst, "train", 1)
	if err == nil || strings.Contains(err.Error(), "never started") || !strings.Contains(err.Error(), "merged before?") {
		t.Errorf("merge after the rerun: %v", err)
	}
	// A part left by an older build's rerun: the merge names the split
	// merged, not task 0 as never started.
	os.MkdirAll(filepath.Join(dst, PartsDir, "train"), 0o755)
	os.WriteFile(filepath.Join(dst, PartsDir, "train", task.FileStem(1, 2)+".lock"), nil, 0o644)
	_, err = MergeParts(context.Background(), dst, "train", 1)
	if err == nil || !strings.Contains(err.Error(), "merged before?") {
		t.Errorf("merge of a leftover part: %v", err)
	}
}

// More tasks than shards: a task with none commits an empty part and
// says how many shards the split has; the merge equals a one-task pack.
func TestPackTaskWithNoShards(t *testing.T) {
	root := makeFolder(t, []string{"a", "b"}, 3)
	src, _ := source.OpenImageFolder(root)
	dst := t.TempDir()
	res, err := Pack(context.Background(), src, root, dst, PackOptions{Shards: 2, Workers: 1, TaskIndex: 0, TaskCount: 5})
	if err != nil {
		t.Fatal(err)
	}
	if res.Shards != 0 || res.SplitShards != 2 || res.Records != 0 {
		t.Errorf("task 0 of 5 over 2 shards: %+v", res)
	}
}

// A one-machine pack and a task pack into one destination exclude each
// other (the one-machine pack removes every temporary file it finds; a
// task pack, only its own): the second fails at once saying another pack
// is writing, and the first finishes (before: the second removed the
// first's temporary files, which then failed with a raw "rename … no such
// file").
func TestPackAndTaskPackExcludeEachOther(t *testing.T) {
	root := makeFolder(t, []string{"a", "b"}, 3)
	src, _ := source.OpenImageFolder(root)
	task := PackOptions{Shards: 2, Workers: 1, TaskIndex: 0, TaskCount: 2}
	whole := PackOptions{Shards: 2, Workers: 1}
	for _, c := range []struct {
		what          string
		first, second PackOptions
	}{{"task pack, then one-machine pack", task, whole}, {"one-machine pack, then task pack", whole, task}} {
		dst := t.TempDir()
		started, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		first := c.first
		first.Progress = func(int, int64) { once.Do(func() { close(started); <-release }) }
		done := make(chan error, 1)
		go func() {
			_, err := Pack(context.Background(), src, root, dst, first)
			done <- err
		}()
		<-started // the first is writing a shard: its temporary file is there
		_, err := Pack(context.Background(), src, root, dst, c.second)
		close(release)
		if err == nil || !strings.Contains(err.Error(), "another faster pack is writing") {
			t.Errorf("%s: the second: %v", c.what, err)
		}
		if err := <-done; err != nil {
			t.Errorf("%s: the first: %v", c.what, err)
		}
	}
}
