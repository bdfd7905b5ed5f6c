package augment

import (
	"fmt"
	"testing"

	"github.com/faster-training/faster/imgcodec"
)

// benchSource is a 500x375 RGB picture (ImageNet's typical size) made from
// the committed photograph.
func benchSource(b *testing.B) *imgcodec.Image {
	b.Helper()
	photo := loadImage(b, "testdata/photo.png")
	src := NewImage(500, 375, 3)
	var r Resizer
	if err := r.Resize(src, photo, Triangle); err != nil {
		b.Fatal(err)
	}
	return src
}

// kernelCases are the resizes the training and resize paths do most: a
// random-resized-crop of about half the area to 224x224, an exact 2x
// reduction, and the dataset downscaler's shorter edge to 256.
var kernelCases = []struct {
	name string
	box  Box
	w, h int
}{
	{"rrc320to224", Box{60, 20, 380, 340}, 224, 224},
	{"half448to224", Box{26, 0, 474, 375}, 224, 188},
	{"short500x375to256", Box{0, 0, 500, 375}, 341, 256},
}

func BenchmarkResize(b *testing.B) {
	src := benchSource(b)
	for _, f := range []Filter{Triangle, Area, Bicubic, Nearest} {
		for _, c := range kernelCases {
			b.Run(fmt.Sprintf("%v/%s", f, c.name), func(b *testing.B) {
				var r Resizer
				dst := NewImage(c.w, c.h, 3)
				b.SetBytes(int64(c.w * c.h * 3))
				b.ReportAllocs()
				for b.Loop() {
					if err := r.ResizeBox(dst, src, c.box, f, true); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "images/s")
			})
		}
	}
}

func BenchmarkNormalizeCHW(b *testing.B) {
	n := NewNormalizer(ImageNetMean, ImageNetStd)
	src := NewImage(224, 224, 3)
	dst := make([]float32, 3*224*224)
	b.SetBytes(224 * 224 * 3)
	b.ReportAllocs()
	for b.Loop() {
		if err := n.CHW(dst, src); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "images/s")
}

// BenchmarkTrainTransform is everything after decoding for one sample of
// torchvision's train recipe on a 500x375 decoded picture: plan (RRC +
// flip), resize of the crop into 224x224 (Pillow's filter), normalise to
// float32 CHW. "kernels=default" resizes as Resizer does (the SIMD kernels
// where there are), "kernels=go" with the Go kernels.
func BenchmarkTrainTransform(b *testing.B) {
	src := benchSource(b)
	for _, goOnly := range []bool{false, true} {
		name := "kernels=default"
		if goOnly {
			name = "kernels=go"
		}
		b.Run(name, func(b *testing.B) {
			tr := TrainTransform{Width: 224, Height: 224, MaxScaleDenom: 1}
			n := NewNormalizer(ImageNetMean, ImageNetStd)
			var a Augmenter
			a.goSrc = goOnly
			dst := NewImage(224, 224, 3)
			out := make([]float32, 3*224*224)
			b.ReportAllocs()
			i := uint64(0)
			for b.Loop() {
				p := tr.Plan(a.RNG(1, i), src.Width, src.Height)
				i++
				if err := a.Apply(dst, src, p); err != nil {
					b.Fatal(err)
				}
				if err := n.CHW(out, dst); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "images/s")
		})
	}
}
