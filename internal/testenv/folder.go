package testenv

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"testing"
)

// WriteFolder writes a small ImageFolder tree for a test: classes folders
// c0, c1, … of per JPEGs each (48+i × 40 pixels, patterned by class and
// index, so every image differs), and returns its root.
func WriteFolder(t testing.TB, classes, per int) string {
	t.Helper()
	root := t.TempDir()
	for c := range classes {
		d := filepath.Join(root, fmt.Sprintf("c%d", c))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range per {
			img := image.NewRGBA(image.Rect(0, 0, 48+i, 40))
			for y := range 40 {
				for x := range 48 + i {
					img.Set(x, y, color.RGBA{uint8(x * 5), uint8(y * c * 9), uint8(i * 20), 255})
				}
			}
			var b bytes.Buffer
			if err := jpeg.Encode(&b, img, nil); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("%02d.jpg", i)), b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// WriteIDX writes a small Fashion-MNIST-shaped IDX directory (named
// fashion-toy, so it is normalised as Fashion-MNIST) for a test: n train
// and n t10k images of 28×28, of 4 classes (a bright band at row k/7),
// and returns it.
func WriteIDX(t testing.TB, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fashion-toy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for s, prefix := range []string{"train", "t10k"} {
		img := []byte{0, 0, 8, 3, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n), 0, 0, 0, 28, 0, 0, 0, 28}
		lab := []byte{0, 0, 8, 1, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
		for i := range n {
			k := (i*7 + s) % 4
			for y := range 28 {
				for x := range 28 {
					v := (i*31 + y*17 + x*13) % 60
					if y/7 == k {
						v += 180
					}
					img = append(img, byte(v))
				}
			}
			lab = append(lab, byte(k))
		}
		for name, b := range map[string][]byte{prefix + "-images-idx3-ubyte": img, prefix + "-labels-idx1-ubyte": lab} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}
