package shard

// A split packed as independent tasks (PackOptions.TaskCount), each on a
// machine of its own, then merged (MergeParts):
//
//	DST/<split>-NNNNN-of-NNNNN.{tfrecord,tar,idx}      every task's shards, as one pack names them
//	DST/.faster-parts/<split>/task-IIIII-of-TTTTT.json           a finished task's part manifest (create-only)
//	DST/.faster-parts/<split>/task-IIIII-of-TTTTT.progress.json  a task's progress, for its own resume
//	DST/.faster-parts/<split>/task-IIIII-of-TTTTT.lock           held while the task runs
//
// Task i of T writes shards [i·N/T, (i+1)·N/T) of the N a one-task pack
// writes, byte for byte the same, then its part manifest, committed last
// and never replaced. The merge checks every part and writes manifest.json
// as a one-task pack would, then removes the task files it read from
// DST/.faster-parts/<split> and the folders once empty. Tasks hold the
// destination's LockName shared, a one-machine pack and the merge
// exclusively.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/faster-training/faster/internal/atomicfile"
	"github.com/faster-training/faster/internal/lockfile"
	"github.com/faster-training/faster/internal/task"
	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/tfrecord"
)

// PartsDir is the folder under a destination that holds the tasks' part
// manifests until the merge.
const PartsDir = ".faster-parts"

// MaxTasks is the largest task count a split is packed in (task.MaxCount,
// Kubernetes' bound on an Indexed Job's completions): a count from a
// flag, the environment or a part file's name is checked against it
// before the merge allocates anything by it.
const MaxTasks = task.MaxCount

// maxPartShards bounds a part's shard count before TaskShards multiplies
// by it (a manifest of MaxManifestSize lists far fewer).
const maxPartShards = 1 << 24

// TaskShards returns the shards [first, last) that task i of count writes
// when the split has n shards.
func TaskShards(i, count, n int) (first, last int) {
	return i * n / count, (i + 1) * n / count
}

// Part is a task's part manifest.
type Part struct {
	Version    int    `json:"version"`
	Format     string `json:"format"`
	Split      string `json:"split"`
	Task       int    `json:"task"`
	Tasks      int    `json:"tasks"`
	FirstShard int    `json:"first_shard"`
	// Layout is the split as a one-task pack records it (source, classes,
	// shard count, fingerprint), with Shards only this task's and Records
	// and Bytes their sums.
	Layout *Split `json:"layout"`
}

type partTask struct {
	dst, split   string
	index, count int
}

func (p *partTask) dir() string { return filepath.Join(p.dst, PartsDir, p.split) }
func (p *partTask) path(suffix string) string {
	return filepath.Join(p.dir(), task.FileStem(p.index, p.count)+suffix)
}

// lock takes the task's own lock (tasks of one split run at once into one
// destination; two runs of one task do not). The caller holds the
// destination's lock shared (lockDirShared).
func (p *partTask) lock() (func(), error) {
	if err := os.MkdirAll(p.dir(), 0o755); err != nil {
		return nil, err
	}
	unlock, err := lockfile.Lock(p.path(".lock"))
	if errors.Is(err, lockfile.ErrLocked) {
		return nil, fmt.Errorf("%s: task %d of %d is being packed by another faster pack (%s is locked)", p.dst, p.index, p.count, p.path(".lock"))
	}
	return unlock, err
}

// readPartFile reads a part or progress manifest by the data-file rules:
// a regular file (a FIFO is refused, never waited on; /dev/zero is not
// read), of at most max bytes.
func readPartFile(path string, max int64) ([]byte, error) {
	f, size, err := source.OpenFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > max {
		return nil, fmt.Errorf("%s: %d bytes, above the %d-byte cap on a manifest", path, size, max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: grows past the %d-byte cap on a manifest while read", path, max)
	}
	return b, nil
}

// removeTemps deletes the temporary files a killed run of this task left:
// its own shards' and its part files', never another task's.
func (p *partTask) removeTemps(format string, n, first, last int) {
	var stems []string
	for k := first; k < last; k++ {
		name := FormatName(format, p.split, k, n)
		stems = append(stems, atomicfile.TempStem(name), atomicfile.TempStem(IndexName(name)))
	}
	removeStems(p.dst, stems)
	removeStems(p.dir(), []string{atomicfile.TempStem(filepath.Base(p.path(".progress.json"))), atomicfile.TempStem(filepath.Base(p.path(".json")))})
}

func removeStems(dir string, stems []string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		for _, s := range stems {
			if strings.HasPrefix(e.Name(), s) && atomicfile.IsTemp(e.Name()) {
				os.Remove(filepath.Join(dir, e.Name()))
				break
			}
		}
	}
}

