package downscale

import (
	"fmt"
	"io"

	"github.com/faster-training/faster/internal/task"
)

// Report is a run as `faster resize` reports it: the result, the task of
// a task run (nil for one machine), where from and to, and the rate read;
// --json prints it as it is.
type Report struct {
	*Result
	Task     *task.Task `json:"task,omitempty"`
	Source   string     `json:"source"`
	Dest     string     `json:"dest"`
	MaxSize  int        `json:"max_size"`
	MBPerSec float64    `json:"mb_per_sec"`
}

// NewReport is the report of res, resized by task t (nil: one machine)
// from src into dst with maxSize.
func NewReport(res *Result, t *task.Task, src, dst string, maxSize int) Report {
	mbps := 0.0
	if res.Seconds > 0 {
		mbps = float64(res.BytesIn) / res.Seconds / 1e6
	}
	return Report{res, t, src, dst, maxSize, mbps}
}

// WriteText writes the report as lines for a person: the counts, what was
// read and written at what rate, and every file that failed.
func (r Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "resized %s into %s (max size %d): %d resized, %d copied, %d skipped (up to date), %d failed",
		r.Source, r.Dest, r.MaxSize, r.Resized, r.Copied, r.Skipped, r.Failed)
	if r.OtherCopied+r.OtherSkipped > 0 {
		fmt.Fprintf(w, "; other files: %d copied, %d skipped", r.OtherCopied, r.OtherSkipped)
	}
	fmt.Fprintf(w, "\n%.1f MB in, %.1f MB out, %.1f s, %.0f images/s\n",
		float64(r.BytesIn)/1e6, float64(r.BytesOut)/1e6, r.Seconds, r.ImagesPerSec)
	if r.Failed > 0 {
		fmt.Fprintf(w, "failed %d files:\n", r.Failed)
		for _, f := range r.Failures {
			fmt.Fprintf(w, "  %s: %s\n", f.Path, f.Reason)
		}
	}
}

// MergeReport is a merge of task runs as `faster resize --merge` reports
// it; --json prints it as it is.
type MergeReport struct {
	*Result
	Dest string `json:"dest"`
}

// WriteText writes the report as lines for a person: the counts and every
// file that failed.
func (r MergeReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "merged the resize tasks into %s: %d resized, %d copied, %d skipped (up to date), %d failed\n",
		r.Dest, r.Resized, r.Copied, r.Skipped, r.Failed)
	for _, f := range r.Failures {
		fmt.Fprintf(w, "  %s: %s\n", f.Path, f.Reason)
	}
}
