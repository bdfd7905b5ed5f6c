package downscale

// A resize split into independent tasks (Options.TaskCount), each on a
// machine of its own, into one destination:
//
//	DST/...                                              the outputs, as one run writes them
//	DST/.faster-parts/resize/task-IIIII-of-TTTTT.json     a finished task's part manifest (create-only)
//	DST/.faster-parts/resize/task-IIIII-of-TTTTT.started  written when the task starts
//	DST/.faster-parts/resize/task-IIIII-of-TTTTT.lock     held while it runs
//
// Every task lists the same source files in the same order (the walk is
// sorted); task i of T takes files [i·F/T, (i+1)·F/T). MergeParts checks
// that every task committed its part for the same files and options and
// that every output its part lists is there at its size, then removes
// DST/.faster-parts/resize, leaving the tree one run writes (an
// ImageFolder reader would take the parts folder for a class).

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/faster-training/faster/internal/atomicfile"
	"github.com/faster-training/faster/internal/lockfile"
	"github.com/faster-training/faster/internal/task"
	"github.com/faster-training/faster/source"
)

// PartsDir is the folder under a destination that holds the tasks' part
// manifests until the merge (shared with faster pack's).
const PartsDir = ".faster-parts"

const partsSub = "resize"

// MaxTasks is the largest task count a resize is split into (task.MaxCount,
// Kubernetes' bound on an Indexed Job's completions): a count from a
// flag, the environment or a part file's name is checked against it
// before the merge allocates anything by it.
const MaxTasks = task.MaxCount

// maxPartSize bounds a part manifest read (one output listed per source
// file: about 4 million files).
const maxPartSize = 256 << 20

// readPart reads a part manifest by the data-file rules: a regular file
// (a FIFO is refused, never waited on; /dev/zero is not read) of at most
// maxPartSize bytes.
func readPart(path string) ([]byte, error) {
	f, size, err := source.OpenFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > maxPartSize {
		return nil, fmt.Errorf("%s: %d bytes, above the %d-byte cap on a part manifest", path, size, maxPartSize)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPartSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > maxPartSize {
		return nil, fmt.Errorf("%s: grows past the %d-byte cap on a part manifest while read", path, maxPartSize)
	}
	return b, nil
}

// Part is a resize task's part manifest.
type Part struct {
	Version int      `json:"version"`
	Task    int      `json:"task"`
	Tasks   int      `json:"tasks"`
	Files   int      `json:"files"`   // source files every task listed
	Listing string   `json:"listing"` // sha256 of their paths and sizes, in order
	Options string   `json:"options"` // what shapes the outputs: max size, quality, flags
	First   int      `json:"first"`   // this task's files are [First, Last) of the listing
	Last    int      `json:"last"`
	Outputs []Output `json:"outputs"`
	Result  *Result  `json:"result"`
}

// Output is a file a task wrote (or found up to date).
type Output struct {
	Path  string `json:"path"` // relative, slash-separated
	Bytes int64  `json:"bytes"`
}

type partTask struct {
	dir, stem    string
	index, count int
	listing      string
	nfiles       int
	first, last  int
	options      string
	unlock       func()
}

func optionsKey(o *Options) string {
	return fmt.Sprintf("max-size=%d quality=%d exif=%v non-images=%s no-scaled-decode=%v rgb=%v max-pixels=%d",
		o.MaxSize, o.Quality, o.EXIF, o.NonImages, o.NoScaledDecode, o.RGB, o.MaxPixels)
}

func listingKey(jobs []job) string {
	h := sha256.New()
	for _, j := range jobs {
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(j.rel), j.info.Size())
	}
	return hex.EncodeToString(h.Sum(nil))
}

