package source

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// ListImageFolder gives OpenImageFolder's classes, keys, labels and order
// without the sizes, on a tree with nested folders, a symlinked folder
// and files out of name order in the walk.
func TestListImageFolderSameAsOpen(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"b/2.jpg", "b/10.jpg", "b/sub/a.jpg", "b/sub2/z/0.png", "b/a.JPEG", "a/x.jpg", "a/readme.txt", "c/0.jpg"} {
		p := filepath.Join(root, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("12345"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "c"), filepath.Join(root, "a", "linked")); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{root, root + "/"} {
		full, err := OpenImageFolder(r)
		if err != nil {
			t.Fatal(err)
		}
		list, err := ListImageFolder(r)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(full.Classes(), list.Classes()) {
			t.Fatalf("classes %v vs %v", full.Classes(), list.Classes())
		}
		fi, li := full.Items(), list.Items()
		if len(fi) != 8 || len(fi) != len(li) {
			t.Fatalf("%d items opened, %d listed, want 8", len(fi), len(li))
		}
		for i := range fi {
			if fi[i].Key != li[i].Key || fi[i].Label != li[i].Label || fi[i].Size != 5 || li[i].Size != 0 {
				t.Errorf("item %d: opened %+v, listed %+v", i, fi[i], li[i])
			}
		}
	}
}
