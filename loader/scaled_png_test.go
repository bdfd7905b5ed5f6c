package loader

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A scaled decode only pays on a JPEG (libjpeg scales in the DCT domain);
// a PNG decodes at full size whatever the scale, so the loader's train
// crop and its fast eval decode take the full path there: the same pixels
// as FullDecode, which are PIL's (before: the PNG was box-downscaled by
// 2, 4 or 8 and then resized, other pixels than torchvision's for no
// saved decoding). A JPEG keeps its scaled decode (rows differ).
func TestScaledDecodeOnlyForJPEG(t *testing.T) {
	folder, jpegs := t.TempDir(), t.TempDir()
	for c, name := range []string{"ant", "bee"} {
		os.MkdirAll(filepath.Join(folder, name), 0o755)
		os.MkdirAll(filepath.Join(jpegs, name), 0o755)
		for i := range 4 {
			w, h := 240+i*13, 180+c*11
			img := image.NewRGBA(image.Rect(0, 0, w, h))
			for y := range h {
				for x := range w {
					v := uint8((x*x + 3*y*i + c*57) % 251)
					img.Set(x, y, color.RGBA{v, uint8(x ^ y), uint8(y * 3), 255})
				}
			}
			var b bytes.Buffer
			if err := png.Encode(&b, img); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(folder, name, fmt.Sprintf("%d.png", i)), b.Bytes(), 0o644)
			b.Reset()
			if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 95}); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(jpegs, name, fmt.Sprintf("%d.jpg", i)), b.Bytes(), 0o644)
		}
	}
	rows := func(dir string, o Options) [][]byte {
		l, err := Open(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		return runEpoch(t, l, 0).rows
	}
	for _, tc := range []struct {
		name       string
		fast, full Options
	}{
		{"train", Options{Resolution: 24, Batch: 4, Seed: 3}, Options{Resolution: 24, Batch: 4, Seed: 3, FullDecode: true}},
		{"eval", Options{Resolution: 24, Batch: 4, Transform: Eval, FastEvalDecode: true}, Options{Resolution: 24, Batch: 4, Transform: Eval}},
	} {
		if a, b := rows(folder, tc.fast), rows(folder, tc.full); len(a) != 8 || !slices.EqualFunc(a, b, bytes.Equal) {
			t.Errorf("%s: PNG rows of the scaled-decode path differ from the full decode's (%d rows)", tc.name, len(a))
		}
		if a, b := rows(jpegs, tc.fast), rows(jpegs, tc.full); slices.EqualFunc(a, b, bytes.Equal) {
			t.Errorf("%s: JPEG rows equal with and without scaled decode: the test's pictures are too small to scale", tc.name)
		}
	}
}
