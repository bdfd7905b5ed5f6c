//go:build cgo

package loader

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/faster-training/faster/source"

	"github.com/faster-training/faster/internal/testenv"
)

// TestLMDBRawSameBatches: the same pixels as raw Caffe Datums (planar BGR,
// convert_imageset without --encoded) and as encoded PNG Datums, both
// written by Python's lmdb with the Datum protobuf written by hand, give
// bit-identical batches under the train recipe (the same random crops
// and flips, DCT-scale plans included: the raw pixels are box-downscaled
// as a PNG decode is) and the eval recipe; a gray image is a 1-channel
// raw Datum. The raw records reach the decode stage as pixels, never
// re-encoded.
func TestLMDBRawSameBatches(t *testing.T) {
	if err := exec.Command(testenv.Python, "-c", "import lmdb, PIL").Run(); err != nil {
		testenv.Missing(t, "python3-lmdb / python3-pil missing: %v", err)
	}
	dir := t.TempDir()
	var files []string
	for i := range 7 {
		w, h := 97+i*23, 71+i*17 // odd sizes: edge boxes of the 1/d scales are partial
		var img image.Image
		if i == 3 {
			g := image.NewGray(image.Rect(0, 0, w, h))
			for p := range g.Pix {
				g.Pix[p] = uint8(p*31 + p/w*7)
			}
			img = g
		} else {
			c := image.NewRGBA(image.Rect(0, 0, w, h))
			for y := range h {
				for x := range w {
					c.Set(x, y, color.RGBA{uint8(x*5 + i*40), uint8(y*9 + x*x), uint8((x ^ y) * 3), 255})
				}
			}
			img = c
		}
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, fmt.Sprintf("img%d.png", i))
		if err := os.WriteFile(f, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	enc, raw := filepath.Join(dir, "enc.lmdb"), filepath.Join(dir, "raw.lmdb")
	if out, err := exec.Command(testenv.Python, append([]string{"testdata/write_datums.py", enc, raw}, files...)...).CombinedOutput(); err != nil {
		t.Fatalf("write_datums.py: %v\n%s", err, out)
	}
	db, err := source.OpenLMDB(raw)
	if err != nil {
		t.Fatal(err)
	}
	r, err := db.Record(3)
	db.Close()
	if err != nil || !bytes.HasPrefix(r.Data, []byte("\x89RAW")) {
		t.Fatalf("a raw Datum's record: %.8q, %v; want its pixels as a raw-pixel image", r.Data, err)
	}
	batches := func(path string, tr Transform, epoch int) (keys []string, labels []int, data [][]byte) {
		t.Helper()
		l, err := Open(path, Options{Transform: tr, Resolution: 12, Batch: 3, Layout: U8HWC, Seed: 7, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		for b, err := range l.IterEpoch(context.Background(), epoch) {
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range b.Items[:b.Valid] {
				keys, labels = append(keys, it.Key), append(labels, it.Label)
			}
			data = append(data, bytes.Clone(b.Data))
			b.Release()
		}
		// The read stage's CPU work (the Datum parse, the copy) is
		// measured, so that the verdict can count it as CPU.
		for _, st := range l.Stats().Stages {
			if st.Name == "read" && threadCPU && (st.CPU <= 0 || st.CPU > st.Busy) {
				t.Errorf("%s: read stage CPU %v of busy %v: not measured", path, st.CPU, st.Busy)
			}
		}
		return keys, labels, data
	}
	for _, c := range []struct {
		tr    Transform
		epoch int
	}{{Train, 0}, {Train, 1}, {Eval, 0}} {
		ek, el, ed := batches(enc, c.tr, c.epoch)
		rk, rl, rd := batches(raw, c.tr, c.epoch)
		if fmt.Sprint(ek, el) != fmt.Sprint(rk, rl) || len(ek) != len(files) {
			t.Fatalf("%v epoch %d: raw keys %v labels %v, encoded %v %v", c.tr, c.epoch, rk, rl, ek, el)
		}
		for i := range ed {
			if !bytes.Equal(ed[i], rd[i]) {
				t.Errorf("%v epoch %d: batch %d differs between raw and encoded Datums of the same pixels", c.tr, c.epoch, i)
			}
		}
	}
}
