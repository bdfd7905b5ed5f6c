package shard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/tfexample"
	"github.com/faster-training/faster/tfrecord"
)

// FeatureSummary describes one feature key seen in a shard.
type FeatureSummary struct {
	Key     string `json:"key"`
	Type    string `json:"type"`    // "bytes", "int64", "float", or "mixed"
	Records int64  `json:"records"` // records holding the key
}

// RecordSummary describes one of the first records of a shard.
type RecordSummary struct {
	Offset   int64  `json:"offset"`
	Size     int64  `json:"size"`
	Label    *int64 `json:"label,omitempty"`
	Class    string `json:"class,omitempty"`
	Filename string `json:"filename,omitempty"`
	Format   string `json:"format,omitempty"`
	Width    int64  `json:"width,omitempty"`
	Height   int64  `json:"height,omitempty"`
}

// ShardSummary is what Inspect reports of one TFRecord file.
type ShardSummary struct {
	Path        string           `json:"path"`
	Records     int64            `json:"records"`
	Bytes       int64            `json:"bytes"`
	NotExamples int64            `json:"not_examples"` // records that are not tf.train.Example
	Features    []FeatureSummary `json:"features"`
	First       []RecordSummary  `json:"first"`
	Error       string           `json:"error,omitempty"` // corruption that stopped the scan
}

// Inspect scans a TFRecord file (ours or any other tool's) and summarises
// it: record count, the feature keys with their types and how many records
// hold each, and the labels and filenames of the first `first` records.
func Inspect(ctx context.Context, path string, first int) (*ShardSummary, error) {
	f, _, err := source.OpenFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := &ShardSummary{Path: path, Features: []FeatureSummary{}, First: []RecordSummary{}}
	feats := map[string]*FeatureSummary{}
	r := tfrecord.NewReader(f, tfrecord.WithName(path))
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		off := r.Offset()
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if !errors.Is(err, tfrecord.ErrCorrupt) {
				return nil, err
			}
			s.Error = err.Error()
			break
		}
		s.Records++
		s.Bytes = r.Offset()
		ex, err := tfexample.Unmarshal(rec)
		if err != nil {
			s.NotExamples++
			continue
		}
		for k, v := range ex.Features {
			fs := feats[k]
			if fs == nil {
				fs = &FeatureSummary{Key: k, Type: v.Kind.String()}
				feats[k] = fs
			} else if fs.Type != v.Kind.String() {
				fs.Type = "mixed"
			}
			fs.Records++
		}
		if len(s.First) < first {
			rs := RecordSummary{Offset: off, Size: int64(len(rec)) + tfrecord.FrameSize}
			if l, ok := ex.Int64(KeyLabel); ok {
				rs.Label = &l
			}
			if b, ok := ex.Bytes(KeyClassText); ok {
				rs.Class = string(b)
			}
			if b, ok := ex.Bytes(KeyFilename); ok {
				rs.Filename = string(b)
			}
			if b, ok := ex.Bytes(KeyFormat); ok {
				rs.Format = string(b)
			}
			rs.Width, _ = ex.Int64(KeyWidth)
			rs.Height, _ = ex.Int64(KeyHeight)
			s.First = append(s.First, rs)
		}
	}
	for _, fs := range feats {
		s.Features = append(s.Features, *fs)
	}
	slices.SortFunc(s.Features, func(a, b FeatureSummary) int {
		if a.Key < b.Key {
			return -1
		}
		if a.Key > b.Key {
			return 1
		}
		return 0
	})
	return s, nil
}

// String renders a summary as text.
func (s *ShardSummary) String() string {
	out := fmt.Sprintf("%s: %d records, %d bytes", s.Path, s.Records, s.Bytes)
	if s.NotExamples > 0 {
		out += fmt.Sprintf(", %d not tf.train.Example", s.NotExamples)
	}
	out += "\n"
	if s.Error != "" {
		out += "  stopped: " + s.Error + "\n"
	}
	for _, f := range s.Features {
		out += fmt.Sprintf("  %-24s %-6s in %d records\n", f.Key, f.Type, f.Records)
	}
	for _, r := range s.First {
		label := "-"
		if r.Label != nil {
			label = fmt.Sprint(*r.Label)
		}
		out += fmt.Sprintf("  @%-10d label %-4s %-14q %s", r.Offset, label, r.Class, r.Filename)
		if r.Width > 0 {
			out += fmt.Sprintf(" (%s %dx%d)", r.Format, r.Width, r.Height)
		}
		out += "\n"
	}
	return out
}
