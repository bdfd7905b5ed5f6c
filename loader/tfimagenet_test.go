package loader

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/shard/shardtest"
	"github.com/faster-training/faster/source"
)

// TensorFlow's ImageNet shards, written by an independent (pure-Python)
// writer: a directory of them loads with --label-offset -1 to labels
// 0..N-1, its epoch length known without indexes (StepsPerEpoch, which
// Python's len() reads, was -1); without the offset, label N of N
// classes is damaged and the error says that --label-offset -1 is
// probably wanted; 0-based labels out of range get no such hint.
func TestTFImageNetShardsLabels(t *testing.T) {
	dir := t.TempDir()
	shardtest.WriteTFImageNet(t, dir, shardtest.TFImageNet{Split: "train", Shards: 4, PerShard: 5, Classes: 3})
	shardtest.WriteTFImageNet(t, dir, shardtest.TFImageNet{Split: "validation", Shards: 2, PerShard: 3, Classes: 3})

	o := Options{Transform: None, Batch: 4, LabelOffset: -1, Classes: 3, Workers: 1}
	l, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if l.StepsPerEpoch() != 5 || l.DatasetLen() != 20 {
		t.Fatalf("steps %d, samples %d; want 5 and 20", l.StepsPerEpoch(), l.DatasetLen())
	}
	got, err := labelsOf(l)
	l.Close()
	if err != nil || len(got) != 20 {
		t.Fatalf("%d samples, %v", len(got), err)
	}
	for key, label := range got {
		// n%08d_k.JPEG is class k%3, stored as 1 + k%3.
		if want := key[8] - '0'; label != int(want) {
			t.Errorf("%s: label %d, want %d", key, label, want)
		}
	}
	o.Split = "val"
	if l, err := Open(dir, o); err != nil || l.StepsPerEpoch() != 2 {
		t.Fatalf("split val: %v", err)
	} else {
		l.Close()
	}

	// Without the offset: stored label 3 of 3 classes, no 0 seen.
	o.Split, o.LabelOffset = "", 0
	_, _, err = loadLabels(t, dir, o)
	var ce *source.CorruptError
	if !errors.As(err, &ce) || !strings.Contains(ce.Reason, "label 3 of synset n00000002 is outside the 3 classes") || !strings.Contains(ce.Reason, "--label-offset -1") {
		t.Fatalf("1-based labels without the offset: %v", err)
	}

	// 0-based labels of 3 classes read as 2: out of range, no hint (a 0
	// came first: one worker, file order).
	zero := t.TempDir()
	shardtest.WriteTFImageNet(t, zero, shardtest.TFImageNet{Shards: 1, PerShard: 6, Classes: 3, ZeroBased: true})
	o.Classes, o.Shuffle = 2, ShuffleOff
	_, _, err = loadLabels(t, zero, o)
	if !errors.As(err, &ce) || !strings.Contains(ce.Reason, "label 2 of synset n00000002 is outside the 2 classes") || strings.Contains(ce.Reason, "label-offset") {
		t.Fatalf("0-based labels above the classes: %v", err)
	}
}

// Several paths (a shell's expansion of dir/train-*, .idx files among
// them) are one dataset.
func TestTFImageNetShardsPaths(t *testing.T) {
	dir := t.TempDir()
	shardtest.WriteTFImageNet(t, dir, shardtest.TFImageNet{Shards: 4, PerShard: 5, Index: "stem"})
	m, _ := filepath.Glob(filepath.Join(dir, "train-*"))
	l, err := Open(m[0], Options{Transform: None, Batch: 4, LabelOffset: -1, Classes: 3, Paths: m[1:], GlobalShuffle: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got, err := labelsOf(l); err != nil || len(got) != 20 || l.StepsPerEpoch() != 5 {
		t.Fatalf("%d samples, steps %d, %v", len(got), l.StepsPerEpoch(), err)
	}
}
