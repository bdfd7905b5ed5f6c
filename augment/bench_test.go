package augment

import (
	"fmt"
	"strings"
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

// BenchmarkOps prices each augmentation op on a 224x224 RGB picture (the
// committed photograph), as torchvision names it. Every iteration restores
// the picture first; "copy" is the price of that alone.
func BenchmarkOps(b *testing.B) {
	src := NewImage(224, 224, 3)
	var r Resizer
	if err := r.Resize(src, loadImage(b, "testdata/photo.png"), Triangle); err != nil {
		b.Fatal(err)
	}
	jp := JitterParams{Order: [4]uint8{2, 0, 3, 1}, Brightness: 1.3, Contrast: 0.7, Saturation: 1.4, Hue: -0.08, Has: [4]bool{true, true, true, true}}
	ops := []struct {
		name string
		run  func(s *Scratch, m *imgcodec.Image) error
	}{
		{"copy", func(*Scratch, *imgcodec.Image) error { return nil }},
		{"adjust_brightness", func(_ *Scratch, m *imgcodec.Image) error { return AdjustBrightness(m, 1.3) }},
		{"adjust_contrast", func(_ *Scratch, m *imgcodec.Image) error { return AdjustContrast(m, 0.7) }},
		{"adjust_saturation", func(_ *Scratch, m *imgcodec.Image) error { return AdjustSaturation(m, 1.4) }},
		{"adjust_hue", func(_ *Scratch, m *imgcodec.Image) error { return AdjustHue(m, -0.08) }},
		{"ColorJitter", func(_ *Scratch, m *imgcodec.Image) error { return ApplyJitter(m, jp) }},
		{"rgb_to_grayscale", func(_ *Scratch, m *imgcodec.Image) error { return ToGrayscale(m) }},
		{"GaussianBlur23", func(s *Scratch, m *imgcodec.Image) error { return s.GaussianBlur(m, 23, 23, 1.5, 1.5) }},
		{"rotate/nearest", func(s *Scratch, m *imgcodec.Image) error { return s.Rotate(m, 17, WarpNearest, nil, nil) }},
		{"rotate/bilinear", func(s *Scratch, m *imgcodec.Image) error { return s.Rotate(m, 17, WarpBilinear, nil, []float64{0}) }},
		{"affine/bilinear", func(s *Scratch, m *imgcodec.Image) error {
			return s.Affine(m, AffineParams{Angle: 12, Translate: [2]int{5, -9}, Scale: 1.1, ShearX: 8}, WarpBilinear, nil, nil)
		}},
		{"rotate/bicubic", func(s *Scratch, m *imgcodec.Image) error { return s.Rotate(m, 17, WarpBicubic, nil, []float64{0}) }},
		{"affine/bicubic", func(s *Scratch, m *imgcodec.Image) error {
			return s.Affine(m, AffineParams{Angle: 12, Translate: [2]int{5, -9}, Scale: 1.1, ShearX: 8}, WarpBicubic, nil, nil)
		}},
		{"adjust_sharpness", func(s *Scratch, m *imgcodec.Image) error { return s.AdjustSharpness(m, 1.5) }},
		{"posterize", func(_ *Scratch, m *imgcodec.Image) error { return Posterize(m, 4) }},
		{"solarize", func(_ *Scratch, m *imgcodec.Image) error { return Solarize(m, 128) }},
		{"autocontrast", func(_ *Scratch, m *imgcodec.Image) error { return AutoContrast(m) }},
		{"equalize", func(_ *Scratch, m *imgcodec.Image) error { return Equalize(m) }},
		{"Cutout16", func(_ *Scratch, m *imgcodec.Image) error { return (&Cutout{Size: 16}).Apply(m, 50, 60) }},
		// On PIL images (an op before the Compose's ToTensor): PIL's arithmetic.
		{"pil/adjust_brightness", func(s *Scratch, m *imgcodec.Image) error {
			return s.applyJitterPIL(m, JitterParams{Order: [4]uint8{0, 1, 2, 3}, Brightness: 1.3, Has: [4]bool{true}})
		}},
		{"pil/adjust_contrast", func(s *Scratch, m *imgcodec.Image) error { return s.pilContrast(m, 0.7) }},
		{"pil/adjust_saturation", func(s *Scratch, m *imgcodec.Image) error { return s.pilColor(m, 1.4) }},
		{"pil/adjust_hue", func(_ *Scratch, m *imgcodec.Image) error { return pilHue(m, -0.08) }},
		{"pil/ColorJitter", func(s *Scratch, m *imgcodec.Image) error { return s.applyJitterPIL(m, jp) }},
		{"pil/rgb_to_grayscale", func(_ *Scratch, m *imgcodec.Image) error { return pilGray(m) }},
		{"pil/rotate/bilinear", func(s *Scratch, m *imgcodec.Image) error {
			return s.Rotate(m, 17, WarpBilinearPIL, nil, []float64{0})
		}},
		{"pil/affine/bilinear", func(s *Scratch, m *imgcodec.Image) error {
			return s.Affine(m, AffineParams{Angle: 12, Translate: [2]int{5, -9}, Scale: 1.1, ShearX: 8}, WarpBilinearPIL, nil, nil)
		}},
		{"pil/adjust_sharpness", func(s *Scratch, m *imgcodec.Image) error { return s.pilSharpness(m, 1.5) }},
		{"pil/autocontrast", func(_ *Scratch, m *imgcodec.Image) error { return pilAutoContrast(m) }},
	}
	for _, op := range ops {
		b.Run(op.name, func(b *testing.B) {
			var s Scratch
			m := NewImage(224, 224, 3)
			b.ReportAllocs()
			for b.Loop() {
				copy(m.Pix, src.Pix)
				if err := op.run(&s, m); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "images/s")
		})
	}
	for _, ta := range []TrivialAugmentWide{{}, {Interp: WarpBilinear}, {Interp: WarpBilinearPIL}} {
		name := "TrivialAugmentWide"
		if ta.Interp != WarpNearest {
			name += "/" + strings.ReplaceAll(ta.Interp.String(), " ", "")
		}
		b.Run(name, func(b *testing.B) {
			var s Scratch
			m := NewImage(224, 224, 3)
			b.ReportAllocs()
			i := uint64(0)
			for b.Loop() {
				copy(m.Pix, src.Pix)
				if err := ta.Apply(&s, m, ta.Draw(NewRNG(1, i))); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "images/s")
		})
	}
	b.Run("AugMix", func(b *testing.B) {
		var s Scratch
		am := AugMix{Interp: WarpBilinear}
		m := NewImage(224, 224, 3)
		b.ReportAllocs()
		i := uint64(0)
		for b.Loop() {
			copy(m.Pix, src.Pix)
			if err := am.Apply(&s, m, am.Draw(NewRNG(1, i), 224, 224)); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "images/s")
	})
	b.Run("RandomErasing", func(b *testing.B) {
		re := RandomErasing{P: 1}
		t := make([]float32, 3*224*224)
		var a Augmenter
		b.ReportAllocs()
		i := uint64(0)
		for b.Loop() {
			if err := Erase(t, 3, 224, 224, re.Draw(a.RNG(1, i), 3, 224, 224, nil)); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "images/s")
	})
}
