package shard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
	"github.com/faster-training/faster/source"
)

// writeJPEGs writes a small JPEG at each of root/rel (rel slash-separated),
// each of its own colour.
func writeJPEGs(t *testing.T, root string, rels ...string) {
	t.Helper()
	for i, rel := range rels {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		img := image.NewRGBA(image.Rect(0, 0, 20+i, 16))
		for y := range 16 {
			for x := range 20 + i {
				img.Set(x, y, color.RGBA{uint8(i * 37), uint8(x * 9), uint8(y * 13), 255})
			}
		}
		var b bytes.Buffer
		if err := jpeg.Encode(&b, img, nil); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// tvListing is what a torchvision dataset class lists: its classes and
// its samples (path relative to the root given, label), in its order.
type tvListing struct {
	Classes []string `json:"classes"`
	Samples [][2]any `json:"samples"`
	Error   string   `json:"error"`
}

// torchvisionImageFolder lists torchvision.datasets.ImageFolder(root)
// (paths relative to root), or the error it raises.
func torchvisionImageFolder(t *testing.T, root string) tvListing {
	t.Helper()
	return torchvisionImageFolders(t, root)[0]
}

// torchvisionImageFolders is torchvisionImageFolder of each root, in one
// Python.
func torchvisionImageFolders(t *testing.T, roots ...string) []tvListing {
	t.Helper()
	py := testenv.PythonWith(t, "torchvision")
	out, err := exec.Command(py, append([]string{"-c", `
import json, sys, os
from torchvision.datasets import ImageFolder
for root in sys.argv[1:]:
    try:
        d = ImageFolder(root, loader=lambda p: p)
    except Exception as e:
        print(json.dumps({"error": type(e).__name__ + ": " + str(e)}))
        continue
    print(json.dumps({"classes": d.classes, "samples": [[os.path.relpath(p, root), l] for p, l in d.samples]}))
`}, roots...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	var ls []tvListing
	dec := json.NewDecoder(bytes.NewReader(out))
	for range roots {
		var l tvListing
		if err := dec.Decode(&l); err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	return ls
}

// sameListing fails the test unless ds lists want's classes and samples
// (keys and labels) in want's order.
func sameListing(t *testing.T, what string, ds source.Dataset, want tvListing) {
	t.Helper()
	if want.Error != "" {
		t.Fatalf("%s: torchvision refused it: %s", what, want.Error)
	}
	x, ok := ds.(source.Indexed)
	if !ok {
		t.Fatalf("%s: %T is not indexed", what, ds)
	}
	if !slices.Equal(ds.Classes(), want.Classes) {
		t.Fatalf("%s: classes %q, torchvision's %q", what, ds.Classes(), want.Classes)
	}
	if x.Len() != len(want.Samples) {
		t.Fatalf("%s: %d samples, torchvision lists %d", what, x.Len(), len(want.Samples))
	}
	for i, s := range want.Samples {
		r, err := x.Record(i)
		if err != nil {
			t.Fatal(err)
		}
		if r.Key != s[0].(string) || r.Label != int(s[1].(float64)) {
			t.Fatalf("%s: sample %d is %s (label %d), torchvision's %v", what, i, r.Key, r.Label, s)
		}
	}
}

// TestImageNetSplitFolders: torchvision's ImageNet layout (root/train,
// root/val, each an ImageFolder; the raw tars beside them) is read by
// split, each split as torchvision's ImageFolder(root/split) lists it; an
// unknown split names those there are; a plain ImageFolder has no split
// but the default train.
func TestImageNetSplitFolders(t *testing.T) {
	root := t.TempDir()
	writeJPEGs(t, root, "train/n01440764/a.JPEG", "train/n01440764/b.JPEG", "train/n01443537/c.JPEG",
		"train/n01484850/d.JPEG", "val/n01440764/e.JPEG", "val/n01443537/f.JPEG", "val/n01443537/g.JPEG", "val/n01484850/h.JPEG")
	// The raw tars torchvision.datasets.ImageNet leaves beside the folders.
	for _, name := range []string{"ILSVRC2012_img_val.tar", "ILSVRC2012_img_train.tar", "ILSVRC2012_devkit_t12.tar.gz"} {
		if err := os.WriteFile(filepath.Join(root, name), bytes.Repeat([]byte("not this tar "), 100), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tv := torchvisionImageFolders(t, filepath.Join(root, "train"), filepath.Join(root, "val"))
	sameListing(t, "split train", open(t, root, OpenOptions{Split: "train"}), tv[0])
	sameListing(t, "the default split", open(t, root, OpenOptions{}), tv[0])
	sameListing(t, "split val", open(t, root, OpenOptions{Split: "val"}), tv[1])
	// "validation" finds val, as it finds TensorFlow's validation-* shards.
	sameListing(t, "split validation", open(t, root, OpenOptions{Split: "validation"}), tv[1])
	_, err := Open(context.Background(), root, OpenOptions{Split: "nonexistent"})
	if err == nil || !strings.Contains(err.Error(), `"nonexistent"`) || !strings.Contains(err.Error(), "train, val") {
		t.Fatalf("unknown split: %v, want an error naming it and the splits train, val", err)
	}
	if EvalSplit(root) != "val" {
		t.Errorf("EvalSplit(%s) = %q, want val", root, EvalSplit(root))
	}

	// A plain ImageFolder: the default split reads it; another is refused
	// naming the layout.
	plain := filepath.Join(root, "train")
	sameListing(t, "plain ImageFolder", open(t, plain, OpenOptions{}), tv[0])
	sameListing(t, "plain ImageFolder, split train", open(t, plain, OpenOptions{Split: "train"}), tv[0])
	_, err = Open(context.Background(), plain, OpenOptions{Split: "val"})
	if err == nil || !strings.Contains(err.Error(), "ImageFolder") || !strings.Contains(err.Error(), `"val"`) {
		t.Fatalf("split val of a plain ImageFolder: %v, want an error naming the layout and the split", err)
	}
}

// TestEmptyClassFolderRefused: a class folder with no image (empty, or
// only files of other extensions) is refused as torchvision's ImageFolder
// refuses it, naming the classes.
func TestEmptyClassFolderRefused(t *testing.T) {
	root := t.TempDir()
	writeJPEGs(t, root, "ant/a.jpg", "cat/c.jpg")
	for _, d := range []string{"bee", "dog"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "dog", "notes.txt"), []byte("no image"), 0o644); err != nil {
		t.Fatal(err)
	}
	tv := torchvisionImageFolder(t, root)
	if !strings.Contains(tv.Error, "FileNotFoundError: Found no valid file for the classes bee, dog") {
		t.Fatalf("torchvision: %q, want its FileNotFoundError naming bee, dog", tv.Error)
	}
	_, err := Open(context.Background(), root, OpenOptions{})
	if err == nil || !strings.Contains(err.Error(), "found no valid file for the classes bee, dog") ||
		!strings.Contains(err.Error(), filepath.Join(root, "bee")) {
		t.Fatalf("Open: %v, want torchvision's refusal naming the classes bee, dog and the folder %s", err, filepath.Join(root, "bee"))
	}
	if _, err := source.OpenImageFolder(root); err == nil {
		t.Fatal("OpenImageFolder (pack's) accepted empty class folders")
	}
}

// TestSplitFoldersOfShards: split folders may hold shards (webdataset's
// root/train/*.tar, root/val/*.tar; packed or TFRecord folders): the
// split's folder is read as a directory of shards.
func TestSplitFoldersOfShards(t *testing.T) {
	folder := makeFolder(t, []string{"cat", "dog"}, 3)
	src, err := source.OpenImageFolder(folder)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for split, format := range map[string]string{"train": FormatWDS, "val": FormatTFRecord} {
		if _, err := Pack(context.Background(), src, folder, filepath.Join(root, split), PackOptions{Shards: 2, Split: split, Format: format}); err != nil {
			t.Fatal(err)
		}
	}
	// webdataset's own names in train, no manifest: one dataset.
	os.Remove(filepath.Join(root, "train", ManifestName))
	for i := range 2 {
		for _, ext := range []string{".tar", ".idx"} {
			from := filepath.Join(root, "train", FormatName(FormatWDS, "train", i, 2))
			from = strings.TrimSuffix(from, ".tar") + ext
			if err := os.Rename(from, filepath.Join(root, "train", fmt.Sprintf("shard-%06d%s", i, ext))); err != nil {
				t.Fatal(err)
			}
		}
	}
	for split, kind := range map[string]string{"train": "wds", "val": "shards"} {
		ds := open(t, root, OpenOptions{Split: split, GlobalShuffle: true})
		if ds.Kind() != kind || ds.(source.Indexed).Len() != 6 {
			t.Errorf("split %s: %s dataset of %d, want %s of 6", split, ds.Kind(), ds.(source.Indexed).Len(), kind)
		}
	}
}
