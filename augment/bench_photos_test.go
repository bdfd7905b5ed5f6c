package augment

import (
	"bytes"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"testing"

	"github.com/faster-training/faster/imgcodec"
)

// BenchmarkDecodeTrain is the whole per-sample path of torchvision's train
// recipe on real JPEG photographs (the set of bench/photos.py, in
// FASTER_PHOTOS): decode, RandomResizedCrop(224) + flip, normalise to
// float32 CHW. It decodes with Go's image/jpeg (full size, as it cannot
// scale or crop) until imgcodec's libjpeg-turbo decoder lands; compare
// with bench/peer_torchvision.py on one core (bench/run_augment.sh).
func BenchmarkDecodeTrain(b *testing.B) {
	dir := os.Getenv("FASTER_PHOTOS")
	if dir == "" {
		dir = "/tmp/faster-photos"
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.JPEG"))
	if len(files) == 0 {
		b.Skipf("no photos in %s: run bench/photos.py", dir)
	}
	var blobs [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		blobs = append(blobs, data)
	}
	tr := TrainTransform{Width: 224, Height: 224, MaxScaleDenom: 1}
	n := NewNormalizer(ImageNetMean, ImageNetStd)
	var a Augmenter
	dst := NewImage(224, 224, 3)
	out := make([]float32, 3*224*224)
	rgb := &imgcodec.Image{}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		data := blobs[i%len(blobs)]
		cfg, err := jpeg.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		p := tr.Plan(a.RNG(7, uint64(i)), cfg.Width, cfg.Height)
		i++
		m, err := jpeg.Decode(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		yc, ok := m.(*image.YCbCr)
		if !ok {
			b.Fatalf("%T", m)
		}
		rgb.Width, rgb.Height, rgb.Channels, rgb.Stride = cfg.Width, cfg.Height, 3, cfg.Width*3
		rgb.Pix = grow(rgb.Pix, cfg.Width*cfg.Height*3)
		FromYCbCr(rgb, yc)
		if err := a.Apply(dst, rgb, p); err != nil {
			b.Fatal(err)
		}
		if err := n.CHW(out, dst); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "images/s")
}
