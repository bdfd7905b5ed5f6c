package shard

import (
	"context"
	"fmt"
	"slices"

	"github.com/faster-training/faster/source"
)

// InspectAny summarises a TFRecord file, a WebDataset tar shard or a Caffe
// LMDB, by the path's kind. For tar shards Features lists the member
// extensions (type "member") and Records counts samples; for LMDB it
// counts "encoded" and "raw" Datums.
func InspectAny(ctx context.Context, path string, first int) (*ShardSummary, error) {
	switch {
	case source.IsLMDB(path):
		db, err := source.OpenLMDB(path)
		if err != nil {
			return nil, err
		}
		defer db.Close()
		return inspectSource(ctx, path, db, first, func(i int) map[string]bool {
			v, err := db.Raw(i)
			if err != nil {
				return nil
			}
			d, err := source.DecodeDatum(v)
			if err != nil {
				return map[string]bool{"not-datum": true}
			}
			if d.Encoded {
				return map[string]bool{"encoded": true}
			}
			return map[string]bool{"raw": true}
		})
	case source.IsTar(path):
		w, err := source.OpenWDS([]string{path})
		if err != nil {
			return nil, err
		}
		defer w.Close()
		s, err := inspectSource(ctx, path, w, first, func(i int) map[string]bool {
			m := map[string]bool{}
			for _, e := range w.Members(i) {
				m[e] = true
			}
			return m
		})
		if err == nil && len(w.Damage()) > 0 {
			d := w.Damage()[0]
			s.Error = fmt.Sprintf("%s: corrupt at offset %d: %s", d.Path, d.Offset, d.Reason)
		}
		return s, err
	}
	return Inspect(ctx, path, first)
}

func inspectSource(ctx context.Context, path string, src interface {
	Items() []source.Item
	Classes() []string
	Load(int) (source.Sample, error)
}, first int, features func(i int) map[string]bool) (*ShardSummary, error) {
	s := &ShardSummary{Path: path, Features: []FeatureSummary{}, First: []RecordSummary{}}
	feats := map[string]*FeatureSummary{}
	for i, it := range src.Items() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s.Records++
		s.Bytes += it.Size
		for k := range features(i) {
			if feats[k] == nil {
				feats[k] = &FeatureSummary{Key: k, Type: "member"}
			}
			feats[k].Records++
		}
		if len(s.First) < first {
			rs := RecordSummary{Offset: -1, Size: it.Size, Filename: it.Key}
			if smp, err := src.Load(i); err == nil {
				l := int64(smp.Label)
				rs.Label, rs.Format = &l, smp.Format
				rs.Class = className(src.Classes(), smp.Label)
				rs.Width, rs.Height = int64(smp.Width), int64(smp.Height)
			} else if s.Error == "" {
				s.Error = err.Error()
			}
			s.First = append(s.First, rs)
		}
	}
	for _, f := range feats {
		s.Features = append(s.Features, *f)
	}
	slices.SortFunc(s.Features, func(a, b FeatureSummary) int {
		switch {
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
	return s, nil
}
