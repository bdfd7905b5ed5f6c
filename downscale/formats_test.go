package downscale

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/internal/testenv"
	"github.com/faster-training/faster/source"
)

// TestResizeFormatsAsPIL: `faster resize` over a tree of every format
// torchvision's ImageFolder lists (WebP, BMP, TIFF, PPM, PGM, 16-bit PNG,
// written by PIL from photographs: imgcodec/testdata/pilformats.py) writes,
// for each, the pixels it writes for a PNG of PIL's pixels of that file
// under the same name (resized, or copied when small enough): the decode
// is PIL's, the rest the same path (issue
// 39 item 2; before: every WebP, BMP, TIFF and PNM failed, "unknown image
// format").
func TestResizeFormatsAsPIL(t *testing.T) {
	py := testenv.PythonWith(t, "PIL", "numpy")
	photos := testenv.Photos(t, 3)[:3]
	gen := t.TempDir()
	args := append([]string{filepath.Join("..", "imgcodec", "testdata", "pilformats.py"), gen}, photos...)
	if b, err := exec.Command(py, args...).CombinedOutput(); err != nil {
		t.Fatalf("pilformats.py: %v\n%s", err, b)
	}
	src, ref := t.TempDir(), t.TempDir()
	ents, _ := os.ReadDir(gen)
	n := 0
	for _, e := range ents {
		name := e.Name()
		if !source.IsImageName(name) || strings.HasSuffix(name, ".png") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(gen, name))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := imgcodec.DecodeConfig(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err) // the decoder's own tests say more
		}
		os.WriteFile(filepath.Join(src, name), data, 0o644)
		os.WriteFile(filepath.Join(ref, name), pilPNG(t, filepath.Join(gen, name+".rgb"), cfg.Components == 1), 0o644)
		n++
	}
	o := Options{MaxSize: 100, Workers: 1}
	outs := map[string]string{}
	for _, dir := range []string{src, ref} {
		dst := filepath.Join(t.TempDir(), "out")
		res, err := Run(context.Background(), dir, dst, o)
		if err != nil {
			t.Fatal(err)
		}
		if res.Failed != 0 || res.Images != n {
			t.Fatalf("%s: %d images, %d failed (%v), want %d and 0", dir, res.Images, res.Failed, res.Failures, n)
		}
		outs[dir] = dst
	}
	for _, e := range ents {
		name := e.Name()
		if _, err := os.Stat(filepath.Join(src, name)); err != nil {
			continue
		}
		got, _ := os.ReadFile(filepath.Join(outs[src], name))
		want, _ := os.ReadFile(filepath.Join(outs[ref], name))
		g, err1 := imgcodec.Decode(got, nil)
		w, err2 := imgcodec.Decode(want, nil)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: the outputs decode: %v, %v", name, err1, err2)
		}
		if g.Width != w.Width || g.Height != w.Height || !bytes.Equal(g.Pix, w.Pix) {
			t.Errorf("%s: resized to %dx%d, the PNG of PIL's pixels to %dx%d, not the same pixels", name, g.Width, g.Height, w.Width, w.Height)
		}
		if min(g.Width, g.Height) > o.MaxSize {
			t.Errorf("%s: %dx%d, shorter edge above %d", name, g.Width, g.Height, o.MaxSize)
		}
		g.Release()
		w.Release()
	}
	t.Logf("%d files resized as the PNGs of PIL's pixels", n)
}

// pilPNG is a PNG of the pixels pilformats.py wrote for a file (gray when
// the file is).
func pilPNG(t *testing.T, rgbPath string, gray bool) []byte {
	b, err := os.ReadFile(rgbPath)
	if err != nil {
		t.Fatal(err)
	}
	var w, h int
	nl := bytes.IndexByte(b, '\n')
	fmt.Sscanf(string(b[:nl]), "%d %d", &w, &h)
	px := b[nl+1:]
	var m image.Image
	if gray {
		g := image.NewGray(image.Rect(0, 0, w, h))
		for i := range g.Pix {
			g.Pix[i] = px[3*i]
		}
		m = g
	} else {
		c := image.NewNRGBA(image.Rect(0, 0, w, h))
		for i := 0; i < w*h; i++ {
			c.Pix[4*i], c.Pix[4*i+1], c.Pix[4*i+2], c.Pix[4*i+3] = px[3*i], px[3*i+1], px[3*i+2], 255
		}
		m = c
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, m); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