// startTask takes the task's lock, refuses a task whose part is committed
// for other files or options (a part is never replaced), marks the task
// started, removes the temporary files a killed run of it left and returns
// its files.
func startTask(dst string, jobs []job, o *Options) (*partTask, []job, error) {
	p := &partTask{
		dir: filepath.Join(dst, PartsDir, partsSub), stem: task.FileStem(o.TaskIndex, o.TaskCount),
		index: o.TaskIndex, count: o.TaskCount, listing: listingKey(jobs), nfiles: len(jobs), options: optionsKey(o),
	}
	p.first, p.last = o.TaskIndex*len(jobs)/o.TaskCount, (o.TaskIndex+1)*len(jobs)/o.TaskCount
	if err := os.MkdirAll(p.dir, 0o777); err != nil {
		return nil, nil, err
	}
	unlock, err := lockfile.Lock(filepath.Join(p.dir, p.stem+".lock"))
	if errors.Is(err, lockfile.ErrLocked) {
		return nil, nil, fmt.Errorf("%s: task %d of %d is being resized by another run (its lock is held)", dst, p.index, p.count)
	}
	if err != nil {
		return nil, nil, err
	}
	p.unlock = unlock
	if _, err := os.Lstat(filepath.Join(p.dir, p.stem+".json")); err == nil {
		b, err := readPart(filepath.Join(p.dir, p.stem+".json"))
		if err != nil {
			unlock()
			return nil, nil, fmt.Errorf("task %d of %d's part manifest: %w (remove it to resize the task again)", p.index, p.count, err)
		}
		var old Part
		if json.Unmarshal(b, &old) != nil || old.Listing != p.listing || old.Options != p.options {
			unlock()
			return nil, nil, fmt.Errorf("%s: task %d of %d has a part committed for other source files or options (a part manifest is never replaced): remove %s (and the other tasks' parts) to resize it again",
				dst, p.index, p.count, filepath.Join(p.dir, p.stem+".json"))
		}
	}
	// Written as a new file renamed into place: whatever is at the name
	// (a FIFO would block an open for writing) is replaced, never opened.
	if err := atomicfile.WriteFile(filepath.Join(p.dir, p.stem+".started"), nil, 0o644); err != nil {
		unlock()
		return nil, nil, err
	}
	mine := jobs[p.first:p.last]
	byDir := map[string][]string{}
	for _, j := range mine {
		d, b := filepath.Split(filepath.Join(dst, j.rel))
		byDir[d] = append(byDir[d], atomicfile.TempStem(b))
	}
	for d, stems := range byDir {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if !e.Type().IsRegular() || !atomicfile.IsTemp(e.Name()) {
				continue
			}
			for _, s := range stems {
				if strings.HasPrefix(e.Name(), s) {
					os.Remove(filepath.Join(d, e.Name()))
					break
				}
			}
		}
	}
	return p, mine, nil
}

// refuseRunningTasks refuses a one-machine run into dst while a resize
// task writes it (a task's lock held, seen without taking it): the run
// removes every temporary file it finds in the output folders, the
// task's too. A task's parts left unlocked (finished or killed) do not
// stop it.
func refuseRunningTasks(dst string) error {
	dir := filepath.Join(dst, PartsDir, partsSub)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil // no tasks here
	}
	for _, e := range ents {
		i, n, kind, ok, _ := task.ParseFileName(dir, e.Name(), partExts...)
		if !ok || kind != ".lock" {
			continue
		}
		if held, err := lockfile.Held(filepath.Join(dir, e.Name())); err == nil && held {
			return fmt.Errorf("%s: resize task %d of %d is writing this destination now (%s is locked): a resize of the whole tree would remove its temporary files; wait for the tasks to finish, then merge them (faster resize --merge)", dst, i, n, filepath.Join(dir, e.Name()))
		}
	}
	return nil
}

