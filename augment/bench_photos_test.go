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
// float32 CHW. "imgcodec" decodes with imgcodec (libjpeg-turbo under cgo:
// only the crop, at the smallest DCT scale that covers 224x224);
// "stdjpeg" decodes the full image with Go's image/jpeg. Compare with
// bench/peer_torchvision.py on one core (bench/run_augment.sh).
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
	n := NewNormalizer(ImageNetMean, ImageNetStd)
	out := make([]float32, 3*224*224)
	b.Run("imgcodec="+imgcodec.Backend, func(b *testing.B) {
		tr := TrainTransform{Width: 224, Height: 224}
		var a Augmenter
		dst := NewImage(224, 224, 3)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			data := blobs[i%len(blobs)]
			cfg, err := imgcodec.DecodeConfig(data)
			if err != nil {
				b.Fatal(err)
			}
			p := tr.Plan(a.RNG(7, uint64(i)), cfg.Width, cfg.Height)
			i++
			img, err := imgcodec.Decode(data, &p.Decode)
			if err != nil {
				b.Fatal(err)
			}
			if err := a.Apply(dst, img, p); err != nil {
				b.Fatal(err)
			}
			img.Release()
			if err := n.CHW(out, dst); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "images/s")
	})
	b.Run("stdjpeg", func(b *testing.B) {
		tr := TrainTransform{Width: 224, Height: 224, MaxScaleDenom: 1}
		var a Augmenter
		dst := NewImage(224, 224, 3)
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
	})
}
