package downscale

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/faster-training/faster/internal/task"
)

// TestReportText checks the lines `faster resize` and `faster resize
// --merge` print without --json, and the JSON's task and rate (moved here
// from cmd/faster, whose resize tests run them end to end).
func TestReportText(t *testing.T) {
	res := &Result{Resized: 2, Copied: 1, Skipped: 3, Failed: 1, OtherCopied: 1, BytesIn: 4e6, BytesOut: 1e6, Seconds: 2, ImagesPerSec: 1.5,
		Failures: []Failure{{Path: "a/b.jpg", Reason: "corrupt"}}}
	var b bytes.Buffer
	NewReport(res, nil, "src", "dst", 64).WriteText(&b)
	want := "resized src into dst (max size 64): 2 resized, 1 copied, 3 skipped (up to date), 1 failed; other files: 1 copied, 0 skipped\n" +
		"4.0 MB in, 1.0 MB out, 2.0 s, 2 images/s\nfailed 1 files:\n  a/b.jpg: corrupt\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
	r := NewReport(res, &task.Task{Index: 0, Count: 2, Source: "--task"}, "src", "dst", 64)
	js, _ := json.Marshal(r)
	if r.MBPerSec != 2 || !bytes.Contains(js, []byte(`"task":{"index":0,"count":2,"source":"--task"}`)) || !bytes.Contains(js, []byte(`"max_size":64`)) {
		t.Errorf("MB/s %g, JSON %s", r.MBPerSec, js)
	}
	if r := NewReport(&Result{}, nil, "s", "d", 1); r.MBPerSec != 0 {
		t.Errorf("no time: %g MB/s, want 0", r.MBPerSec)
	}
	b.Reset()
	MergeReport{res, "dst"}.WriteText(&b)
	want = "merged the resize tasks into dst: 2 resized, 1 copied, 3 skipped (up to date), 1 failed\n  a/b.jpg: corrupt\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}
