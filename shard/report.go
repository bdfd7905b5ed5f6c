package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/faster-training/faster/internal/task"
	"github.com/faster-training/faster/source"
)

// PackReport is a pack as `faster pack` reports it: the result, the task
// of a task pack (nil for a one-machine pack), where from and to, and its
// rates; --json prints it as it is.
type PackReport struct {
	*PackResult
	Task          *task.Task `json:"task,omitempty"`
	Source        string     `json:"source"`
	SourceKind    string     `json:"source_kind"`
	Dest          string     `json:"dest"`
	RecordsPerSec float64    `json:"records_per_sec"`
	MBPerSec      float64    `json:"mb_per_sec"`
}

// NewPackReport is the report of res, packed by task t (nil: one
// machine) from src, a source of kind, into dst.
func NewPackReport(res *PackResult, t *task.Task, src, kind, dst string) PackReport {
	return PackReport{res, t, src, kind, dst, float64(res.Records) / max(res.Seconds, 1e-9), mbPerSec(res.Bytes, res.Seconds)}
}

// WriteText writes the report as lines for a person: a task's part
// committed (or nothing to do), the records and shards written, and the
// files skipped.
func (r PackReport) WriteText(w io.Writer) {
	t := r.Task
	if t != nil && r.Merged {
		fmt.Fprintf(w, "%s: split %q is merged already in %s (this task's %d of its %d shards there, intact, %d records): nothing to do\n",
			t, r.Split, filepath.Join(r.Dest, ManifestName), r.Shards, r.SplitShards, r.Records)
		return
	}
	if t != nil && r.Shards == 0 {
		fmt.Fprintf(w, "%s: no shards of its own: the split has %d shards, fewer than the %d tasks; its empty part is committed; run \"faster pack --merge %s\" once every task is done\n", t, r.SplitShards, t.Count, r.Dest)
		return
	}
	if t != nil {
		fmt.Fprintf(w, "%s: part committed; run \"faster pack --merge %s\" once every task is done\n", t, r.Dest)
	}
	fmt.Fprintf(w, "packed %s (%s) into %s: %d records in %d shards (%d kept from an earlier run), %.1f MB, %.1f s, %.0f records/s\n",
		r.Source, r.SourceKind, r.Dest, r.Records, r.Shards, r.KeptShards, float64(r.Bytes)/1e6, r.Seconds, float64(r.Records)/max(r.Seconds, 1e-9))
	if r.Skipped > 0 {
		fmt.Fprintf(w, "skipped %d files:\n", r.Skipped)
		for _, s := range r.SkipList {
			fmt.Fprintf(w, "  %s: %s\n", s.Path, s.Reason)
		}
	}
}

// MergeReport is a merge as `faster pack --merge` reports it; --json
// prints it as it is.
type MergeReport struct {
	*MergeResult
	Dest string `json:"dest"`
}

// WriteText writes the report as a line for a person.
func (r MergeReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "merged %d tasks of %s into %s: %d records in %d shards, %.1f MB, %d files skipped by the tasks, %.1f s\n",
		r.Tasks, r.Split, r.Dest, r.Records, r.Shards, float64(r.Bytes)/1e6, r.Skipped, r.Seconds)
}

// MarshalJSON writes the tasks not done as `faster pack --merge --json`
// reports them: every list present (empty, not null), and which tasks to
// rerun.
func (e *IncompleteError) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Split      string         `json:"split"`
		Tasks      int            `json:"tasks"`
		Missing    []int          `json:"missing"`
		Incomplete []int          `json:"incomplete"`
		Damaged    map[int]string `json:"damaged"`
		Rerun      []int          `json:"rerun"`
		Merged     bool           `json:"merged_before"` // manifest.json lists the split complete already
	}{e.Split, e.Tasks, nonNil(e.Missing), nonNil(e.Incomplete), e.Damaged, e.Rerun(), e.Merged})
}

func nonNil(x []int) []int {
	if x == nil {
		return []int{}
	}
	return x
}

// VerifyJSON is a verification as `faster verify --json` reports it.
type VerifyJSON struct {
	OK bool `json:"ok"`
	*VerifyReport
	Skipped  int     `json:"skipped"`
	MBPerSec float64 `json:"mb_per_sec"`
}

// JSON is the report as `faster verify --json` prints it.
func (r *VerifyReport) JSON() VerifyJSON {
	return VerifyJSON{r.OK(), r, 0, mbPerSec(r.Bytes, r.Seconds)}
}

// WriteText writes the report as lines for a person: each problem, then
// the verdict with what was checked.
func (r *VerifyReport) WriteText(w io.Writer) {
	for _, p := range r.Problems {
		fmt.Fprintf(w, "BAD %s\n", p)
	}
	status := "OK"
	if !r.OK() {
		status = "FAILED"
	}
	fmt.Fprintf(w, "%s: %d shards, %d records, %.1f MB checked in %.2f s (%.0f MB/s), %d problems\n",
		status, r.Files, r.Records, float64(r.Bytes)/1e6, r.Seconds, mbPerSec(r.Bytes, r.Seconds), len(r.Problems))
}

// mbPerSec is bytes in seconds as MB/s (0 for no time).
func mbPerSec(bytes int64, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return float64(bytes) / seconds / 1e6
}

// InspectReport is what `faster inspect` reports of its files: each
// file's summary and the totals; --json prints it as it is.
type InspectReport struct {
	Records int64           `json:"records"`
	Shards  int             `json:"shards"`
	Bytes   int64           `json:"bytes"`
	Files   []*ShardSummary `json:"files"`
}

// InspectPaths summarises (InspectAny) every file of paths in order: a
// file, an LMDB directory, or a directory's data files told by their
// bytes (shards named train-00000-of-01024 too). Each summary goes to
// each as it is made; a path that is not there, or a directory without
// data files, is an error before any file is read.
func InspectPaths(ctx context.Context, paths []string, first int, each func(*ShardSummary)) (*InspectReport, error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() || source.IsLMDB(p) {
			files = append(files, p)
			continue
		}
		m, err := DataFiles(p)
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%s: no TFRecord or tar files, not an LMDB", p)
		}
		files = append(files, m...)
	}
	rep := &InspectReport{}
	for _, f := range files {
		s, err := InspectAny(ctx, f, first)
		if err != nil {
			return nil, err
		}
		each(s)
		rep.Files = append(rep.Files, s)
		rep.Records += s.Records
		rep.Bytes += s.Bytes
	}
	rep.Shards = len(rep.Files)
	return rep, nil
}
