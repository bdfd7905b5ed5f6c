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
// as a one-task pack would, then removes DST/.faster-parts/<split>.

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
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/faster-training/faster/internal/atomicfile"
	"github.com/faster-training/faster/internal/lockfile"
	"github.com/faster-training/faster/tfrecord"
)

// PartsDir is the folder under a destination that holds the tasks' part
// manifests until the merge.
const PartsDir = ".faster-parts"

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

func partStem(i, n int) string { return fmt.Sprintf("task-%05d-of-%05d", i, n) }

func (p *partTask) dir() string { return filepath.Join(p.dst, PartsDir, p.split) }
func (p *partTask) path(suffix string) string {
	return filepath.Join(p.dir(), partStem(p.index, p.count)+suffix)
}

// lock takes the task's own lock (tasks of one split run at once into one
// destination; two runs of one task do not).
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
	b, err := os.ReadFile(p.path(".progress.json"))
	if err != nil {
		return nil, err
	}
	return ParseManifest(b, p.path(".progress.json"))
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
	b, err := os.ReadFile(p.path(".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	pt, err := parsePart(b, p.path(".json"))
	if err != nil {
		return nil, err
	}
	if pt.Layout.Fingerprint != fp {
		return nil, fmt.Errorf("%s: task %d of %d is packed already from another source, order or shard count (a part manifest is never replaced): remove %s (and the split's parts) to pack it again", p.dst, p.index, p.count, p.path(".json"))
	}
	res := &PackResult{Split: p.split, Records: pt.Layout.Records, Bytes: pt.Layout.Bytes, Shards: len(pt.Layout.Shards), KeptShards: len(pt.Layout.Shards), SkipList: []Skip{}}
	for _, s := range pt.Layout.Shards {
		res.SkipList = append(res.SkipList, s.Skipped...)
	}
	res.Skipped = len(res.SkipList)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
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

func parsePart(b []byte, name string) (*Part, error) {
	var pt Part
	if err := json.Unmarshal(b, &pt); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if pt.Version != ManifestVersion || pt.Layout == nil || pt.Tasks < 1 || pt.Task < 0 || pt.Task >= pt.Tasks {
		return nil, fmt.Errorf("%s: not a part manifest of this build (version %d, task %d of %d)", name, pt.Version, pt.Task, pt.Tasks)
	}
	// The shard names are checked as a manifest's are.
	probe := &Manifest{Version: ManifestVersion, Format: pt.Format, Splits: map[string]*Split{pt.Split: {NumShards: len(pt.Layout.Shards), Shards: pt.Layout.Shards}}}
	pb, _ := json.Marshal(probe)
	if _, err := ParseManifest(pb, name); err != nil {
		return nil, err
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
}

func (e *IncompleteError) Error() string {
	var b strings.Builder
	bad := len(e.Missing) + len(e.Incomplete) + len(e.Damaged)
	fmt.Fprintf(&b, "%s: split %q: %d of %d tasks not done", e.Dir, e.Split, bad, e.Tasks)
	list := func(xs []int) string {
		s := make([]string, len(xs))
		for i, x := range xs {
			s[i] = strconv.Itoa(x)
		}
		return strings.Join(s, ", ")
	}
	if len(e.Missing) > 0 {
		fmt.Fprintf(&b, "; missing (never started): %s", list(e.Missing))
	}
	if len(e.Incomplete) > 0 {
		fmt.Fprintf(&b, "; incomplete (started, no part manifest: killed, failed or still running): %s", list(e.Incomplete))
	}
	if len(e.Damaged) > 0 {
		keys := make([]int, 0, len(e.Damaged))
		for k := range e.Damaged {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "; damaged %d: %s (remove %s and rerun it)", k, e.Damaged[k], filepath.Join(e.Dir, PartsDir, e.Split, partStem(k, e.Tasks)+".json"))
		}
	}
	fmt.Fprintf(&b, "; rerun those tasks (--task i/%d, or the scheduler's indexes), then merge again", e.Tasks)
	return b.String()
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

var partName = regexp.MustCompile(`^task-(\d{5,})-of-(\d{5,})(\.json|\.progress\.json|\.lock)$`)

// MergeParts checks every part of split under dst — each task's part
// manifest there, agreeing with the others on the layout, its shards
// tiling the split in order, every shard at its recorded size and sha256
// with an index listing its record count — and writes dst/manifest.json
// as a one-task pack of the same source writes it, then removes the
// split's part folder. Tasks not done are all named at once in an
// *IncompleteError, and nothing is written. workers shards are hashed at
// once (0: one).
func MergeParts(ctx context.Context, dst, split string, workers int) (*MergeResult, error) {
	start := time.Now()
	if split == "" {
		split = "train"
	}
	if strings.ContainsAny(split, `/\`) {
		return nil, fmt.Errorf("split name %q must not contain a path separator", split)
	}
	dir := filepath.Join(dst, PartsDir, split)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		msg := fmt.Sprintf("%s: no task parts of split %q (%s is missing): pack with --task or under a scheduler first", dst, split, dir)
		if m, err := LoadManifest(dst); err == nil && m.Splits[split] != nil && m.Splits[split].Complete {
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
	for _, e := range ents {
		mm := partName.FindStringSubmatch(e.Name())
		if mm == nil {
			continue
		}
		i, _ := strconv.Atoi(mm[1])
		n, _ := strconv.Atoi(mm[2])
		counts[n] = append(counts[n], e.Name())
		switch mm[3] {
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
		tasks = n
	}
	ie := &IncompleteError{Dir: dst, Split: split, Tasks: tasks, Damaged: map[int]string{}}
	parts := make([]*Part, tasks)
	for i := range tasks {
		if !committed[i] {
			if started[i] {
				ie.Incomplete = append(ie.Incomplete, i)
			} else {
				ie.Missing = append(ie.Missing, i)
			}
			continue
		}
		p := filepath.Join(dir, partStem(i, tasks)+".json")
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
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
		for i, pt := range parts {
			if pt == nil {
				continue
			}
			if why := layoutDiffers(ref, pt); why != "" {
				return nil, fmt.Errorf("%s: split %q: task %d and task %d packed different layouts (%s): were they given the same SRC, --shards, --shuffle, --seed, --format and source files? Remove the wrong part and rerun it", dst, split, ref.Task, pt.Task, why)
			}
			first, last := TaskShards(i, tasks, ref.Layout.NumShards)
			if pt.FirstShard != first || len(pt.Layout.Shards) != last-first {
				ie.Damaged[i] = fmt.Sprintf("lists shards %d..%d, want %d..%d", pt.FirstShard, pt.FirstShard+len(pt.Layout.Shards), first, last)
				parts[i] = nil
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
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	os.Remove(filepath.Join(dst, PartsDir)) // when no other split's parts are left
	res.Shards, res.Records, res.Bytes = len(sp.Shards), sp.Records, sp.Bytes
	res.Seconds = time.Since(start).Seconds()
	return res, nil
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
	f, err := os.Open(filepath.Join(dir, s.Name))
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
	idx, err := os.Open(filepath.Join(dir, s.Index))
	if err != nil {
		return fmt.Sprintf("index %s: %v", s.Index, unwrapPath(err))
	}
	defer idx.Close()
	var records int64
	if format == FormatWDS {
		line, err := bufio.NewReader(idx).ReadString('\n')
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