// commit lists the task's outputs and writes its part manifest, unless
// the part is there already (a rerun of a finished task changes nothing).
func (p *partTask) commit(jobs []job, res *Result) error {
	path := filepath.Join(p.dir, p.stem+".json")
	if _, err := os.Lstat(path); err == nil {
		return nil
	}
	failed := map[string]bool{}
	for _, f := range res.Failures {
		failed[f.Path] = true
	}
	pt := &Part{Version: 1, Task: p.index, Tasks: p.count, Files: p.nfiles, Listing: p.listing, Options: p.options,
		First: p.first, Last: p.last, Outputs: []Output{}, Result: res}
	dst := filepath.Dir(filepath.Dir(p.dir))
	for _, j := range jobs {
		rel := filepath.ToSlash(j.rel)
		if failed[rel] {
			continue
		}
		st, err := os.Stat(filepath.Join(dst, j.rel))
		if errors.Is(err, fs.ErrNotExist) {
			continue // a non-image left out
		}
		if err != nil {
			return err
		}
		pt.Outputs = append(pt.Outputs, Output{rel, st.Size()})
	}
	b, err := json.MarshalIndent(pt, "", "  ")
	if err != nil {
		return err
	}
	err = atomicfile.WriteNew(path, append(b, '\n'), 0o644)
	if errors.Is(err, atomicfile.ErrExists) {
		return nil // committed meanwhile by another run of this task, for the same files
	}
	return err
}

// IncompleteError names every task not done at once.
type IncompleteError struct {
	Dir        string
	Tasks      int
	Missing    []int          // no trace
	Incomplete []int          // started, no part manifest
	Damaged    map[int]string // a part whose outputs fail their checks
}

func (e *IncompleteError) Error() string {
	list := func(xs []int) string {
		s := make([]string, len(xs))
		for i, x := range xs {
			s[i] = strconv.Itoa(x)
		}
		return strings.Join(s, ", ")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d of %d resize tasks not done", e.Dir, len(e.Missing)+len(e.Incomplete)+len(e.Damaged), e.Tasks)
	if len(e.Missing) > 0 {
		fmt.Fprintf(&b, "; missing (never started): %s", list(e.Missing))
	}
	if len(e.Incomplete) > 0 {
		fmt.Fprintf(&b, "; incomplete (started, no part manifest: killed, failed or still running): %s", list(e.Incomplete))
	}
	keys := make([]int, 0, len(e.Damaged))
	for k := range e.Damaged {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "; damaged %d: %s (remove %s and rerun it)", k, e.Damaged[k], filepath.Join(e.Dir, PartsDir, partsSub, task.FileStem(k, e.Tasks)+".json"))
	}
	fmt.Fprintf(&b, "; rerun those tasks (--task i/%d, or the scheduler's indexes), then merge again", e.Tasks)
	return b.String()
}

// partExts are the kinds of a resize task's files in the parts folder.
var partExts = []string{".json", ".started", ".lock"}

