package shard

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/internal/task"
)

// TestPackReportText checks the lines `faster pack` prints without --json
// (moved here from cmd/faster, whose pack tests run them end to end): one
// machine with its skipped files, and a task's three outcomes.
func TestPackReportText(t *testing.T) {
	res := &PackResult{Split: "train", Records: 10, Shards: 2, KeptShards: 1, Bytes: 3e6, Seconds: 2, Skipped: 1,
		SkipList: []Skip{{Path: "a/x.txt", Reason: "not an image"}}, SplitShards: 4}
	tk := &task.Task{Index: 1, Count: 2, Source: "--task"}
	for _, c := range []struct {
		t    *task.Task
		res  PackResult
		want string
	}{
		{nil, *res, "packed src (imagefolder) into dst: 10 records in 2 shards (1 kept from an earlier run), 3.0 MB, 2.0 s, 5 records/s\nskipped 1 files:\n  a/x.txt: not an image\n"},
		{tk, PackResult{Split: "train", Records: 4, Shards: 1, SplitShards: 2, Seconds: 1},
			"task 1/2 (from --task): part committed; run \"faster pack --merge dst\" once every task is done\npacked src (imagefolder) into dst: 4 records in 1 shards (0 kept from an earlier run), 0.0 MB, 1.0 s, 4 records/s\n"},
		{tk, PackResult{Split: "train", SplitShards: 1},
			"task 1/2 (from --task): no shards of its own: the split has 1 shards, fewer than the 2 tasks; its empty part is committed; run \"faster pack --merge dst\" once every task is done\n"},
		{tk, PackResult{Split: "train", Merged: true, Shards: 1, SplitShards: 2, Records: 5},
			"task 1/2 (from --task): split \"train\" is merged already in " + filepath.Join("dst", ManifestName) + " (this task's 1 of its 2 shards there, intact, 5 records): nothing to do\n"},
	} {
		var b bytes.Buffer
		NewPackReport(&c.res, c.t, "src", "imagefolder", "dst").WriteText(&b)
		if b.String() != c.want {
			t.Errorf("got\n%q\nwant\n%q", b.String(), c.want)
		}
	}
	r := NewPackReport(res, nil, "src", "imagefolder", "dst")
	if r.RecordsPerSec != 5 || r.MBPerSec != 1.5 {
		t.Errorf("rates %g records/s, %g MB/s; want 5, 1.5", r.RecordsPerSec, r.MBPerSec)
	}
	js, _ := json.Marshal(r)
	if bytes.Contains(js, []byte(`"task"`)) || !bytes.Contains(js, []byte(`"source_kind":"imagefolder"`)) {
		t.Errorf("one machine's JSON: %s", js)
	}
}

// TestMergeReportJSON checks --merge's reports: the tasks not done as
// JSON with every list present (empty, not null) and the tasks to rerun,
// and a merge's line.
func TestMergeReportJSON(t *testing.T) {
	e := &IncompleteError{Split: "train", Tasks: 3, Incomplete: []int{2}}
	js, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"split":"train","tasks":3,"missing":[],"incomplete":[2],"damaged":null,"rerun":[2],"merged_before":false}`
	if string(js) != want {
		t.Errorf("got %s, want %s", js, want)
	}
	var b bytes.Buffer
	MergeReport{&MergeResult{Split: "train", Tasks: 2, Shards: 4, Records: 8, Bytes: 2e6, Skipped: 1, Seconds: 0.5}, "dst"}.WriteText(&b)
	if want := "merged 2 tasks of train into dst: 8 records in 4 shards, 2.0 MB, 1 files skipped by the tasks, 0.5 s\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

// TestVerifyReportText checks verify's verdict lines and JSON.
func TestVerifyReportText(t *testing.T) {
	r := &VerifyReport{Files: 2, Records: 9, Bytes: 4e6, Seconds: 2, Problems: []Problem{{Path: "a.tfrecord", Offset: 12, Reason: "bad CRC"}}}
	var b bytes.Buffer
	r.WriteText(&b)
	lines := strings.Split(b.String(), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "BAD ") || !strings.Contains(lines[0], "a.tfrecord") ||
		lines[1] != "FAILED: 2 shards, 9 records, 4.0 MB checked in 2.00 s (2 MB/s), 1 problems" {
		t.Errorf("got %q", b.String())
	}
	if j := r.JSON(); j.OK || j.MBPerSec != 2 || j.VerifyReport != r {
		t.Errorf("JSON %+v", j)
	}
	b.Reset()
	(&VerifyReport{}).WriteText(&b)
	if want := "OK: 0 shards, 0 records, 0.0 MB checked in 0.00 s (0 MB/s), 0 problems\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

// TestInspectPaths checks inspect's files: a packed directory's shards in
// order, each summary handed on as made, the totals; a missing path and a
// directory without data files are errors before any file is read.
func TestInspectPaths(t *testing.T) {
	_, dst := packFolder(t, 3)
	var seen int
	rep, err := InspectPaths(context.Background(), []string{dst}, 2, func(*ShardSummary) { seen++ })
	if err != nil {
		t.Fatal(err)
	}
	if seen != 2 || rep.Shards != 2 || rep.Records != 6 || len(rep.Files) != 2 || rep.Bytes != rep.Files[0].Bytes+rep.Files[1].Bytes {
		t.Errorf("%d seen, report %+v", seen, rep)
	}
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "notes.txt"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(empty, "nothing"), empty} {
		seen = 0
		if _, err := InspectPaths(context.Background(), []string{dst, p}, 2, func(*ShardSummary) { seen++ }); err == nil || seen != 0 {
			t.Errorf("%s: %v after %d files, want an error before any", p, err, seen)
		}
	}
}
