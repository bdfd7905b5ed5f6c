package augment

import (
	"testing"

	"github.com/faster-training/faster/imgcodec"
)

func TestNormalizerLayouts(t *testing.T) {
	n := NewNormalizer(ImageNetMean, ImageNetStd)
	src := NewImage(5, 3, 3)
	for i := range src.Pix {
		src.Pix[i] = uint8(i * 17)
	}
	chw := make([]float32, 45)
	hwc := make([]float32, 45)
	if err := n.CHW(chw, src); err != nil {
		t.Fatal(err)
	}
	if err := n.HWC(hwc, src); err != nil {
		t.Fatal(err)
	}
	for y := range 3 {
		for x := range 5 {
			for c := range 3 {
				v := src.Pix[y*src.Stride+x*3+c]
				want := (float32(v)/255 - ImageNetMean[c]) / ImageNetStd[c]
				if got := chw[c*15+y*5+x]; got != want {
					t.Fatalf("CHW (%d,%d,%d) = %v, want %v", c, y, x, got, want)
				}
				if got := hwc[(y*5+x)*3+c]; got != want {
					t.Fatalf("HWC (%d,%d,%d) = %v, want %v", y, x, c, got, want)
				}
			}
		}
	}
	gray := NewImage(2, 2, 1)
	gray.Pix = []uint8{0, 255, 128, 1}
	out := make([]float32, 4)
	if err := n.CHW(out, gray); err != nil {
		t.Fatal(err)
	}
	if want := (float32(1) - ImageNetMean[0]) / ImageNetStd[0]; out[1] != want {
		t.Errorf("gray 255 -> %v, want %v", out[1], want)
	}
	if err := n.CHW(make([]float32, 44), src); err == nil {
		t.Error("short dst accepted")
	}
}

// TestApplyScaledMatchesFull checks that a plan's scaled, cropped decode
// gives nearly the picture of the same crop taken from the full image (the
// DCT scaling is simulated by an area downscale, as the pure-Go decoder
// does), and that Apply accepts the full image too.
func TestApplyScaledMatchesFull(t *testing.T) {
	full := loadImage(t, "testdata/photo.png")
	tr := TrainTransform{Width: 32, Height: 32}
	var a Augmenter
	scaled := 0
	for i := range uint64(40) {
		p := tr.Plan(a.RNG(9, i), full.Width, full.Height)
		d := p.Decode.ScaleDenom
		if d > 1 {
			scaled++
		}
		sw, sh := (full.Width+d-1)/d, (full.Height+d-1)/d
		small := NewImage(sw, sh, 3)
		if err := a.ResizeBox(small, full, Box{0, 0, float64(sw * d), float64(sh * d)}, Area, false); err != nil {
			// the last scaled pixel may reach past the image; use the image
			if err := a.Resize(small, full, Area); err != nil {
				t.Fatal(err)
			}
		}
		c := p.Decode.Crop
		dec := SubImage(small, c.Min.X, c.Min.Y, c.Max.X, c.Max.Y)
		got, want := NewImage(32, 32, 3), NewImage(32, 32, 3)
		if err := a.Apply(got, &dec, p); err != nil {
			t.Fatal(err)
		}
		if err := a.Apply(want, full, p); err != nil {
			t.Fatal(err)
		}
		if q := psnr(got, want); q < 28 {
			t.Errorf("sample %d (denom %d, crop %v): scaled path PSNR %.1f dB against full", i, d, p.Crop, q)
		}
	}
	if scaled == 0 {
		t.Error("no plan used a scaled decode")
	}
	p := tr.Plan(a.RNG(9, 0), full.Width, full.Height)
	if err := a.Apply(NewImage(32, 32, 3), NewImage(7, 7, 3), p); err == nil {
		t.Error("Apply accepted an image of neither size")
	}
}

// TestEdgeSizes runs the whole path on tiny, odd and gray images.
func TestEdgeSizes(t *testing.T) {
	var a Augmenter
	n := NewNormalizer(ImageNetMean, ImageNetStd)
	for _, sz := range [][3]int{{1, 1, 3}, {1, 1, 1}, {3, 1, 3}, {1, 5, 1}, {17, 9, 3}, {9, 17, 1}} {
		src := NewImage(sz[0], sz[1], sz[2])
		for i := range src.Pix {
			src.Pix[i] = uint8(i * 31)
		}
		for _, f := range []Filter{Triangle, Area} {
			tr := TrainTransform{Width: 7, Height: 5, Filter: f}
			p := tr.Plan(a.RNG(1, 2), sz[0], sz[1])
			dst := NewImage(7, 5, sz[2])
			if err := a.Apply(dst, src, p); err != nil {
				t.Fatalf("%v %v: %v", sz, f, err)
			}
			if err := n.CHW(make([]float32, 7*5*sz[2]), dst); err != nil {
				t.Fatal(err)
			}
			if sz[0] == 1 && sz[1] == 1 {
				for _, v := range dst.Pix {
					if v != src.Pix[0] && (sz[2] == 1 || v != src.Pix[1] && v != src.Pix[2]) {
						t.Fatalf("1x1 source gave %d", v)
					}
				}
			}
		}
	}
	_ = imgcodec.Image{}
}
