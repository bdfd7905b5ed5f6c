package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/shard/shardtest"
)

// TensorFlow's ImageNet shards (written by an independent, pure-Python
// writer) through `faster bench load`: a shell's expansion of dir/train-*
// (shards and their .idx indexes) is one dataset, one row (before: one row
// per file, the indexes read as TFRecords); the directory with --split val
// reads validation-*; 1-based labels with --classes and no offset stop
// with the hint to use --label-offset -1.
func TestBenchLoadTFImageNetPaths(t *testing.T) {
	dir := t.TempDir()
	shardtest.WriteTFImageNet(t, dir, shardtest.TFImageNet{Split: "train", Shards: 4, PerShard: 5, Classes: 3, Index: "stem"})
	shardtest.WriteTFImageNet(t, dir, shardtest.TFImageNet{Split: "validation", Shards: 2, PerShard: 3, Classes: 3})
	expanded, _ := filepath.Glob(filepath.Join(dir, "train-*"))
	if len(expanded) != 8 {
		t.Fatalf("%d paths", len(expanded))
	}
	common := []string{"--transform", "none", "--batch", "4", "--workers", "1", "--classes", "3"}
	args := append(append([]string{"bench", "load"}, expanded...), append(common, "--label-offset", "-1", "--json")...)
	code, out, errs := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r loadResult
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Images != 20 || r.Kind != "shards" || !strings.Contains(r.Data, "(8 paths)") {
		t.Fatalf("one dataset of 20 images: %+v %v\n%s", r, err, out)
	}
	args = append(append([]string{"bench", "load"}, expanded...), append(common, "--label-offset", "-1")...)
	if code, out, errs = runCLI(t, args...); code != 0 || strings.Count(out, "(8 paths)") != 2 || strings.Count(out, "shards") != 1 {
		t.Fatalf("table: exit %d, want one row:\n%s%s", code, out, errs)
	}

	code, out, errs = runCLI(t, append([]string{"bench", "load", dir, "--split", "val", "--label-offset", "-1", "--json"}, common...)...)
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || r.Images != 6 {
		t.Fatalf("--split val: exit %d, %+v %v %s", code, r, err, errs)
	}

	code, _, errs = runCLI(t, append([]string{"bench", "load", dir}, common...)...)
	if code != 1 || !strings.Contains(errs, "--label-offset -1") {
		t.Fatalf("1-based labels without the offset: exit %d: %s", code, errs)
	}
}

// faster verify and faster inspect take a directory of TensorFlow's
// ImageNet shards (before: "no *.tfrecord or *.tar files"), every split's
// shards told by their bytes; verify checks X.tfrecord.idx (DALI's naming)
// as it checks X.idx.
func TestVerifyInspectTFImageNet(t *testing.T) {
	dir := t.TempDir()
	shardtest.WriteTFImageNet(t, dir, shardtest.TFImageNet{Split: "train", Shards: 2, PerShard: 3, Index: "stem"})
	shardtest.WriteTFImageNet(t, dir, shardtest.TFImageNet{Split: "validation", Shards: 1, PerShard: 2})
	if code, out, errs := runCLI(t, "verify", dir); code != 0 || !strings.Contains(out, "3 shards, 8 records") {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "inspect", dir, "--json"); code != 0 || !strings.Contains(out, `"records": 8`) {
		t.Fatalf("inspect: exit %d\n%s%s", code, out, errs)
	}
	dali := t.TempDir()
	shardtest.WriteTFImageNet(t, dali, shardtest.TFImageNet{Shards: 1, PerShard: 3, Ext: ".tfrecord", Index: "full"})
	idx := filepath.Join(dali, "train-00000-of-00001.tfrecord.idx")
	os.WriteFile(idx, []byte("0 10\n"), 0o644)
	if code, out, _ := runCLI(t, "verify", dali); code != 1 || !strings.Contains(out, idx) {
		t.Fatalf("verify with a stale X.tfrecord.idx: exit %d\n%s", code, out)
	}
}

// faster train --data DIR over TensorFlow's ImageNet shards trains on
// train-* and evaluates on validation-* (before: no manifest, so
// "give --test-data", and --test-data DIR evaluated on train-*).
func TestTrainTFImageNetSplits(t *testing.T) {
	dir := t.TempDir()
	shardtest.WriteTFImageNet(t, dir, shardtest.TFImageNet{Split: "train", Shards: 2, PerShard: 8, Classes: 3})
	shardtest.WriteTFImageNet(t, dir, shardtest.TFImageNet{Split: "validation", Shards: 1, PerShard: 6, Classes: 3})
	code, out, errs := runCLI(t, "train", "--data", dir, "--classes", "3", "--label-offset", "-1", "--batch", "8", "--epochs", "1",
		"--backend", "reference", "--filters", "4,8", "--threads", "1", "--resolution", "32", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var s struct {
		TrainImages int `json:"train_images"`
		TestImages  int `json:"test_images"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil || s.TrainImages != 16 || s.TestImages != 6 {
		t.Fatalf("train %d, test %d images (want 16 and 6): %v\n%s", s.TrainImages, s.TestImages, err, out)
	}
}