func (p *partTask) loadProgress() (*Manifest, error) {
	if _, err := os.Lstat(p.path(".progress.json")); errors.Is(err, fs.ErrNotExist) {
		return &Manifest{Version: ManifestVersion, Format: FormatTFRecord, Splits: map[string]*Split{}}, nil
	}
	b, err := readPartFile(p.path(".progress.json"), MaxManifestSize)
	if err == nil {
		var m *Manifest
		if m, err = ParseManifest(b, p.path(".progress.json")); err == nil {
			return m, nil
		}
	}
	return nil, fmt.Errorf("task %d of %d's progress manifest: %w (remove it to pack the task from the start)", p.index, p.count, err)
}

func (p *partTask) saveProgress(m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(p.path(".progress.json"), append(b, '\n'), 0o644)
}

// done returns a result when this task's part is committed already for
// the same layout (the part is never rewritten), an error when it is
// committed for another, and neither when it is not there.
func (p *partTask) done(fp string, start time.Time) (*PackResult, error) {
	if _, err := os.Lstat(p.path(".json")); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	b, err := readPartFile(p.path(".json"), MaxManifestSize)
	if err != nil {
		return nil, fmt.Errorf("task %d of %d's part manifest: %w (remove it to pack the task again)", p.index, p.count, err)
	}
	pt, err := parsePart(b, p.path(".json"))
	if err != nil {
		return nil, err
	}
	if pt.Layout.Fingerprint != fp {
		return nil, fmt.Errorf("%s: task %d of %d is packed already from another source, order or shard count (a part manifest is never replaced): remove %s (and the split's parts) to pack it again", p.dst, p.index, p.count, p.path(".json"))
	}
	res := &PackResult{Split: p.split, Records: pt.Layout.Records, Bytes: pt.Layout.Bytes, Shards: len(pt.Layout.Shards), KeptShards: len(pt.Layout.Shards), SplitShards: pt.Layout.NumShards, SkipList: []Skip{}}
	for _, s := range pt.Layout.Shards {
		res.SkipList = append(res.SkipList, s.Skipped...)
	}
	res.Skipped = len(res.SkipList)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// merged returns a result when dst/manifest.json lists the split
// complete, from the same source and layout (fingerprint fp), with this
// task's shards intact: the split is merged already and the task has
// nothing to write (before: it packed its shards again, and a merge then
// named the other tasks "missing (never started)"). Otherwise nil: a
// manifest that cannot be read is the merge's to report.
func (p *partTask) merged(fp string, n, first, last int, start time.Time) *PackResult {
	m, err := LoadManifest(p.dst)
	if err != nil {
		return nil
	}
	sp := m.Splits[p.split]
	if sp == nil || !sp.Complete || sp.Fingerprint != fp || sp.NumShards != n || len(sp.Shards) != n {
		return nil
	}
	res := &PackResult{Split: p.split, Shards: last - first, KeptShards: last - first, SplitShards: n, Merged: true, SkipList: []Skip{}}
	for _, s := range sp.Shards[first:last] {
		if !shardIntact(p.dst, s) {
			return nil
		}
		res.Records += s.Records
		res.Bytes += s.Bytes
		res.SkipList = append(res.SkipList, s.Skipped...)
	}
	res.Skipped = len(res.SkipList)
	res.Seconds = time.Since(start).Seconds()
	return res
}

// commit writes the part manifest, create-only.
func (p *partTask) commit(format string, sp *Split, first, last int) error {
	layout := *sp
	layout.Shards = sp.Shards[first:last]
	b, err := json.MarshalIndent(&Part{
		Version: ManifestVersion, Format: format, Split: p.split,
		Task: p.index, Tasks: p.count, FirstShard: first, Layout: &layout,
	}, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteNew(p.path(".json"), append(b, '\n'), 0o644); err != nil {
		if errors.Is(err, atomicfile.ErrExists) {
			return fmt.Errorf("%s: task %d of %d committed its part meanwhile; this run's is discarded: %w", p.dst, p.index, p.count, err)
		}
		return err
	}
	return nil
}

// parsePart decodes a part manifest (name is used in errors) and checks
// it against what its task writes: a version of this build, task i of T
// with 0 <= i < T <= MaxTasks, a plain split name, a format, and exactly
// the shards TaskShards gives task i, in order, under the names a
// one-task pack gives them (before: a part listing another task's shards,
// or its own out of order, was merged).
func parsePart(b []byte, name string) (*Part, error) {
	var pt Part
	if err := json.Unmarshal(b, &pt); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if pt.Version != ManifestVersion || pt.Layout == nil || pt.Tasks < 1 || pt.Tasks > MaxTasks || pt.Task < 0 || pt.Task >= pt.Tasks {
		return nil, fmt.Errorf("%s: not a part manifest of this build (version %d, task %d of %d)", name, pt.Version, pt.Task, pt.Tasks)
	}
	if err := CheckSplitName(pt.Split); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if pt.Format != FormatTFRecord && pt.Format != FormatWDS {
		return nil, fmt.Errorf("%s: format %q: want %s or %s", name, pt.Format, FormatTFRecord, FormatWDS)
	}
	l := pt.Layout
	if l.NumShards < 0 || l.NumShards > maxPartShards {
		return nil, fmt.Errorf("%s: the split has %d shards, want 0 to %d", name, l.NumShards, maxPartShards)
	}
	if l.Records < 0 || l.Bytes < 0 {
		return nil, fmt.Errorf("%s: negative counts (%d records, %d bytes)", name, l.Records, l.Bytes)
	}
	first, last := TaskShards(pt.Task, pt.Tasks, l.NumShards)
	if pt.FirstShard != first || len(l.Shards) != last-first {
		return nil, fmt.Errorf("%s: lists %d shards from shard %d; task %d of %d writes shards %d..%d of %d", name, len(l.Shards), pt.FirstShard, pt.Task, pt.Tasks, first, last, l.NumShards)
	}
	for j, s := range l.Shards {
		want := FormatName(pt.Format, pt.Split, first+j, l.NumShards)
		if s.Name != want || s.Index != IndexName(want) {
			return nil, fmt.Errorf("%s: lists %q (index %q) in place of %s: another task's shards, or its own out of order", name, s.Name, s.Index, want)
		}
		if s.Records < 0 || s.Bytes < 0 {
			return nil, fmt.Errorf("%s: shard %s: negative counts (%d records, %d bytes)", name, s.Name, s.Records, s.Bytes)
		}
	}
	return &pt, nil
}

// IncompleteError is MergeParts's answer when tasks are not done: every
// one of them, named at once.
type IncompleteError struct {
	Dir, Split string
	Tasks      int
	Missing    []int          // no trace: never started (or ran against another destination)
	Incomplete []int          // started, no part manifest: killed, failed or still running
	Damaged    map[int]string // a part whose shards fail their checks, and why
	// Merged: manifest.json lists the split complete already (the parts
	// there are leftovers of a merged split's rerun, or of a new pack).
	Merged bool
}

func (e *IncompleteError) Error() string {
	var b strings.Builder
	bad := len(e.Missing) + len(e.Incomplete) + len(e.Damaged)
	fmt.Fprintf(&b, "%s: split %q: %d of %d tasks not done", e.Dir, e.Split, bad, e.Tasks)
	if len(e.Missing) > 0 {
		fmt.Fprintf(&b, "; missing (never started): %s", intRuns(e.Missing))
	}
	if len(e.Incomplete) > 0 {
		fmt.Fprintf(&b, "; incomplete (started, no part manifest: killed, failed or still running): %s", intRuns(e.Incomplete))
	}
	if len(e.Damaged) > 0 {
		keys := make([]int, 0, len(e.Damaged))
		for k := range e.Damaged {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "; damaged %d: %s (remove %s and rerun it)", k, e.Damaged[k], filepath.Join(e.Dir, PartsDir, e.Split, task.FileStem(k, e.Tasks)+".json"))
		}
	}
	if e.Merged {
		fmt.Fprintf(&b, "; manifest.json lists split %q complete already (merged before? then remove %s)", e.Split, filepath.Join(e.Dir, PartsDir, e.Split))
	}
	fmt.Fprintf(&b, "; rerun those tasks (--task i/%d, or the scheduler's indexes), then merge again", e.Tasks)
	return b.String()
}

// intRuns writes sorted numbers with runs of three or more as ranges:
// "0, 2, 5-99999" (a merge of 100,000 tasks with one done names the
// others in one line).
func intRuns(xs []int) string {
	var s []string
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		switch {
		case j-i >= 2:
			s = append(s, fmt.Sprintf("%d-%d", xs[i], xs[j]))
		case j > i:
			s = append(s, strconv.Itoa(xs[i]), strconv.Itoa(xs[j]))
		default:
			s = append(s, strconv.Itoa(xs[i]))
		}
		i = j + 1
	}
	return strings.Join(s, ", ")
}

