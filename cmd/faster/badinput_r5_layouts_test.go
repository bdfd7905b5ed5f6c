package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/faster-training/faster/source/sourcetest"
)

// The rows of docs/badinput.md about the layouts read where they lie
// (issue 39 items 1, 6 and 7): split folders, plain ImageFolders asked
// for a split, empty class folders, CIFAR's batches, Kaggle's flat val.
func init() {
	// torchvision's ImageNet layout, root/train and root/val.
	splitFolders := func(t *testing.T) string {
		root := t.TempDir()
		for _, split := range []string{"train", "val"} {
			if err := os.Rename(writeFolder(t, 2, 2), filepath.Join(root, split)); err != nil {
				t.Fatal(err)
			}
		}
		return root
	}
	badFixtures["split-folder-unknown"] = func(t *testing.T) badFixture {
		return badFixture{data: splitFolders(t), needle: `no split "nonexistent": the splits here are the folders train, val`, loadArgs: []string{"--split", "nonexistent"}}
	}
	badFixtures["imagefolder-split"] = func(t *testing.T) badFixture {
		return badFixture{data: writeFolder(t, 2, 2), needle: "has no splits", loadArgs: []string{"--split", "val"}}
	}
	badFixtures["class-folder-empty"] = func(t *testing.T) badFixture {
		root := writeFolder(t, 2, 2)
		if err := os.Mkdir(filepath.Join(root, "c9"), 0o755); err != nil {
			t.Fatal(err)
		}
		return badFixture{data: root, needle: "found no valid file for the classes c9"}
	}
	badFixtures["cifar-batch-cut"] = func(t *testing.T) badFixture {
		root := t.TempDir()
		dir := sourcetest.WriteCIFAR10(t, root, 4)
		p := filepath.Join(dir, "data_batch_3")
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, st.Size()/2); err != nil {
			t.Fatal(err)
		}
		return badFixture{data: root, needle: p}
	}
	badFixtures["kaggle-val-unlisted"] = func(t *testing.T) badFixture {
		root := t.TempDir()
		base := filepath.Join(root, "ILSVRC", "Data", "CLS-LOC")
		if err := os.MkdirAll(filepath.Join(base, "val"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(writeFolder(t, 2, 2), filepath.Join(base, "train")); err != nil {
			t.Fatal(err)
		}
		img, err := os.ReadFile(filepath.Join(base, "train", "c0", "00.jpg"))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"ILSVRC2012_val_00000001.JPEG", "ILSVRC2012_val_00000002.JPEG"} {
			if err := os.WriteFile(filepath.Join(base, "val", n), img, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		csv := "ImageId,PredictionString\nILSVRC2012_val_00000001,c1 1 2 3 4 \n"
		if err := os.WriteFile(filepath.Join(root, "LOC_val_solution.csv"), []byte(csv), 0o644); err != nil {
			t.Fatal(err)
		}
		return badFixture{data: root, needle: "ILSVRC2012_val_00000002.JPEG", loadArgs: []string{"--split", "val"}}
	}
}
