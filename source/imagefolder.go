package source

import (
	"bytes"
	"fmt"
	"image"
	_ "image/gif" // registered for DecodeConfig
	_ "image/jpeg"
	_ "image/png"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/faster-training/faster/imgcodec/jpegscan"
)

// ImageExtensions are the file extensions torchvision's ImageFolder
// accepts, compared case-insensitively.
var ImageExtensions = []string{".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp"}

// IsImageName reports whether name has an image extension.
func IsImageName(name string) bool {
	return slices.Contains(ImageExtensions, strings.ToLower(filepath.Ext(name)))
}

// ImageFolder is a torchvision-style class-per-directory dataset.
type ImageFolder struct {
	root    string
	classes []string
	items   []Item
	ignored []string // files in class folders without an image extension
}

// OpenImageFolder lists the dataset under root, each item with its file's
// size (one stat a file: the packer plans and fingerprints with them).
func OpenImageFolder(root string) (*ImageFolder, error) { return openImageFolder(root, true) }

// ListImageFolder lists the dataset under root as OpenImageFolder does
// (the same items, labels and order) without a stat of every file, as
// torchvision's ImageFolder does not: Item.Size is 0. A loader, which
// reads each file whole when it loads it, needs no more.
func ListImageFolder(root string) (*ImageFolder, error) { return openImageFolder(root, false) }

func openImageFolder(root string, sizes bool) (*ImageFolder, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	d := &ImageFolder{root: root}
	for _, e := range ents {
		if e.IsDir() || (e.Type()&fs.ModeSymlink != 0 && isDir(filepath.Join(root, e.Name()))) {
			d.classes = append(d.classes, e.Name())
		}
	}
	slices.Sort(d.classes)
	if len(d.classes) == 0 {
		return nil, fmt.Errorf("%s: no class folders", root)
	}
	for label, class := range d.classes {
		var files []string
		nested, err := walkFiles(filepath.Join(root, class), nil, &files)
		if err != nil {
			return nil, err
		}
		// torchvision's order (sortWalked); a folder without subfolders is
		// in it already (os.ReadDir sorts by name).
		if nested {
			sortWalked(files)
		}
		prefix := filepath.Clean(root) + string(filepath.Separator) // walked paths are Joins of it
		for _, p := range files {
			rel, ok := strings.CutPrefix(p, prefix)
			if !ok {
				rel, _ = filepath.Rel(root, p)
			}
			rel = filepath.ToSlash(rel)
			if !IsImageName(p) {
				d.ignored = append(d.ignored, rel)
				continue
			}
			var size int64
			if sizes {
				if st, err := os.Stat(p); err == nil {
					size = st.Size()
				}
			}
			d.items = append(d.items, Item{Key: rel, Label: label, Size: size})
		}
	}
	if err := d.checkNoEmptyClass(); err != nil {
		return nil, err
	}
	return d, nil
}

// checkNoEmptyClass refuses a tree with a class folder that holds no
// image file (empty, or files of other extensions only), as torchvision's
// ImageFolder refuses it (FileNotFoundError "Found no valid file for the
// classes …"): a class no sample can be drawn from is a mistake in the
// tree, and a model would still be built with an output for it.
func (d *ImageFolder) checkNoEmptyClass() error {
	seen := make([]bool, len(d.classes))
	for _, it := range d.items {
		seen[it.Label] = true
	}
	var empty, folders []string
	for i, ok := range seen {
		if !ok {
			empty = append(empty, d.classes[i])
			folders = append(folders, filepath.Join(d.root, d.classes[i]))
		}
	}
	if len(empty) == 0 {
		return nil
	}
	if len(folders) > 3 {
		folders = append(folders[:3], fmt.Sprintf("and %d more", len(folders)-3))
	}
	return fmt.Errorf("%s: found no valid file for the classes %s (%s; the image extensions are %s), as torchvision's ImageFolder refuses: fill or remove those folders",
		d.root, strings.Join(empty, ", "), strings.Join(folders, ", "), strings.Join(ImageExtensions, " "))
}

// walkFiles appends the files under dir to out as torchvision's
// ImageFolder finds them (os.walk with followlinks=True): a symlink to a
// directory is walked into, anything else that is not a directory (a
// regular file, a symlink to one, a dangling symlink, a FIFO) is a file.
// Unlike os.walk it never enters a directory that is already on the path
// from the class folder (a symlink loop). ancestors holds that path.
// It reports whether dir held a directory (then out needs sortWalked).
func walkFiles(dir string, ancestors []fs.FileInfo, out *[]string) (nested bool, _ error) {
	st, err := os.Stat(dir)
	if err != nil {
		return false, err
	}
	for _, a := range ancestors {
		if os.SameFile(a, st) {
			return false, nil // a loop: this directory is being walked already
		}
	}
	ancestors = append(ancestors, st)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if e.IsDir() || e.Type()&fs.ModeSymlink != 0 && isDir(p) {
			nested = true
			if _, err := walkFiles(p, ancestors, out); err != nil {
				return nested, err
			}
			continue
		}
		*out = append(*out, p)
	}
	return nested, nil
}

// sortWalked puts files in torchvision's order: it sorts os.walk's (dir,
// subdirs, files) tuples, which orders directories by their path string,
// then sorts each directory's file names: sort by (directory, name).
func sortWalked(files []string) {
	slices.SortFunc(files, func(a, b string) int {
		if c := strings.Compare(filepath.Dir(a), filepath.Dir(b)); c != 0 {
			return c
		}
		return strings.Compare(filepath.Base(a), filepath.Base(b))
	})
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// Kind returns "imagefolder".
func (d *ImageFolder) Kind() string { return "imagefolder" }

// Classes returns the sorted class folder names.
func (d *ImageFolder) Classes() []string { return d.classes }

// Items returns the image files, class by class, in sorted path order.
func (d *ImageFolder) Items() []Item { return d.items }

// Ignored returns files inside class folders that lack an image extension.
func (d *ImageFolder) Ignored() []string { return d.ignored }

// Root returns the dataset's root directory.
func (d *ImageFolder) Root() string { return d.root }

// Load reads item i's file and checks that it is an image: its magic bytes
// name a format and, for JPEG, PNG and GIF, its header decodes (which also
// gives width and height), and a JPEG's scans are within what a decoder
// may spend on its blocks (jpegscan.Check: a scan bomb is damage).
func (d *ImageFolder) Load(i int) (Sample, error) {
	it := d.items[i]
	p := filepath.Join(d.root, filepath.FromSlash(it.Key))
	data, err := ReadFile(p, 0)
	if err != nil {
		return Sample{}, err
	}
	s := Sample{Item: it, Data: data, Format: Sniff(data)}
	s.Size = int64(len(data))
	switch s.Format {
	case "":
		return s, fmt.Errorf("%s: %w: unknown format (%d bytes)", p, ErrNotImage, len(data))
	case "jpeg", "png", "gif":
		cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			return s, fmt.Errorf("%s: %w: %v", p, ErrNotImage, err)
		}
		s.Width, s.Height = cfg.Width, cfg.Height
		if err := jpegscan.Check(data); err != nil {
			return s, fmt.Errorf("%s: %w", p, err) // a scan bomb
		}
	}
	return s, nil
}

// ClassOf returns the class folder of a key, the first path element.
func ClassOf(key string) string {
	if i := strings.IndexByte(key, '/'); i >= 0 {
		return key[:i]
	}
	return path.Dir(key)
}
