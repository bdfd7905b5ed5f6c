package source

import (
	"path"
	"slices"
	"strings"
)

// A tar of an ImageFolder tree (members class/x.jpg, or ./class/x.jpg as
// tar writes them from the root, or root/class/x.jpg with the root
// folder in the tar) carries its labels in its member folders, not in
// .cls or .json members: it reads as that ImageFolder.

// folderLabels labels the samples of a tar of an ImageFolder by their
// class folders and puts them in torchvision's ImageFolder order: classes
// sorted, then the files of each as os.walk finds them, sorted (the tar's
// order is whatever its writer met). It applies when no sample has a
// label member and every image member lies in a folder; samples without
// an image (a LICENSE.txt in a class folder) are left out, as
// ImageFolder leaves out files of other extensions. It reports whether
// it applied.
func (d *WDS) folderLabels() bool {
	if len(d.samples) == 0 {
		return false
	}
	names := make([]string, len(d.samples))
	for i := range d.samples {
		s := &d.samples[i]
		if !s.noLabel {
			return false // labelled (or damaged labels): a WebDataset
		}
		if s.img < 0 {
			continue
		}
		n := s.members[s.img].name
		if n == "" { // listed by a v1.1 index: the key and extension
			n = d.items[i].Key
		}
		n = strings.TrimPrefix(path.Clean("/"+n), "/")
		if !strings.Contains(n, "/") {
			return false // an image outside any folder: no class
		}
		names[i] = n
	}
	// The root folder itself in the tar: every image under one first
	// folder that holds only folders of images.
	first, rooted := "", true
	for _, n := range names {
		if n == "" {
			continue
		}
		parts := strings.SplitN(n, "/", 3)
		if len(parts) < 3 || (first != "" && parts[0] != first) {
			rooted = false
			break
		}
		first = parts[0]
	}
	var keep []int
	classOf := map[string]bool{}
	for i, n := range names {
		if n == "" {
			continue
		}
		if rooted {
			n = n[len(first)+1:]
			names[i] = n
		}
		classOf[n[:strings.IndexByte(n, '/')]] = true
		keep = append(keep, i)
	}
	if len(keep) == 0 {
		return false
	}
	d.classes = slices.Sorted(func(yield func(string) bool) {
		for c := range classOf {
			if !yield(c) {
				return
			}
		}
	})
	label := func(n string) int {
		i, _ := slices.BinarySearch(d.classes, n[:strings.IndexByte(n, '/')])
		return i
	}
	// torchvision's order: class, then (directory, name) within it.
	slices.SortStableFunc(keep, func(a, b int) int {
		na, nb := names[a], names[b]
		if c := label(na) - label(nb); c != 0 {
			return c
		}
		if c := strings.Compare(path.Dir(na), path.Dir(nb)); c != 0 {
			return c
		}
		return strings.Compare(path.Base(na), path.Base(nb))
	})
	samples := make([]wdsSample, 0, len(keep))
	items := make([]Item, 0, len(keep))
	for _, i := range keep {
		s := d.samples[i]
		s.noLabel, s.badLbl = false, ""
		it := d.items[i]
		it.Key, it.Label = names[i], label(names[i])
		samples = append(samples, s)
		items = append(items, it)
	}
	d.samples, d.items = samples, items
	return true
}
