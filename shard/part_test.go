package shard

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/faster-training/faster/internal/atomicfile"
	"github.com/faster-training/faster/source"
)

// Four tasks packing into one destination at once (each leaves the
// others' temporary files alone), one of them interrupted for real and
// rerun: the merge names the interrupted task, then, after its rerun,
// writes the manifest a one-task pack writes, byte for byte.
func TestPackTasksConcurrentlyThenMerge(t *testing.T) {
	root := makeFolder(t, []string{"a", "b", "c"}, 30)
	src, err := source.OpenImageFolder(root)
	if err != nil {
		t.Fatal(err)
	}
	ref := t.TempDir()
	if _, err := Pack(context.Background(), src, root, ref, PackOptions{Shards: 9, Workers: 2}); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	// Task 3's shard being written: its temporary file must survive the
	// other tasks.
	other := filepath.Join(dst, atomicfile.TempStem(Name("train", 8, 9))+"123")
	os.WriteFile(other, []byte("in flight"), 0o644)

	// Task 2 interrupted after its first records.
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int64
	_, err = Pack(ctx, src, root, dst, PackOptions{Shards: 9, Workers: 1, TaskIndex: 2, TaskCount: 4, Progress: func(k int, _ int64) {
		if n.Add(int64(k)) >= 12 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted task: %v", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for _, i := range []int{0, 1} {
		wg.Go(func() {
			_, errs[i] = Pack(context.Background(), src, root, dst, PackOptions{Shards: 9, Workers: 1, TaskIndex: i, TaskCount: 4})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(other); err != nil || string(b) != "in flight" {
		t.Fatalf("task 3's temporary file, after tasks 0-2: %q %v", b, err)
	}
	// Task 3 itself removes what a killed run of it left.
	if _, err := Pack(context.Background(), src, root, dst, PackOptions{Shards: 9, Workers: 1, TaskIndex: 3, TaskCount: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(other); err == nil {
		t.Fatal("task 3 left its own temporary file")
	}
	_, err = MergeParts(context.Background(), dst, "train", 2)
	var ie *IncompleteError
	if !errors.As(err, &ie) || !slices.Equal(ie.Incomplete, []int{2}) || len(ie.Missing) != 0 || len(ie.Damaged) != 0 {
		t.Fatalf("merge with task 2 interrupted: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dst, ManifestName)); err == nil {
		t.Fatal("an incomplete merge wrote the manifest")
	}
	res, err := Pack(context.Background(), src, root, dst, PackOptions{Shards: 9, Workers: 1, TaskIndex: 2, TaskCount: 4})
	if err != nil {
		t.Fatal(err)
	}
	if first, last := TaskShards(2, 4, 9); res.Shards != last-first {
		t.Fatalf("task 2 packed %d shards, want %d", res.Shards, last-first)
	}
	mr, err := MergeParts(context.Background(), dst, "train", 2)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(ref, ManifestName))
	got, _ := os.ReadFile(filepath.Join(dst, ManifestName))
	if !bytes.Equal(want, got) {
		t.Fatalf("merged manifest differs from a one-task pack's:\n%s\nwant\n%s", got, want)
	}
	if mr.Records != 90 || mr.Skipped != 1 || mr.Shards != 9 || mr.Tasks != 4 {
		t.Fatalf("merge result %+v", mr)
	}
	for k := range 9 {
		for _, name := range []string{Name("train", k, 9), IndexName(Name("train", k, 9))} {
			a, _ := os.ReadFile(filepath.Join(ref, name))
			b, _ := os.ReadFile(filepath.Join(dst, name))
			if len(a) == 0 || !bytes.Equal(a, b) {
				t.Fatalf("%s differs", name)
			}
		}
	}
	if rep, _ := Verify(context.Background(), []string{dst}, VerifyOptions{}); !rep.OK() {
		t.Fatalf("verify of the merged split: %v", rep.Problems)
	}
}

// Two tasks that saw different source files are refused at the merge,
// naming both.
func TestMergeRefusesDifferentLayouts(t *testing.T) {
	root := makeFolder(t, []string{"a", "b"}, 10)
	src, _ := source.OpenImageFolder(root)
	dst := t.TempDir()
	if _, err := Pack(context.Background(), src, root, dst, PackOptions{Shards: 4, TaskIndex: 0, TaskCount: 2}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "b", "late.jpg"), jpegBytes(t, 9, 9, 1), 0o644)
	src2, _ := source.OpenImageFolder(root)
	if _, err := Pack(context.Background(), src2, root, dst, PackOptions{Shards: 4, TaskIndex: 1, TaskCount: 2}); err != nil {
		t.Fatal(err)
	}
	_, err := MergeParts(context.Background(), dst, "train", 1)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("task 0 and task 1 packed different layouts (fingerprints differ")) {
		t.Fatalf("merge of different layouts: %v", err)
	}
}

// Parts of two task counts in one destination are refused, naming the
// files; more tasks than shards leave some tasks with empty parts, and
// the merge still equals a one-task pack.
func TestMergeTaskCounts(t *testing.T) {
	root := makeFolder(t, []string{"a", "b"}, 5)
	src, _ := source.OpenImageFolder(root)
	ref := t.TempDir()
	if _, err := Pack(context.Background(), src, root, ref, PackOptions{Shards: 2}); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	for i := range 5 {
		if _, err := Pack(context.Background(), src, root, dst, PackOptions{Shards: 2, TaskIndex: i, TaskCount: 5}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Pack(context.Background(), src, root, dst, PackOptions{Shards: 2, TaskIndex: 0, TaskCount: 2}); err != nil {
		t.Fatal(err)
	}
	_, err := MergeParts(context.Background(), dst, "train", 1)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("different task counts: 2 tasks (task-00000-of-00002.json")) {
		t.Fatalf("merge of two task counts: %v", err)
	}
	os.Remove(filepath.Join(dst, PartsDir, "train", "task-00000-of-00002.json"))
	os.Remove(filepath.Join(dst, PartsDir, "train", "task-00000-of-00002.lock"))
	os.Remove(filepath.Join(dst, PartsDir, "train", "task-00000-of-00002.progress.json"))
	if _, err := MergeParts(context.Background(), dst, "train", 1); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(ref, ManifestName))
	got, _ := os.ReadFile(filepath.Join(dst, ManifestName))
	if !bytes.Equal(want, got) {
		t.Fatalf("merged manifest differs:\n%s\nwant\n%s", got, want)
	}
}
