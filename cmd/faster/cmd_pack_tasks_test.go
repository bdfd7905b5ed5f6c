package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
)

// taskVars are every variable internal/task reads; each test run clears
// them all and sets its source's.
var taskVars = []string{
	"JOB_COMPLETION_INDEX", "FASTER_TASK_COUNT",
	"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_STEP",
	"SLURM_PROCID", "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
	"PMI_RANK", "PMI_SIZE", "RANK", "WORLD_SIZE",
}

func setTaskEnv(t *testing.T, kv ...string) {
	t.Helper()
	for _, k := range taskVars {
		t.Setenv(k, "")
	}
	for i := 0; i < len(kv); i += 2 {
		t.Setenv(kv[i], kv[i+1])
	}
}

// realPhotoTree is an ImageFolder of real photographs (Debian
// mate-backgrounds, the files as they are) in three classes.
func realPhotoTree(t *testing.T) string {
	t.Helper()
	photos, _ := filepath.Glob(testenv.PhotoDir + "/*.jpg")
	if len(photos) < 9 {
		testenv.Missing(t, "mate-backgrounds missing")
	}
	slices.Sort(photos)
	root := filepath.Join(t.TempDir(), "photos")
	for i, p := range photos[:9] {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		d := filepath.Join(root, "class"+strconv.Itoa(i%3))
		os.MkdirAll(d, 0o755)
		if err := os.WriteFile(filepath.Join(d, filepath.Base(p)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// visibleFiles maps every file under dir, hidden ones (the pack lock, the
// parts folder) left out, to its bytes.
func visibleFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(d.Name(), ".") && p != dir {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(dir, p)
			out[rel] = b
		}
		return nil
	})
	return out
}

func sameTree(t *testing.T, what, want, got string) {
	t.Helper()
	w, g := visibleFiles(t, want), visibleFiles(t, got)
	if len(w) == 0 {
		t.Fatalf("%s: the reference %s is empty", what, want)
	}
	for name, b := range w {
		gb, ok := g[name]
		if !ok {
			t.Errorf("%s: %s missing", what, name)
		} else if !bytes.Equal(b, gb) {
			t.Errorf("%s: %s differs from the one-machine run's (%d vs %d bytes)", what, name, len(gb), len(b))
		}
	}
	for name := range g {
		if _, ok := w[name]; !ok {
			t.Errorf("%s: extra file %s", what, name)
		}
	}
}

// A pack split into 3 tasks through each scheduler's environment (and
// --task), then merged, equals a one-machine pack byte for byte: shards,
// indexes and manifest; the parts folder is gone after the merge.
func TestPackTasksFromEachSourceMergeEqualsOneMachine(t *testing.T) {
	src := realPhotoTree(t)
	setTaskEnv(t)
	ref := filepath.Join(t.TempDir(), "ref")
	if code, _, errs := runCLI(t, "pack", src, ref, "--shards", "7"); code != 0 {
		t.Fatal(errs)
	}
	refWDS := filepath.Join(t.TempDir(), "refwds")
	if code, _, errs := runCLI(t, "pack", src, refWDS, "--shards", "7", "--format", "wds", "--shuffle", "--seed", "3"); code != 0 {
		t.Fatal(errs)
	}
	type source struct {
		name string
		env  func(i int) []string
		args func(i int) []string
	}
	none := func(int) []string { return nil }
	is := strconv.Itoa
	for _, s := range []source{
		{"kubernetes", func(i int) []string { return []string{"JOB_COMPLETION_INDEX", is(i), "FASTER_TASK_COUNT", "3"} }, none},
		{"kubernetes --task-count", func(i int) []string { return []string{"JOB_COMPLETION_INDEX", is(i)} }, func(int) []string { return []string{"--task-count", "3"} }},
		// --array=4-6: task ids 4, 5, 6 are tasks 0, 1, 2.
		{"slurm array", func(i int) []string {
			return []string{"SLURM_ARRAY_TASK_ID", is(4 + i), "SLURM_ARRAY_TASK_COUNT", "3", "SLURM_ARRAY_TASK_MIN", "4", "SLURM_ARRAY_TASK_MAX", "6", "SLURM_ARRAY_TASK_STEP", "1", "SLURM_PROCID", "0", "SLURM_NTASKS", "1"}
		}, none},
		{"srun", func(i int) []string { return []string{"SLURM_PROCID", is(i), "SLURM_NTASKS", "3"} }, none},
		{"open mpi", func(i int) []string { return []string{"OMPI_COMM_WORLD_RANK", is(i), "OMPI_COMM_WORLD_SIZE", "3"} }, none},
		{"pmi", func(i int) []string { return []string{"PMI_RANK", is(i), "PMI_SIZE", "3"} }, none},
		{"torchrun", func(i int) []string { return []string{"RANK", is(i), "WORLD_SIZE", "3"} }, none},
		// --task wins over an environment that says otherwise.
		{"--task", func(i int) []string { return []string{"RANK", "0", "WORLD_SIZE", "2"} }, func(i int) []string { return []string{"--task", is(i) + "/3"} }},
	} {
		dst := filepath.Join(t.TempDir(), "tasks")
		for _, i := range []int{2, 0, 1} { // any order
			setTaskEnv(t, s.env(i)...)
			args := append([]string{"pack", src, dst, "--shards", "7", "--json"}, s.args(i)...)
			code, out, errs := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("%s: task %d: exit %d: %s", s.name, i, code, errs)
			}
			var sum struct {
				Task   struct{ Index, Count int }
				Shards int
			}
			json.Unmarshal([]byte(out), &sum)
			if sum.Task.Index != i || sum.Task.Count != 3 || sum.Shards != []int{2, 2, 3}[i] {
				t.Fatalf("%s: task %d: summary %s", s.name, i, out)
			}
			if _, err := os.Stat(filepath.Join(dst, "manifest.json")); err == nil {
				t.Fatalf("%s: a task wrote manifest.json", s.name)
			}
		}
		setTaskEnv(t)
		if code, out, errs := runCLI(t, "pack", "--merge", dst); code != 0 || !strings.Contains(out, "merged 3 tasks") {
			t.Fatalf("%s: merge exit %d: %s%s", s.name, code, out, errs)
		}
		sameTree(t, s.name, ref, dst)
		if _, err := os.Stat(filepath.Join(dst, ".faster-parts")); err == nil {
			t.Errorf("%s: .faster-parts left after the merge", s.name)
		}
	}
	// WebDataset shards, shuffled, by --task.
	dst := filepath.Join(t.TempDir(), "wds")
	for i := range 3 {
		if code, _, errs := runCLI(t, "pack", src, dst, "--shards", "7", "--format", "wds", "--shuffle", "--seed", "3", "--task", is(i)+"/3"); code != 0 {
			t.Fatal(errs)
		}
	}
	if code, _, errs := runCLI(t, "pack", "--merge", dst); code != 0 {
		t.Fatal(errs)
	}
	sameTree(t, "wds", refWDS, dst)
}

