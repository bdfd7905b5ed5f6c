package source

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Kaggle's ImageNet (imagenet-object-localization-challenge) lays its
// validation images flat, ILSVRC/Data/CLS-LOC/val/ILSVRC2012_val_00000001.JPEG,
// with their labels in LOC_val_solution.csv beside ILSVRC/:
//
//	ImageId,PredictionString
//	ILSVRC2012_val_00008726,n02119789 255 142 454 329 n02119789 44 21 322 295
//
// the first word of PredictionString is the image's synset (its boxes
// follow). Its train/ is an ImageFolder of synset folders, whose sorted
// names are the classes both splits share.

// KaggleCSV is the name of Kaggle's validation labels.
const KaggleCSV = "LOC_val_solution.csv"

// ReadLOCSolution reads a Kaggle LOC_*_solution.csv: the synset of each
// ImageId (the first word of its PredictionString). name is used in
// errors, which name the line. A duplicate ImageId, a row of other than
// two fields or an empty PredictionString is an error.
func ReadLOCSolution(r io.Reader, name string) (map[string]string, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	bad := func(line int, format string, a ...any) error {
		return fmt.Errorf("%s: line %d: %s", name, line, fmt.Sprintf(format, a...))
	}
	hdr, err := cr.Read()
	if err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("%s: empty: want the header ImageId,PredictionString", name)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(hdr) != 2 || strings.TrimPrefix(hdr[0], "\ufeff") != "ImageId" || hdr[1] != "PredictionString" {
		return nil, bad(1, "header %q, want ImageId,PredictionString", strings.Join(hdr, ","))
	}
	out := map[string]string{}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, bad(pe.Line, "%v", pe.Err)
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0) // of a record read whole only
		if len(rec) != 2 {
			return nil, bad(line, "%d fields, want ImageId,PredictionString", len(rec))
		}
		id, words := rec[0], strings.Fields(rec[1])
		switch {
		case id == "":
			return nil, bad(line, "empty ImageId")
		case len(words) == 0:
			return nil, bad(line, "ImageId %s: empty PredictionString (its first word is the label's synset)", shorten(id))
		case out[id] != "":
			return nil, bad(line, "ImageId %s listed twice", shorten(id))
		}
		out[id] = words[0]
	}
}

// OpenKaggleVal opens a flat folder of images (Kaggle's CLS-LOC/val) with
// their labels from csvPath (ReadLOCSolution): each image's synset's
// position in classes. The images are in sorted order, as ImageFolder
// sorts a folder's files; files of other extensions are left out. An
// image the CSV does not list, a row naming no image of the folder, or a
// synset not among classes is an error naming it.
func OpenKaggleVal(dir, csvPath string, classes []string) (*ImageFolder, error) {
	b, err := ReadFile(csvPath, 0)
	if err != nil {
		return nil, err
	}
	labels, err := ReadLOCSolution(bytes.NewReader(b), csvPath)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	index := make(map[string]int, len(classes))
	for i, c := range classes {
		index[c] = i
	}
	d := &ImageFolder{root: dir, classes: classes}
	seen := 0
	for _, e := range ents { // sorted by name
		name := e.Name()
		if e.IsDir() {
			continue
		}
		if !IsImageName(name) {
			d.ignored = append(d.ignored, name)
			continue
		}
		id := strings.TrimSuffix(name, filepath.Ext(name))
		wnid, ok := labels[id]
		if !ok {
			return nil, fmt.Errorf("%s: %s lists no ImageId %s: its label is unknown", filepath.Join(dir, name), csvPath, id)
		}
		l, ok := index[wnid]
		if !ok {
			return nil, fmt.Errorf("%s: ImageId %s: synset %s is none of the %d classes (train's folders)", csvPath, id, shorten(wnid), len(classes))
		}
		seen++
		d.items = append(d.items, Item{Key: name, Label: l})
	}
	if seen != len(labels) {
		var missing []string
		have := map[string]bool{}
		for _, it := range d.items {
			have[strings.TrimSuffix(it.Key, filepath.Ext(it.Key))] = true
		}
		for id := range labels {
			if !have[id] {
				missing = append(missing, id)
			}
		}
		slices.Sort(missing)
		return nil, fmt.Errorf("%s: %d of its rows name no image in %s (the first: %s): the folder is not the whole split", csvPath, len(missing), dir, shorten(missing[0]))
	}
	return d, nil
}

// ClassFolders returns the names of the folders directly in dir (and of
// links to folders), sorted: an ImageFolder's classes, without walking
// them.
func ClassFolders(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() || (e.Type()&os.ModeSymlink != 0 && isDir(filepath.Join(dir, e.Name()))) {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}