// MergeParts checks the parts of a resize split into tasks under dst: a
// part manifest from every task, all for the same source listing and
// options, their files tiling the listing, every output they list present
// at its size. It returns their summed Result and removes the parts
// folder, or an *IncompleteError naming every task not done.
func MergeParts(dst string) (*Result, error) {
	dir := filepath.Join(dst, PartsDir, partsSub)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no resize task parts (%s is missing): run the tasks with --task or under a scheduler first (merged before?)", dst, dir)
	}
	if err != nil {
		return nil, err
	}
	counts := map[int]bool{}
	started, committed := map[int]bool{}, map[int]bool{}
	var files []string // the task files read, removed once merged
	for _, e := range ents {
		i, n, kind, ok, err := task.ParseFileName(dir, e.Name(), partExts...)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		files = append(files, e.Name())
		counts[n] = true
		if kind == ".json" {
			committed[i] = true
		} else {
			started[i] = true
		}
	}
	if len(counts) != 1 {
		if len(counts) == 0 {
			return nil, fmt.Errorf("%s: no resize task parts in %s", dst, dir)
		}
		return nil, fmt.Errorf("%s: resize tasks were run with different task counts (%v): keep one count, remove the others' files from %s", dst, slices.Sorted(maps.Keys(counts)), dir)
	}
	var tasks int
	for n := range counts {
		tasks = n
	}
	ie := &IncompleteError{Dir: dst, Tasks: tasks, Damaged: map[int]string{}}
	var ref *Part
	total := &Result{Failures: []Failure{}}
	seenFail := map[string]bool{}
	for i := range tasks {
		if !committed[i] {
			if started[i] {
				ie.Incomplete = append(ie.Incomplete, i)
			} else {
				ie.Missing = append(ie.Missing, i)
			}
			continue
		}
		var pt Part
		b, err := readPart(filepath.Join(dir, task.FileStem(i, tasks)+".json"))
		if err != nil {
			ie.Damaged[i] = err.Error()
			continue
		}
		if err := json.Unmarshal(b, &pt); err != nil || pt.Result == nil {
			ie.Damaged[i] = fmt.Sprintf("unreadable part manifest: %v", err)
			continue
		}
		if ref == nil {
			ref = &pt
		} else if pt.Listing != ref.Listing || pt.Files != ref.Files {
			return nil, fmt.Errorf("%s: tasks %d and %d listed different source files: were they given the same --src, seeing the same files?", dst, ref.Task, pt.Task)
		} else if pt.Options != ref.Options {
			return nil, fmt.Errorf("%s: tasks %d and %d ran with different options (%s vs %s)", dst, ref.Task, pt.Task, ref.Options, pt.Options)
		}
		if pt.Task != i || pt.Tasks != tasks || pt.First != i*pt.Files/tasks || pt.Last != (i+1)*pt.Files/tasks {
			ie.Damaged[i] = fmt.Sprintf("the part says task %d of %d, files %d..%d", pt.Task, pt.Tasks, pt.First, pt.Last)
			continue
		}
		for _, o := range pt.Outputs {
			if !filepath.IsLocal(filepath.FromSlash(o.Path)) || strings.ContainsAny(o.Path, "\\\x00") {
				ie.Damaged[i] = fmt.Sprintf("output %q is not a path inside the destination", o.Path)
				break
			}
			st, err := os.Stat(filepath.Join(dst, filepath.FromSlash(o.Path)))
			if err != nil || st.Size() != o.Bytes {
				why := fmt.Sprintf("output %s: ", o.Path)
				if err != nil {
					why += "missing"
				} else {
					why += fmt.Sprintf("%d bytes, the part says %d", st.Size(), o.Bytes)
				}
				ie.Damaged[i] = why
				break
			}
		}
		r := pt.Result
		total.Images += r.Images
		total.add(&Result{Resized: r.Resized, Copied: r.Copied, Skipped: r.Skipped, OtherCopied: r.OtherCopied, OtherSkipped: r.OtherSkipped, BytesIn: r.BytesIn, BytesOut: r.BytesOut})
		total.Seconds = max(total.Seconds, r.Seconds)
		total.CPUSeconds += r.CPUSeconds
		for _, f := range r.Failures {
			if !seenFail[f.Path] { // a folder every task failed to list counts once
				seenFail[f.Path] = true
				total.Failures = append(total.Failures, f)
			}
		}
	}
	if len(ie.Missing)+len(ie.Incomplete)+len(ie.Damaged) > 0 {
		return nil, ie
	}
	total.Failed = len(total.Failures)
	sort.Slice(total.Failures, func(a, b int) bool { return total.Failures[a].Path < total.Failures[b].Path })
	total.ImagesPerSec = float64(total.Resized+total.Copied) / max(total.Seconds, 1e-9)
	// Only the task files read, and the folders once empty: never a file
	// or folder the merge did not make (before: the folder went whole).
	for _, f := range files {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	removeEmptyDir(dir)
	removeEmptyDir(filepath.Join(dst, PartsDir)) // when no pack parts are left
	return total, nil
}

// removeEmptyDir removes dir if it is a folder (not a link to one) and
// empty.
func removeEmptyDir(dir string) {
	if st, err := os.Lstat(dir); err == nil && st.IsDir() {
		os.Remove(dir) // fails, leaving it, when something is in it
	}
}
