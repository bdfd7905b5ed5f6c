//go:build unix

package downscale

import (
	"context"
	"errors"
	"github.com/faster-training/faster/internal/task"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/faster-training/faster/internal/atomicfile"
	"github.com/faster-training/faster/internal/lockfile"
)

// resizeTasks resizes a small tree into a new destination as count
// tasks and returns the destination.
func resizeTasks(t *testing.T, count int) string {
	t.Helper()
	src := t.TempDir()
	writeTree(t, src, map[string][]byte{"a/1.jpg": photo(t, 40, 30), "a/2.jpg": photo(t, 30, 40), "b/3.jpg": photo(t, 20, 20), "b/notes.txt": []byte("x")})
	dst := filepath.Join(t.TempDir(), "dst")
	for i := range count {
		if _, err := Run(context.Background(), src, dst, Options{MaxSize: 16, Workers: 1, TaskIndex: i, TaskCount: count}); err != nil {
			t.Fatalf("task %d of %d: %v", i, count, err)
		}
	}
	return dst
}

// A task count is bounded before anything is allocated by it: a stray
// part name saying task 0 of 2^40 (or of 0: before, a merge of no task
// at all, reported done) is refused naming the file; Run refuses such a
// count.
func TestResizeMergeBoundsTaskCount(t *testing.T) {
	for _, name := range []string{"task-00000-of-1099511627776.json", "task-00000-of-00000.started",
		"task-00000-of-99999999999999999999999.lock", "task-00003-of-00002.json"} {
		dst := t.TempDir()
		dir := filepath.Join(dst, PartsDir, partsSub)
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, name), []byte("{}"), 0o644)
		_, err := MergeParts(dst)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, name)) {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s removed: %v", name, err)
		}
	}
	o := Options{MaxSize: 16, TaskCount: MaxTasks + 1}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("task count %d: %v", o.TaskCount, err)
	}
}

// Part manifests are read by the data-file rules: a FIFO in a part's
// place is damage, named (before: the merge hung until a signal), a link
// to /dev/zero too (before: read until out of memory); at a rerun of its
// task as well.
func TestResizePartsByDataFileRules(t *testing.T) {
	for _, mk := range []func(string) error{
		func(p string) error { return syscall.Mkfifo(p, 0o644) },
		func(p string) error { return os.Symlink("/dev/zero", p) },
	} {
		dst := resizeTasks(t, 2)
		p := filepath.Join(dst, PartsDir, partsSub, task.FileStem(1, 2)+".json")
		os.Remove(p)
		if err := mk(p); err != nil {
			t.Fatal(err)
		}
		_, err := MergeParts(dst)
		var ie *IncompleteError
		if !errors.As(err, &ie) || ie.Damaged[1] == "" || !strings.Contains(err.Error(), p) {
			t.Errorf("merge: %v", err)
		}
	}
}

// A part listing an output outside the destination is damaged, even when
// a file of its size is there (its paths are checked as local relative
// paths before any is looked at; before: merged).
func TestResizePartOutputsStayInside(t *testing.T) {
	dst := resizeTasks(t, 1)
	b, err := os.ReadFile(filepath.Join(dst, "a", "1.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dst, "..", "outside.jpg"), b, 0o644)
	p := filepath.Join(dst, PartsDir, partsSub, task.FileStem(0, 1)+".json")
	b, _ = os.ReadFile(p)
	b = []byte(strings.Replace(string(b), `"path": "a/1.jpg"`, `"path": "../outside.jpg"`, 1))
	os.Remove(p)
	os.WriteFile(p, b, 0o644)
	_, err = MergeParts(dst)
	var ie *IncompleteError
	if !errors.As(err, &ie) || !strings.Contains(ie.Damaged[0], "../outside.jpg") {
		t.Errorf("merge: %v", err)
	}
}

// The merge removes the task files it read and the folders it made once
// empty, never someone else's file beside them (before: the folder was
// removed whole).
func TestResizeMergeRemovesOnlyItsFiles(t *testing.T) {
	dst := resizeTasks(t, 2)
	notes := filepath.Join(dst, PartsDir, partsSub, "notes.txt")
	os.WriteFile(notes, []byte("mine"), 0o644)
	if _, err := MergeParts(dst); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(notes); err != nil || string(b) != "mine" {
		t.Fatalf("merge removed a file it did not make: %q %v", b, err)
	}
	ents, _ := os.ReadDir(filepath.Dir(notes))
	if len(ents) != 1 {
		t.Errorf("merge left %d entries, want notes.txt alone", len(ents))
	}
	dst = resizeTasks(t, 2)
	if _, err := MergeParts(dst); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dst, PartsDir)); err == nil {
		t.Error("merge left the empty parts folder")
	}
}

// A FIFO where a task's ".started" mark goes is replaced, never opened
// for writing (before: the task blocked until a signal).
func TestResizeStartedMarkFIFO(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, map[string][]byte{"a/1.jpg": photo(t, 40, 30)})
	dst := t.TempDir()
	dir := filepath.Join(dst, PartsDir, partsSub)
	os.MkdirAll(dir, 0o755)
	if err := syscall.Mkfifo(filepath.Join(dir, task.FileStem(0, 2)+".started"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), src, dst, Options{MaxSize: 16, Workers: 1, TaskIndex: 0, TaskCount: 2}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(filepath.Join(dir, task.FileStem(0, 2)+".started")); err != nil || !st.Mode().IsRegular() {
		t.Errorf("the started mark: %v %v", st, err)
	}
}

// A one-machine resize into a destination a resize task is writing now
// (its lock held) is refused naming the task, before it removes any
// temporary file (before: it removed the task's, which then failed with
// a raw "rename … no such file").
func TestResizeOneMachineBesideRunningTask(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, map[string][]byte{"a/1.jpg": photo(t, 40, 30)})
	dst := t.TempDir()
	dir := filepath.Join(dst, PartsDir, partsSub)
	os.MkdirAll(dir, 0o755)
	unlock, err := lockfile.Lock(filepath.Join(dir, task.FileStem(1, 2)+".lock")) // task 1 of 2, running
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	os.MkdirAll(filepath.Join(dst, "a"), 0o755)
	temp := filepath.Join(dst, "a", atomicfile.TempStem("1.jpg")+"123")
	os.WriteFile(temp, []byte("in flight"), 0o644)
	_, err = Run(context.Background(), src, dst, Options{MaxSize: 16, Workers: 1})
	if err == nil || !strings.Contains(err.Error(), "task 1 of 2") {
		t.Errorf("one-machine resize beside a running task: %v", err)
	}
	if _, err := os.Stat(temp); err != nil {
		t.Errorf("the task's temporary file: %v", err)
	}
	unlock()
	if _, err := Run(context.Background(), src, dst, Options{MaxSize: 16, Workers: 1}); err != nil {
		t.Errorf("once the task ended: %v", err)
	}
}
