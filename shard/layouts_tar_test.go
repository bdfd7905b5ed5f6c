package shard

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
	"github.com/faster-training/faster/source"
)

// pyTarFolder tars an ImageFolder's files as Python's tarfile does, in
// the order given (not sorted), each under prefix.
const pyTarFolder = `
import sys, tarfile, os
out, root, prefix = sys.argv[1:4]
with tarfile.open(out, "w") as t:
    for rel in sys.argv[4:]:
        t.add(os.path.join(root, rel), arcname=prefix + rel)
`

// TestTarOfImageFolder: a .tar of an ImageFolder tree (members
// class/x.jpg, as tar writes them from the root, "./class/x.jpg", or with
// the root folder as every member's first folder) reads as that
// ImageFolder: torchvision's classes, labels, order, and each image's
// bytes, whatever the order of the members in the tar.
func TestTarOfImageFolder(t *testing.T) {
	py := testenv.PythonWith(t, "torchvision")
	parent := t.TempDir()
	root := filepath.Join(parent, "flowers")
	rels := []string{"tulip/b.jpg", "daisy/z.JPEG", "tulip/a.png.jpg", "rose/n/1.jpg", "rose/m.jpg", "daisy/a.jpg", "rose/a/2.jpg"}
	writeJPEGs(t, root, rels...)
	if err := os.WriteFile(filepath.Join(root, "rose", "LICENSE.txt"), []byte("no image"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := torchvisionImageFolder(t, root)
	tars := t.TempDir()
	for _, c := range []struct{ name, prefix string }{{"plain.tar", ""}, {"dot.tar", "./"}, {"rooted.tar", "flowers/"}} {
		out := filepath.Join(tars, c.name)
		args := append([]string{"-c", pyTarFolder, out, root, c.prefix}, append(rels, "rose/LICENSE.txt")...)
		if b, err := exec.Command(py, args...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		ds := open(t, out, OpenOptions{})
		sameListing(t, c.name, ds, want)
		x := ds.(source.Indexed)
		for i := range x.Len() {
			r, err := x.Record(i)
			if err != nil {
				t.Fatal(err)
			}
			file, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(r.Key)))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(r.Data, file) {
				t.Fatalf("%s: %s: not the file's bytes", c.name, r.Key)
			}
		}
	}
	// GNU tar from the root: "./class/x.jpg" in directory order.
	if _, err := exec.LookPath("tar"); err == nil {
		out := filepath.Join(tars, "gnu.tar")
		if b, err := exec.Command("tar", "-C", root, "-cf", out, ".").CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		sameListing(t, "gnu.tar", open(t, out, OpenOptions{}), want)
	}
	// --unlabeled still reads every image as label 0.
	ds := open(t, filepath.Join(tars, "plain.tar"), OpenOptions{Unlabeled: true})
	if r, err := ds.(source.Indexed).Record(0); err != nil || r.Label != 0 {
		t.Fatalf("unlabeled: %v, label %d", err, r.Label)
	}
}