// Rerun lists the tasks to run again, in order.
func (e *IncompleteError) Rerun() []int {
	r := append(append([]int{}, e.Missing...), e.Incomplete...)
	for k := range e.Damaged {
		r = append(r, k)
	}
	slices.Sort(r)
	return r
}

// MergeResult summarises a merge.
type MergeResult struct {
	Split   string  `json:"split"`
	Tasks   int     `json:"tasks"`
	Shards  int     `json:"shards"`
	Records int64   `json:"records"`
	Bytes   int64   `json:"bytes"`
	Skipped int     `json:"skipped"`
	Seconds float64 `json:"seconds"`
}

// partExts are the kinds of a task's files in a split's part folder.
var partExts = []string{".json", ".progress.json", ".lock"}

// UnmergedSplits lists the splits of dst with task parts waiting for a
// merge (a folder under dst/PartsDir holding a task's file), sorted: a
// reader of dst can say "not merged: run faster pack --merge" rather
// than serve the shards a one-task manifest does not list.
func UnmergedSplits(dst string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(dst, PartsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var splits []string
	for _, e := range ents {
		if !e.IsDir() || CheckSplitName(e.Name()) != nil {
			continue
		}
		files, err := os.ReadDir(filepath.Join(dst, PartsDir, e.Name()))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if _, _, _, ok, err := task.ParseFileName("", f.Name(), partExts...); ok || err != nil {
				splits = append(splits, e.Name())
				break
			}
		}
	}
	return splits, nil
}

