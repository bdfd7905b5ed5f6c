package shard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/faster-training/faster/source"
)

// The layouts of a local directory read by split besides packed data and
// shards (Open): torchvision's ImageNet layout (root/train, root/val, each
// an ImageFolder, the raw tars left beside them), Kaggle's flat val/ with
// its CSV, CIFAR's python batches and MNIST's IDX files.

// splitWords are the names of split folders: a directory holding a
// subdirectory of one of these names is read by split, each split's
// folder an ImageFolder (torchvision.datasets.ImageNet reads root/train
// and root/val; ImageFolder(root/split) any other).
var splitWords = []string{"train", "val", "validation", "test"}

// splitFolders returns the subdirectories of dir, sorted, when one of them
// is named as a split (splitWords): its split folders; nil otherwise (a
// plain ImageFolder, class folders directly under dir).
func splitFolders(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var subs []string
	named := false
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") || !isDirEntry(dir, e) {
			continue
		}
		subs = append(subs, e.Name())
		named = named || slices.Contains(splitWords, e.Name())
	}
	if !named {
		return nil
	}
	return subs
}

func isDirEntry(dir string, e os.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&os.ModeSymlink == 0 {
		return false
	}
	st, err := os.Stat(filepath.Join(dir, e.Name()))
	return err == nil && st.IsDir()
}

// openLayout opens dir when it is one of the layouts above; ok is false
// when it is none of them (a packed directory, shards, an ImageFolder).
func openLayout(ctx context.Context, dir string, opts OpenOptions) (_ source.Dataset, ok bool, _ error) {
	split := opts.Split
	if _, err := os.Lstat(filepath.Join(dir, ManifestName)); err == nil {
		return nil, false, nil // packed: its manifest names its splits
	}
	if d, err := source.FindCIFAR(dir); err != nil || d != "" {
		if err != nil {
			return nil, true, err
		}
		ds, err := source.OpenCIFAR(d, split)
		return ds, true, err
	}
	if d, err := source.FindIDX(dir); err != nil || d != "" {
		if err != nil {
			return nil, true, err
		}
		ds, err := source.OpenIDX(d, split)
		return ds, true, err
	}
	base, kaggleRoots := kaggleBase(dir)
	subs := splitFolders(base)
	if subs == nil {
		return nil, false, nil
	}
	dir = base
	name := ""
	for _, s := range append([]string{split}, splitAliases[split]...) {
		if slices.Contains(subs, s) {
			name = s
			break
		}
	}
	if name == "" {
		return nil, true, fmt.Errorf("%s: no split %q: the splits here are the folders %s (torchvision's ImageNet layout, root/<split>/<class>/…)", dir, split, strings.Join(subs, ", "))
	}
	folder := filepath.Join(dir, name)
	if classes, err := source.ClassFolders(folder); err != nil || len(classes) > 0 {
		ds, err := openFolder(folder)
		return ds, true, err
	}
	// No class folders: shards (webdataset's root/train/*.tar, a packed
	// or TFRecord folder), else flat images (Kaggle's val/).
	files, err := dirShards(folder, split)
	if err != nil {
		return nil, true, err
	}
	if files != nil {
		ds, err := openFiles(ctx, files, opts)
		return ds, true, err
	}
	ds, err := openFlatSplit(dir, folder, kaggleRoots)
	return ds, true, err
}

// kaggleBase returns where the split folders of dir are (Kaggle's
// ImageNet: dir/ILSVRC/Data/CLS-LOC, else dir) and where Kaggle's CSV
// may be: dir, and the Kaggle root three folders above CLS-LOC.
func kaggleBase(dir string) (base string, csvDirs []string) {
	if d := filepath.Join(dir, "ILSVRC", "Data", "CLS-LOC"); isDirPath(d) {
		return d, []string{dir}
	}
	if filepath.Base(filepath.Clean(dir)) == "CLS-LOC" {
		return dir, []string{dir, filepath.Clean(filepath.Join(dir, "..", "..", ".."))}
	}
	return dir, []string{dir}
}

func isDirPath(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// openFlatSplit opens a split folder of images without class folders:
// Kaggle's val/, labelled by LOC_val_solution.csv, with train's classes
// (its folders, else LOC_synset_mapping.txt's synsets, sorted).
func openFlatSplit(base, folder string, csvDirs []string) (source.Dataset, error) {
	csv := ""
	for _, d := range csvDirs {
		if p := filepath.Join(d, source.KaggleCSV); isFile(p) {
			csv = filepath.Clean(p)
			break
		}
	}
	if csv == "" || filepath.Base(folder) != "val" {
		return nil, fmt.Errorf("%s: images with no class folders, so no labels: torchvision's ImageFolder needs %s/<class>/…; Kaggle's flat val/ is labelled by its %s (looked for in %s)",
			folder, folder, source.KaggleCSV, strings.Join(csvDirs, " and "))
	}
	classes, err := source.ClassFolders(filepath.Join(base, "train"))
	if err != nil || len(classes) == 0 {
		mapping := filepath.Join(filepath.Dir(csv), "LOC_synset_mapping.txt")
		b, merr := source.ReadFile(mapping, 0)
		if merr != nil {
			return nil, fmt.Errorf("%s: the classes are train's folders (%s: none) or %s's synsets: %v", folder, filepath.Join(base, "train"), mapping, merr)
		}
		classes = nil
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 0 {
				classes = append(classes, f[0])
			}
		}
		slices.Sort(classes)
	}
	ds, err := source.OpenKaggleVal(folder, csv, classes)
	if err != nil {
		return nil, err
	}
	if ds.Len() == 0 {
		return nil, fmt.Errorf("%s: no images", folder)
	}
	return ds, nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// openFolder opens an ImageFolder tree, refusing one without images.
func openFolder(root string) (source.Dataset, error) {
	src, err := source.ListImageFolder(root) // no stat a file: the loader reads each whole
	if err != nil {
		return nil, err
	}
	if src.Len() == 0 {
		return nil, fmt.Errorf("%s: no images", src.Root())
	}
	return src, nil
}

// plainFolderSplit refuses a split other than the default train of a
// plain ImageFolder (class folders directly under root), which has none.
func plainFolderSplit(root, split string) error {
	if split == "train" {
		return nil
	}
	return fmt.Errorf("%s: no split %q: an ImageFolder (class folders directly under it) has no splits; give the split's own folder as the path, or lay the splits out as %s/<split>/<class>/… (torchvision's ImageNet layout)",
		root, split, filepath.Clean(root))
}

// ImageSide returns the side of the images of a local layout whose images
// all have one size, for a run that is given no resolution: CIFAR's 32;
// 0 for any other path.
func ImageSide(path string) int {
	if d, _ := source.FindCIFAR(path); d != "" {
		return 32
	}
	return 0
}