// The merge names a task never run and a killed one (its shards and
// progress there, no part manifest) at once, and a damaged shard's task;
// rerunning just those completes the set, equal to a one-machine pack.
func TestPackMergeNamesMissingIncompleteDamaged(t *testing.T) {
	src := realPhotoTree(t)
	setTaskEnv(t)
	ref := filepath.Join(t.TempDir(), "ref")
	if code, _, errs := runCLI(t, "pack", src, ref, "--shards", "7"); code != 0 {
		t.Fatal(errs)
	}
	dst := filepath.Join(t.TempDir(), "tasks")
	pack := func(i int) {
		t.Helper()
		if code, _, errs := runCLI(t, "pack", src, dst, "--shards", "7", "--task", strconv.Itoa(i)+"/3"); code != 0 {
			t.Fatalf("task %d: %s", i, errs)
		}
	}
	pack(0)
	pack(1)
	// Task 1 killed before its commit: its part manifest never written,
	// one of its shards never renamed into place.
	os.Remove(filepath.Join(dst, ".faster-parts", "train", "task-00001-of-00003.json"))
	os.Remove(filepath.Join(dst, "train-00003-of-00007.tfrecord"))
	code, out, errs := runCLI(t, "pack", "--merge", dst, "--json")
	if code != 1 {
		t.Fatalf("merge with tasks missing: exit %d: %s", code, errs)
	}
	for _, w := range []string{"2 of 3 tasks not done", "missing (never started): 2", "incomplete (started, no part manifest: killed, failed or still running): 1", "--task i/3"} {
		if !strings.Contains(errs, w) {
			t.Errorf("merge stderr %q lacks %q", errs, w)
		}
	}
	var rep struct{ Rerun []int }
	if json.Unmarshal([]byte(out), &rep); !slices.Equal(rep.Rerun, []int{1, 2}) {
		t.Errorf("merge --json: %s, want rerun [1 2]", out)
	}
	if _, err := os.Stat(filepath.Join(dst, "manifest.json")); err == nil {
		t.Fatal("an incomplete merge wrote manifest.json")
	}
	pack(1) // resumes: keeps its intact shard, writes the missing one
	code, _, errs = runCLI(t, "pack", "--merge", dst)
	if code != 1 || !strings.Contains(errs, "1 of 3 tasks not done; missing (never started): 2;") {
		t.Fatalf("merge after rerunning task 1: exit %d: %s", code, errs)
	}
	pack(2)
	// A shard changed after its task committed: its task is damaged.
	p := filepath.Join(dst, "train-00005-of-00007.tfrecord")
	b, _ := os.ReadFile(p)
	b[len(b)/2] ^= 1
	os.WriteFile(p, b, 0o644)
	code, _, errs = runCLI(t, "pack", "--merge", dst)
	if code != 1 || !strings.Contains(errs, "damaged 2: shard train-00005-of-00007.tfrecord: sha256") || !strings.Contains(errs, "task-00002-of-00003.json and rerun it") {
		t.Fatalf("merge with a damaged shard: exit %d: %s", code, errs)
	}
	b[len(b)/2] ^= 1
	os.WriteFile(p, b, 0o644)
	if code, _, errs := runCLI(t, "pack", "--merge", dst); code != 0 {
		t.Fatalf("merge: %s", errs)
	}
	sameTree(t, "after reruns", ref, dst)
	// Merged already: a second merge says so.
	if code, _, errs := runCLI(t, "pack", "--merge", dst); code != 1 || !strings.Contains(errs, "merged before?") {
		t.Errorf("second merge: exit %d: %s", code, errs)
	}
}