// MergeParts checks every part of split under dst — each task's part
// manifest there, agreeing with the others on the layout, its shards
// tiling the split in order, every shard at its recorded size and sha256
// with an index listing its record count — and writes dst/manifest.json
// as a one-task pack of the same source writes it, then removes the
// task files it read from the split's part folder (and the folders, once
// empty). Tasks not done are all named at once in an *IncompleteError,
// and nothing is written. workers shards are hashed at once (0: one).
func MergeParts(ctx context.Context, dst, split string, workers int) (*MergeResult, error) {
	start := time.Now()
	if split == "" {
		split = "train"
	}
	if err := CheckSplitName(split); err != nil {
		return nil, err
	}
	dir := filepath.Join(dst, PartsDir, split)
	merged := func() bool {
		m, err := LoadManifest(dst)
		return err == nil && m.Splits[split] != nil && m.Splits[split].Complete
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		msg := fmt.Sprintf("%s: no task parts of split %q (%s is missing): pack with --task or under a scheduler first", dst, split, dir)
		if merged() {
			msg += "; manifest.json lists the split complete already (merged before?)"
		}
		return nil, errors.New(msg)
	}
	if err != nil {
		return nil, err
	}
	counts := map[int][]string{}
	started := map[int]bool{}
	committed := map[int]bool{}
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
		counts[n] = append(counts[n], e.Name())
		switch kind {
		case ".json":
			committed[i] = true
		default:
			started[i] = true
		}
	}
	if len(counts) == 0 {
		return nil, fmt.Errorf("%s: no task parts of split %q in %s", dst, split, dir)
	}
	if len(counts) > 1 {
		var s []string
		for n, names := range counts {
			s = append(s, fmt.Sprintf("%d tasks (%s)", n, strings.Join(names, ", ")))
		}
		slices.Sort(s)
		return nil, fmt.Errorf("%s: split %q was packed with different task counts: %s; keep one count: remove the others' files from %s", dst, split, strings.Join(s, "; "), dir)
	}
	var tasks int
	for n := range counts {
		tasks = n // 1..MaxTasks (partFileName)
	}
	ie := &IncompleteError{Dir: dst, Split: split, Tasks: tasks, Damaged: map[int]string{}}
	parts := make([]*Part, tasks)
	budget := int64(MaxManifestSize) // the parts together: one manifest's worth
	for i := range tasks {
		if !committed[i] {
			if started[i] {
				ie.Incomplete = append(ie.Incomplete, i)
			} else {
				ie.Missing = append(ie.Missing, i)
			}
			continue
		}
		p := filepath.Join(dir, task.FileStem(i, tasks)+".json")
		b, err := readPartFile(p, budget)
		if err != nil {
			ie.Damaged[i] = err.Error()
			continue
		}
		budget -= int64(len(b))
		pt, err := parsePart(b, p)
		if err != nil {
			ie.Damaged[i] = err.Error()
			continue
		}
		if pt.Task != i || pt.Tasks != tasks || pt.Split != split {
			ie.Damaged[i] = fmt.Sprintf("the part says task %d of %d of split %q", pt.Task, pt.Tasks, pt.Split)
			continue
		}
		parts[i] = pt
	}

	// The parts must describe one split: the first complete part is the
	// reference; one that differs is named with the field.
	var ref *Part
	for _, pt := range parts {
		if pt != nil {
			ref = pt
			break
		}
	}
	if ref != nil {
		for _, pt := range parts {
			if pt == nil {
				continue
			}
			if why := layoutDiffers(ref, pt); why != "" {
				return nil, fmt.Errorf("%s: split %q: task %d and task %d packed different layouts (%s): were they given the same SRC, --shards, --shuffle, --seed, --format and source files? Remove the wrong part and rerun it", dst, split, ref.Task, pt.Task, why)
			}
		}
	}

	// Check every committed part's shards: size, sha256, index count.
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(workers, 1))
	for i, pt := range parts {
		if pt == nil {
			continue
		}
		for _, s := range pt.Layout.Shards {
			g.Go(func() error {
				if gctx.Err() != nil {
					return gctx.Err()
				}
				if why := checkShard(dst, pt.Format, s); why != "" {
					mu.Lock()
					if ie.Damaged[i] == "" {
						ie.Damaged[i] = why
					}
					mu.Unlock()
				}
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(ie.Missing)+len(ie.Incomplete)+len(ie.Damaged) > 0 {
		ie.Merged = merged()
		return nil, ie
	}

	// Every part is there and sound: the split as a one-task pack writes it.
	sp := *ref.Layout
	sp.Shards = nil
	sp.Records, sp.Bytes = 0, 0
	res := &MergeResult{Split: split, Tasks: tasks}
	for _, pt := range parts {
		sp.Shards = append(sp.Shards, pt.Layout.Shards...)
		for _, s := range pt.Layout.Shards {
			sp.Records += s.Records
			sp.Bytes += s.Bytes
			res.Skipped += len(s.Skipped)
		}
	}
	if sp.Shards == nil {
		sp.Shards = []ShardInfo{}
	}
	sp.Complete = true
	unlock, err := lockDir(dst)
	if err != nil {
		return nil, err
	}
	defer unlock()
	m, err := LoadManifest(dst)
	if err != nil {
		return nil, err
	}
	if m.Format == "" || len(m.Splits) == 0 {
		m.Format = ref.Format
	}
	if m.Format != ref.Format {
		return nil, fmt.Errorf("%s: holds %s shards; the parts are %s", dst, m.Format, ref.Format)
	}
	m.Splits[split] = &sp
	if err := m.Save(dst); err != nil {
		return nil, err
	}
	// Only the task files read, and the folders once empty: never a file
	// or folder the merge did not make (before: the split's folder was
	// removed whole, and a split named ".." was DST itself).
	for _, f := range files {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	removeEmptyDir(dir)
	removeEmptyDir(filepath.Join(dst, PartsDir)) // when no other split's parts are left
	res.Shards, res.Records, res.Bytes = len(sp.Shards), sp.Records, sp.Bytes
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// removeEmptyDir removes dir if it is a folder (not a link to one) and
// empty.
func removeEmptyDir(dir string) {
	if st, err := os.Lstat(dir); err == nil && st.IsDir() {
		os.Remove(dir) // fails, leaving it, when something is in it
	}
}

func layoutDiffers(a, b *Part) string {
	x, y := a.Layout, b.Layout
	switch {
	case a.Format != b.Format:
		return fmt.Sprintf("format %s vs %s", a.Format, b.Format)
	case x.NumShards != y.NumShards:
		return fmt.Sprintf("%d vs %d shards", x.NumShards, y.NumShards)
	case x.Source != y.Source || x.SourceKind != y.SourceKind:
		return fmt.Sprintf("source %s %s vs %s %s", x.SourceKind, x.Source, y.SourceKind, y.Source)
	case x.Shuffle != y.Shuffle || x.Seed != y.Seed:
		return fmt.Sprintf("shuffle %v seed %d vs shuffle %v seed %d", x.Shuffle, x.Seed, y.Shuffle, y.Seed)
	case !slices.Equal(x.Classes, y.Classes):
		return "class lists differ"
	case x.Fingerprint != y.Fingerprint:
		return "fingerprints differ: the item lists differ"
	}
	return ""
}

// checkShard checks one shard of a part against its record: the file at
// its size and sha256, its index present and listing its record count.
func checkShard(dir, format string, s ShardInfo) string {
	if !s.Complete {
		return fmt.Sprintf("shard %s is not complete", s.Name)
	}
	f, _, err := source.OpenFile(filepath.Join(dir, s.Name)) // a FIFO or /dev/zero is refused, not read
	if err != nil {
		return fmt.Sprintf("shard %s: %v", s.Name, unwrapPath(err))
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return fmt.Sprintf("shard %s: %v", s.Name, unwrapPath(err))
	}
	if n != s.Bytes {
		return fmt.Sprintf("shard %s holds %d bytes, its part says %d", s.Name, n, s.Bytes)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != s.SHA256 {
		return fmt.Sprintf("shard %s: sha256 %s, its part says %s", s.Name, got, s.SHA256)
	}
	idx, _, err := source.OpenFile(filepath.Join(dir, s.Index))
	if err != nil {
		return fmt.Sprintf("index %s: %v", s.Index, unwrapPath(err))
	}
	defer idx.Close()
	var records int64
	if format == FormatWDS {
		line, err := bufio.NewReader(io.LimitReader(idx, 4096)).ReadString('\n') // "v1.x <records>\n": a header, not the whole file
		f := strings.Fields(line)
		if err != nil || len(f) != 2 || !strings.HasPrefix(f[0], "v1.") {
			return fmt.Sprintf("index %s: no wds2idx header", s.Index)
		}
		if records, err = strconv.ParseInt(f[1], 10, 64); err != nil {
			return fmt.Sprintf("index %s: header %q", s.Index, strings.TrimSpace(line))
		}
	} else {
		entries, err := tfrecord.ReadIndexFor(idx, s.Index, s.Name, s.Bytes)
		if err != nil {
			return err.Error()
		}
		records = int64(len(entries))
	}
	if records != s.Records {
		return fmt.Sprintf("index %s lists %d records, the part says %d", s.Index, records, s.Records)
	}
	return ""
}
