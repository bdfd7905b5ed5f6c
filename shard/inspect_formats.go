package shard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/faster-training/faster/source"
)

// InspectAny summarises a TFRecord file, a WebDataset tar shard (plain or
// gzip-compressed) or a Caffe LMDB, told by its bytes (FormatOf). For tar
// shards Features lists the member extensions (type "member") and Records
// counts samples; for LMDB it counts "encoded" and "raw" Datums. Offsets
// are real: a tar sample's first header (in the decompressed tar for a
// .tar.gz), an LMDB value's place in data.mdb. A tar whose samples have no
// image or no label is summarised, not called corrupt: that is what a
// loader of images and classes refuses, not damage to the tar.
func InspectAny(ctx context.Context, path string, first int) (*ShardSummary, error) {
	if source.IsLMDB(path) {
		return inspectLMDB(ctx, path, first)
	}
	format, err := FormatOf(path)
	if err != nil {
		return nil, err
	}
	switch {
	case format == "lmdb":
		return inspectLMDB(ctx, path, first)
	case format == "gzip":
		return inspectTarGz(ctx, path, first)
	case format == "tar", format == "" && source.IsTar(path) && !source.IsTarGz(path):
		return inspectTar(ctx, path, first)
	}
	return Inspect(ctx, path, first)
}

func inspectLMDB(ctx context.Context, path string, first int) (*ShardSummary, error) {
	db, err := source.OpenLMDB(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return inspectSource(ctx, path, db, first, db.ValueOffset, func(i int) map[string]bool {
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
}

// inspectTar summarises a WebDataset tar: its samples, their members, and
// the first samples' labels and image formats; damage (a bad header, a
// member cut short, a label that is no number, an image member that is no
// image, an index that disagrees with the tar) is noted.
func inspectTar(ctx context.Context, path string, first int) (*ShardSummary, error) {
	w, err := source.OpenWDS([]string{path})
	if err != nil {
		return nil, err
	}
	defer w.Close()
	s := &ShardSummary{Path: path, Features: []FeatureSummary{}, First: []RecordSummary{}}
	note := func(format string, a ...any) {
		if s.Error == "" {
			s.Error = fmt.Sprintf(format, a...)
		}
	}
	for _, d := range w.Damage() {
		note("%s: corrupt at offset %d: %s", d.Path, d.Offset, d.Reason)
	}
	for _, f := range w.IndexFaults() {
		note("%s: corrupt: %s (the tar was scanned instead)", f.Path, f.Reason)
	}
	feats := map[string]*FeatureSummary{}
	for i, it := range w.Items() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s.Records++
		s.Bytes += it.Size
		for _, e := range w.Members(i) {
			if feats[e] == nil {
				feats[e] = &FeatureSummary{Key: e, Type: "member"}
			}
			feats[e].Records++
		}
		if len(s.First) >= first {
			continue
		}
		_, off := w.Where(i)
		rs := RecordSummary{Offset: off, Size: it.Size, Filename: it.Key}
		if l, ok, damage := w.Label(i); ok {
			l64 := int64(l)
			rs.Label, rs.Class = &l64, className(w.Classes(), l)
		} else if damage != "" {
			note("%s: offset %d: key %q: corrupt: %s", path, off, it.Key, damage)
		}
		data, format, err := w.Image(i)
		switch {
		case err != nil:
			note("%v", err)
		case data != nil && format == "":
			note("%s: offset %d: key %q: corrupt: image member is not an image", path, off, it.Key)
		}
		rs.Format = format
		s.First = append(s.First, rs)
	}
	s.Features = sortedFeatures(feats)
	return s, nil
}

// inspectTarGz summarises a gzip-compressed WebDataset tar, read through:
// its samples and the first ones' keys, labels and offsets (in the
// decompressed tar); damage to the gzip stream or the tar is noted.
func inspectTarGz(ctx context.Context, path string, first int) (*ShardSummary, error) {
	if err := gzipHoldsTar(path); err != nil {
		return nil, err
	}
	t, err := source.OpenTarGz([]string{path}, source.TarGzOptions{Skip: true})
	if err != nil {
		return nil, err
	}
	r, err := t.Open(ctx, 0)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	s := &ShardSummary{Path: path, Features: []FeatureSummary{}, First: []RecordSummary{}}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if rec.Bad != nil && !errors.Is(rec.Bad, source.ErrNoLabel) && !errors.Is(rec.Bad, source.ErrNoImageMember) {
			if s.Error == "" {
				s.Error = rec.Bad.Error()
			}
			if rec.Key == "" {
				continue // the stream's damage, not a sample
			}
		}
		s.Records++
		s.Bytes += int64(len(rec.Data))
		if len(s.First) < first {
			rs := RecordSummary{Offset: rec.Offset, Size: int64(len(rec.Data)), Filename: rec.Key, Format: source.Sniff(rec.Data)}
			if rec.Bad == nil {
				l := int64(rec.Label)
				rs.Label, rs.Class = &l, strconv.Itoa(rec.Label)
			}
			s.First = append(s.First, rs)
		}
	}
	return s, nil
}

// sortedFeatures lists feats by key.
func sortedFeatures(feats map[string]*FeatureSummary) []FeatureSummary {
	out := []FeatureSummary{}
	for _, f := range feats {
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b FeatureSummary) int { return strings.Compare(a.Key, b.Key) })
	return out
}

func inspectSource(ctx context.Context, path string, src interface {
	Items() []source.Item
	Classes() []string
	Load(int) (source.Sample, error)
}, first int, offset func(i int) int64, features func(i int) map[string]bool) (*ShardSummary, error) {
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
			rs := RecordSummary{Offset: offset(i), Size: it.Size, Filename: it.Key}
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