// A committed part manifest is never replaced: a rerun of its task keeps
// it as it is, and a rerun with another layout is refused naming it.
func TestPackPartManifestNeverOverwritten(t *testing.T) {
	src := realPhotoTree(t)
	setTaskEnv(t)
	dst := filepath.Join(t.TempDir(), "tasks")
	if code, _, errs := runCLI(t, "pack", src, dst, "--shards", "7", "--task", "0/3"); code != 0 {
		t.Fatal(errs)
	}
	part := filepath.Join(dst, ".faster-parts", "train", "task-00000-of-00003.json")
	before, err := os.ReadFile(part)
	if err != nil {
		t.Fatal(err)
	}
	st0, _ := os.Stat(part)
	code, out, errs := runCLI(t, "pack", src, dst, "--shards", "7", "--task", "0/3")
	if code != 0 || !strings.Contains(out, "2 kept") {
		t.Fatalf("rerun: exit %d: %s%s", code, out, errs)
	}
	code, _, errs = runCLI(t, "pack", src, dst, "--shards", "5", "--task", "0/3")
	if code != 1 || !strings.Contains(errs, "never replaced") || !strings.Contains(errs, part) {
		t.Fatalf("rerun with another layout: exit %d: %s", code, errs)
	}
	after, _ := os.ReadFile(part)
	st1, _ := os.Stat(part)
	if !bytes.Equal(before, after) || !os.SameFile(st0, st1) || !st0.ModTime().Equal(st1.ModTime()) {
		t.Fatal("the part manifest was rewritten")
	}
}

