package shard

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
)

// pyKaggleVal lists Kaggle's flat val/ as a script does: the images
// sorted, each labelled by its LOC_val_solution.csv row's first synset,
// indexed by torchvision's ImageFolder(train).class_to_idx.
const pyKaggleVal = `
import csv, json, os, sys
from torchvision.datasets import ImageFolder
root = sys.argv[1]
base = os.path.join(root, "ILSVRC", "Data", "CLS-LOC")
train = ImageFolder(os.path.join(base, "train"), loader=lambda p: p)
with open(os.path.join(root, "LOC_val_solution.csv")) as f:
    syn = {r["ImageId"]: r["PredictionString"].split()[0] for r in csv.DictReader(f)}
val = sorted(os.listdir(os.path.join(base, "val")))
print(json.dumps({"classes": train.classes, "samples": [[n, train.class_to_idx[syn[os.path.splitext(n)[0]]]] for n in val]}))
`

// TestKaggleImageNetVal: Kaggle's ImageNet layout (flat val/ and
// LOC_val_solution.csv) reads split val with the CSV's labels and train's
// class indices, from the Kaggle root or from CLS-LOC; a val/ without its
// CSV, an image the CSV does not list and a row naming no image are
// refused naming them.
func TestKaggleImageNetVal(t *testing.T) {
	py := testenv.PythonWith(t, "torchvision")
	root := t.TempDir()
	base := filepath.Join(root, "ILSVRC", "Data", "CLS-LOC")
	writeJPEGs(t, base, "train/n01440764/n01440764_1.JPEG", "train/n01443537/n01443537_7.JPEG", "train/n01484850/n01484850_3.JPEG",
		"val/ILSVRC2012_val_00000003.JPEG", "val/ILSVRC2012_val_00000001.JPEG", "val/ILSVRC2012_val_00000002.JPEG",
		"val/ILSVRC2012_val_00000004.JPEG", "test/ILSVRC2012_test_00000001.JPEG")
	csv := "ImageId,PredictionString\n" +
		"ILSVRC2012_val_00000004,n01440764 1 2 3 4 \n" +
		"ILSVRC2012_val_00000001,n01484850 10 20 300 400 n01484850 1 1 5 5 \n" +
		"ILSVRC2012_val_00000003,n01443537 0 0 9 9 n01440764 1 2 3 4\n" +
		"ILSVRC2012_val_00000002,n01443537 5 5 6 6 \n"
	writeFile(t, filepath.Join(root, "LOC_val_solution.csv"), csv)
	writeFile(t, filepath.Join(root, "LOC_synset_mapping.txt"), "n01440764 tench, Tinca tinca\nn01443537 goldfish, Carassius auratus\nn01484850 great white shark\n")
	out, err := exec.Command(py, "-c", pyKaggleVal, root).Output()
	if err != nil {
		t.Fatal(err)
	}
	var want tvListing
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{root, base} {
		sameListing(t, "val of "+p, open(t, p, OpenOptions{Split: "val"}), want)
	}
	tvTrain := torchvisionImageFolder(t, filepath.Join(base, "train"))
	sameListing(t, "train", open(t, root, OpenOptions{}), tvTrain)
	if EvalSplit(root) != "val" {
		t.Errorf("EvalSplit(%s) = %q, want val", root, EvalSplit(root))
	}
	fails := func(what, path, split string, want ...string) {
		t.Helper()
		_, err := Open(context.Background(), path, OpenOptions{Split: split})
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want an error naming %q", what, err, w)
			}
		}
	}
	fails("test (flat, no labels)", root, "test", filepath.Join(base, "test"), "no labels")
	writeJPEGs(t, base, "val/ILSVRC2012_val_00000005.JPEG")
	fails("an image the CSV does not list", root, "val", "ILSVRC2012_val_00000005.JPEG", "LOC_val_solution.csv")
	os.Remove(filepath.Join(base, "val", "ILSVRC2012_val_00000005.JPEG"))
	os.Remove(filepath.Join(base, "val", "ILSVRC2012_val_00000002.JPEG"))
	fails("a row naming no image", root, "val", "ILSVRC2012_val_00000002", "1 of its rows")
	os.Remove(filepath.Join(root, "LOC_val_solution.csv"))
	fails("no CSV", root, "val", "LOC_val_solution.csv", "no class folders")
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
