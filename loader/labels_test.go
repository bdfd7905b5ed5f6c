package loader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/tfexample"
	"github.com/faster-training/faster/tfrecord"
)

// tfRecord is one record of a TensorFlow-style ImageNet shard; label < 0
// leaves image/class/label out.
type tfRecord struct {
	name  string
	label int64
}

// writeTFShard writes records as build_imagenet_data.py does — its keys
// (image/encoded, image/class/label counting from 1, image/class/synset,
// image/class/text, image/filename, image/format, sizes, colorspace) —
// with tfrecord and tfexample, plus an .idx index; it returns the shard's
// path and each record's byte offset.
func writeTFShard(t *testing.T, recs []tfRecord) (string, []int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "train-00000-of-00001")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := tfrecord.NewWriter(f)
	var offs []int64
	var idx []tfrecord.IndexEntry
	for i, r := range recs {
		img := image.NewRGBA(image.Rect(0, 0, 20, 16))
		for y := range 16 {
			for x := range 20 {
				img.Set(x, y, color.RGBA{uint8(x * 12), uint8(y * 15), uint8(i * 40), 255})
			}
		}
		var jb bytes.Buffer
		jpeg.Encode(&jb, img, &jpeg.Options{Quality: 90})
		ex := tfexample.New().
			SetInt64("image/height", 16).SetInt64("image/width", 20).
			SetString("image/colorspace", "RGB").SetInt64("image/channels", 3).
			SetString("image/class/synset", fmt.Sprintf("n%08d", r.label)).
			SetString("image/class/text", "thing").
			SetString("image/format", "JPEG").
			SetString("image/filename", r.name).
			SetBytes("image/encoded", jb.Bytes())
		if r.label >= 0 {
			ex.SetInt64("image/class/label", r.label)
		}
		off := w.Offset()
		if err := w.Write(ex.Marshal(nil)); err != nil {
			t.Fatal(err)
		}
		offs = append(offs, off)
		idx = append(idx, tfrecord.IndexEntry{Offset: off, Size: w.Offset() - off})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var ib bytes.Buffer
	if err := tfrecord.WriteIndex(&ib, idx); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(indexName(path), ib.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, offs
}

// labelsOf runs one epoch in file order and returns key → label, or the
// epoch's error.
// loadLabels opens path with o, runs epoch 0 (labelsOf) and returns the
// labels, the quarantined samples and the epoch's error.
func loadLabels(t *testing.T, path string, o Options) (map[string]int, []BadSample, error) {
	t.Helper()
	l, err := Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got, err := labelsOf(l)
	return got, l.Bad(), err
}

func labelsOf(l *Loader) (map[string]int, error) {
	got := map[string]int{}
	for b, err := range l.IterEpoch(context.Background(), 0) {
		if err != nil {
			return got, err
		}
		for _, it := range b.Items[:b.Valid] {
			got[it.Key] = it.Label
		}
		b.Release()
	}
	return got, nil
}

// A shard from TensorFlow's ImageNet scripts (1-based labels) loads with
// LabelOffset -1 to 0-based labels, streaming and by index; without the
// offset its last class is out of range, a damaged sample naming the file
// and the record's offset.
func TestLabelOffsetTFShard(t *testing.T) {
	var recs []tfRecord
	for i := range 10 {
		recs = append(recs, tfRecord{fmt.Sprintf("n%08d_%d.JPEG", i%5+1, i), int64(i%5 + 1)})
	}
	path, offs := writeTFShard(t, recs)
	for _, global := range []bool{false, true} {
		o := Options{Transform: Eval, Resolution: 8, Batch: 4, LabelOffset: -1, Classes: 5, GlobalShuffle: global}
		got, _, err := loadLabels(t, path, o)
		if err != nil {
			t.Fatalf("global %v: %v", global, err)
		}
		if len(got) != 10 {
			t.Fatalf("global %v: %d samples, want 10", global, len(got))
		}
		for _, r := range recs {
			if got[r.name] != int(r.label)-1 {
				t.Errorf("global %v: %s has label %d, want %d", global, r.name, got[r.name], r.label-1)
			}
		}

		// No offset: stored label 5 is outside the 5 classes.
		o.LabelOffset = 0
		_, _, err = loadLabels(t, path, o)
		var ce *source.CorruptError
		if !errors.As(err, &ce) || ce.Path != path || ce.Offset != offs[4] || !strings.Contains(ce.Reason, "label 5") {
			t.Errorf("global %v: label 5 of 5 classes: got %v, want a CorruptError at %s offset %d", global, err, path, offs[4])
		}
		// Skipped and quarantined under the skip policy: records 4 and 9.
		o.BadData = BadDataPolicy{Skip: true}
		got, bad, err := loadLabels(t, path, o)
		var at []int64
		for _, b := range bad {
			at = append(at, b.Offset)
		}
		slices.Sort(at)
		if err != nil || len(got) != 8 || !slices.Equal(at, []int64{offs[4], offs[9]}) {
			t.Errorf("global %v: skip: %d samples, bad at %v (want 8, %v), err %v", global, len(got), at, []int64{offs[4], offs[9]}, err)
		}
	}
}

// A record without image/class/label is damaged — it does not become
// class 0: the epoch stops with a tfrecord.CorruptError at its offset, or
// under the skip policy it is quarantined.
func TestRecordWithoutLabel(t *testing.T) {
	recs := []tfRecord{{"a.JPEG", 1}, {"b.JPEG", 2}, {"nolabel.JPEG", -1}, {"c.JPEG", 0}}
	path, offs := writeTFShard(t, recs)
	for _, global := range []bool{false, true} {
		o := Options{Transform: None, Batch: 2, GlobalShuffle: global}
		got, _, err := loadLabels(t, path, o)
		var ce *tfrecord.CorruptError
		if !errors.As(err, &ce) || ce.Path != path || ce.Offset != offs[2] || !strings.Contains(ce.Reason, "image/class/label") {
			t.Fatalf("global %v: got %v (labels %v), want a CorruptError at offset %d", global, err, got, offs[2])
		}
		o.BadData = BadDataPolicy{Skip: true}
		got, bad, err := loadLabels(t, path, o)
		if err != nil || len(got) != 3 || len(bad) != 1 || bad[0].Offset != offs[2] || bad[0].Key != "nolabel.JPEG" {
			t.Errorf("global %v: skip: labels %v, bad %+v, err %v", global, got, bad, err)
		}
		if _, ok := got["nolabel.JPEG"]; ok {
			t.Errorf("global %v: the record without a label was served", global)
		}
	}
}

// LabelOffset is for stored labels: an ImageFolder refuses it.
func TestLabelOffsetImageFolder(t *testing.T) {
	folder, _ := makeTree(t, 2)
	if _, err := Open(folder, Options{LabelOffset: -1}); err == nil || !strings.Contains(err.Error(), "ImageFolder") {
		t.Errorf("ImageFolder with a label offset: %v", err)
	}
}

// A label offset beyond any stored label is refused when the loader
// opens, either way (before: a large positive offset allocated that many
// class names, 32 GB for 2^31, and a negative one below -2^63+1 panicked
// slicing them).
func TestLabelOffsetBounded(t *testing.T) {
	_, shards := makeTreeShards(t, 2, 1)
	for _, off := range []int{MaxLabelOffset + 1, -MaxLabelOffset - 1, 1 << 40, math.MinInt} {
		l, err := Open(shards, Options{Transform: None, Batch: 2, LabelOffset: off})
		if err == nil {
			l.Close()
		}
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("label offset %d", off)) {
			t.Errorf("LabelOffset %d: %v, want refused", off, err)
		}
	}
	l, err := Open(shards, Options{Transform: None, Batch: 2, LabelOffset: MaxLabelOffset})
	if err != nil {
		t.Fatalf("LabelOffset %d: %v", MaxLabelOffset, err)
	}
	l.Close()
}