// Contradicting sources stop the task before it writes, naming them;
// --merge refuses the tasks' flags.
func TestPackTaskUsageErrors(t *testing.T) {
	src := realPhotoTree(t)
	dst := filepath.Join(t.TempDir(), "tasks")
	setTaskEnv(t, "SLURM_ARRAY_TASK_ID", "1", "SLURM_ARRAY_TASK_COUNT", "3", "OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2")
	code, _, errs := runCLI(t, "pack", src, dst)
	if code != 2 || !strings.Contains(errs, "Slurm job array") || !strings.Contains(errs, "Open MPI") {
		t.Fatalf("contradicting sources: exit %d: %s", code, errs)
	}
	setTaskEnv(t, "JOB_COMPLETION_INDEX", "1")
	if code, _, errs := runCLI(t, "pack", src, dst); code != 2 || !strings.Contains(errs, "FASTER_TASK_COUNT") {
		t.Fatalf("Indexed Job without a count: exit %d: %s", code, errs)
	}
	if _, err := os.Stat(dst); err == nil {
		t.Error("a refused task created its destination")
	}
	setTaskEnv(t)
	if code, _, errs := runCLI(t, "pack", "--merge", dst, "--shards", "3"); code != 2 || !strings.Contains(errs, "--shards belongs to the tasks") {
		t.Fatalf("--merge --shards: exit %d: %s", code, errs)
	}
	if code, _, errs := runCLI(t, "pack", "--merge", src, dst); code != 2 {
		t.Fatalf("--merge with two arguments: exit %d: %s", code, errs)
	}
}

// A resize split into 3 tasks (by a Slurm job array, a Kubernetes
// Indexed Job, and --task) then merged leaves the tree one run writes,
// byte for byte; a killed task is named incomplete, a task never run
// missing, and rerunning it completes the set.
func TestResizeTasksMergeEqualsOneMachine(t *testing.T) {
	src := realPhotoTree(t)
	os.WriteFile(filepath.Join(src, "notes.txt"), []byte("not an image"), 0o644)
	setTaskEnv(t)
	ref := filepath.Join(t.TempDir(), "ref")
	if code, _, errs := runCLI(t, "resize", "--src", src, "--dst", ref, "--max-size", "96"); code != 0 {
		t.Fatal(errs)
	}
	is := strconv.Itoa
	for _, s := range []struct {
		name string
		env  func(i int) []string
		args func(i int) []string
	}{
		{"slurm array", func(i int) []string {
			return []string{"SLURM_ARRAY_TASK_ID", is(1 + i), "SLURM_ARRAY_TASK_COUNT", "3", "SLURM_ARRAY_TASK_MIN", "1", "SLURM_ARRAY_TASK_MAX", "3"}
		}, func(int) []string { return nil }},
		{"kubernetes", func(i int) []string { return []string{"JOB_COMPLETION_INDEX", is(i)} }, func(int) []string { return []string{"--task-count", "3"} }},
		{"--task", func(int) []string { return nil }, func(i int) []string { return []string{"--task", is(i) + "/3"} }},
	} {
		dst := filepath.Join(t.TempDir(), "tasks")
		resize := func(i int) {
			t.Helper()
			setTaskEnv(t, s.env(i)...)
			args := append([]string{"resize", "--src", src, "--dst", dst, "--max-size", "96", "--json"}, s.args(i)...)
			code, out, errs := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("%s: task %d: exit %d: %s", s.name, i, code, errs)
			}
			var sum struct {
				Task   struct{ Index, Count int }
				Images int
			}
			// 10 files sorted (9 photos in 3 classes, notes.txt): 3, 3, 4.
			if json.Unmarshal([]byte(out), &sum); sum.Task.Index != i || sum.Task.Count != 3 || sum.Images != 3 {
				t.Fatalf("%s: task %d: summary %s", s.name, i, out)
			}
		}
		resize(2)
		resize(1)
		// Task 1 killed before its commit.
		os.Remove(filepath.Join(dst, ".faster-parts", "resize", "task-00001-of-00003.json"))
		setTaskEnv(t)
		code, _, errs := runCLI(t, "resize", "--merge", "--dst", dst)
		if code != 1 || !strings.Contains(errs, "2 of 3 resize tasks not done; missing (never started): 0; incomplete (started, no part manifest: killed, failed or still running): 1;") {
			t.Fatalf("%s: merge with tasks missing: exit %d: %s", s.name, code, errs)
		}
		resize(1)
		resize(0)
		setTaskEnv(t)
		if code, out, errs := runCLI(t, "resize", "--merge", "--dst", dst); code != 0 || !strings.Contains(out, "merged the resize tasks") {
			t.Fatalf("%s: merge: exit %d: %s%s", s.name, code, out, errs)
		}
		if _, err := os.Stat(filepath.Join(dst, ".faster-parts")); err == nil {
			t.Errorf("%s: .faster-parts left after the merge", s.name)
		}
		sameTree(t, s.name, ref, dst)
	}
}
