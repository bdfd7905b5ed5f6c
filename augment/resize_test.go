package augment

import (
	"encoding/json"
	"image"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/faster-training/faster/imgcodec"
)

type goldenCase struct {
	Name   string
	Src    string
	Filter string
	W, H   int
	Box    []float64
	Full   []int // with View: resize to Full, keep View (ResizeView)
	View   []int
}

// TestResizeGolden compares every filter with outputs of the libraries
// they follow (testdata/gen.py): OpenCV's INTER_AREA within 45 dB PSNR and
// Pillow's BILINEAR, BICUBIC and NEAREST exactly, whole, in a box, and as
// a view of a larger resize (Resize then CenterCrop).
func TestResizeGolden(t *testing.T) {
	data, err := os.ReadFile("testdata/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []goldenCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	var r Resizer
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			src := loadImage(t, filepath.Join("testdata", c.Src))
			want := loadImage(t, filepath.Join("testdata", "golden", c.Name+".png"))
			dst := NewImage(c.W, c.H, src.Channels)
			f, err := ParseFilter(c.Filter)
			if err != nil {
				t.Fatal(err)
			}
			box := Box{0, 0, float64(src.Width), float64(src.Height)}
			if c.Box != nil {
				box = Box{c.Box[0], c.Box[1], c.Box[2], c.Box[3]}
			}
			if c.View != nil {
				err = r.ResizeView(dst, src, box, c.Full[0], c.Full[1], image.Rect(c.View[0], c.View[1], c.View[2], c.View[3]), f, false)
			} else {
				err = r.ResizeBox(dst, src, box, f, false)
			}
			if err != nil {
				t.Fatal(err)
			}
			p, md := psnr(dst, want), maxDiff(dst, want)
			t.Logf("PSNR %.1f dB, max diff %d", p, md)
			switch f {
			case Triangle, Bicubic, Nearest:
				if md != 0 {
					t.Errorf("differs from Pillow: max diff %d, PSNR %.1f dB", md, p)
				}
			case Area:
				if p < 45 {
					t.Errorf("PSNR %.1f dB against OpenCV, want >= 45 (max diff %d)", p, md)
				}
			}
		})
	}
}

// TestResizeFlat checks that a flat image stays exactly flat through every
// filter, size and flip (the fixed-point weights sum to one).
func TestResizeFlat(t *testing.T) {
	var r Resizer
	for _, ch := range []int{1, 3} {
		src := NewImage(37, 23, ch)
		for i := range src.Pix {
			src.Pix[i] = 200
		}
		for _, f := range []Filter{Triangle, Area, Bicubic, Nearest} {
			for _, sz := range [][2]int{{1, 1}, {5, 3}, {37, 23}, {36, 22}, {80, 50}, {12, 40}} {
				for _, flip := range []bool{false, true} {
					dst := NewImage(sz[0], sz[1], ch)
					if err := r.ResizeBox(dst, src, Box{0.5, 1, 33.3, 23}, f, flip); err != nil {
						t.Fatal(err)
					}
					for i, v := range dst.Pix {
						if v != 200 {
							t.Fatalf("%v %v ch=%d flip=%v: pixel %d = %d, want 200", f, sz, ch, flip, i, v)
						}
					}
				}
			}
		}
	}
}

// TestResizeFlip checks that resizing with flip equals resizing then
// mirroring, and that flipping twice is the identity.
func TestResizeFlip(t *testing.T) {
	src := loadImage(t, "testdata/synth.png")
	var r Resizer
	for _, f := range []Filter{Triangle, Area, Bicubic} { // Nearest: mirrored positions round the other way
		a := NewImage(30, 17, 3)
		b := NewImage(30, 17, 3)
		box := Box{3.5, 2, 90, 55.5}
		if err := r.ResizeBox(a, src, box, f, false); err != nil {
			t.Fatal(err)
		}
		// Mirroring the box and the source gives the flipped output.
		m := cloneImage(src)
		FlipHorizontal(m)
		mbox := Box{float64(src.Width) - box.X1, box.Y0, float64(src.Width) - box.X0, box.Y1}
		if err := r.ResizeBox(b, m, mbox, f, true); err != nil {
			t.Fatal(err)
		}
		if d := maxDiff(a, b); d > 1 {
			t.Errorf("%v: flip(resize(mirror)) differs from resize by %d", f, d)
		}
		c := cloneImage(a)
		FlipHorizontal(c)
		FlipHorizontal(c)
		if d := maxDiff(a, c); d != 0 {
			t.Errorf("double flip differs by %d", d)
		}
	}
}

func cloneImage(m *imgcodec.Image) *imgcodec.Image {
	c := *m
	c.Pix = append([]uint8(nil), m.Pix...)
	return &c
}

func TestResizeErrors(t *testing.T) {
	var r Resizer
	src := NewImage(10, 10, 3)
	for name, tc := range map[string]struct {
		dst *imgcodec.Image
		box Box
	}{
		"channels":  {NewImage(5, 5, 1), Box{0, 0, 10, 10}},
		"box out":   {NewImage(5, 5, 3), Box{0, 0, 11, 10}},
		"box empty": {NewImage(5, 5, 3), Box{3, 0, 3, 10}},
		"box NaN":   {NewImage(5, 5, 3), Box{math.NaN(), 0, 3, 10}},
		"zero dst":  {&imgcodec.Image{Channels: 3}, Box{0, 0, 10, 10}},
		"short pix": {&imgcodec.Image{Pix: make([]uint8, 10), Width: 5, Height: 5, Channels: 3, Stride: 15}, Box{0, 0, 10, 10}},
	} {
		if err := r.ResizeBox(tc.dst, src, tc.box, Triangle, false); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestResizeViewErrors(t *testing.T) {
	var r Resizer
	src := NewImage(10, 10, 3)
	box := Box{0, 0, 10, 10}
	for name, tc := range map[string]struct {
		fw, fh int
		view   image.Rectangle
		f      Filter
	}{
		"view outside":   {20, 20, image.Rect(16, 0, 21, 5), Triangle},
		"view size":      {20, 20, image.Rect(0, 0, 6, 5), Triangle},
		"area view":      {20, 20, image.Rect(1, 1, 6, 6), Area},
		"unknown filter": {5, 5, image.Rect(0, 0, 5, 5), Nearest + 1},
	} {
		if err := r.ResizeView(NewImage(5, 5, 3), src, box, tc.fw, tc.fh, tc.view, tc.f, false); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestNearestPlansFullDecode: nearest-neighbour sampling needs the full
// image's pixels, never a DCT-scaled decode.
func TestNearestPlansFullDecode(t *testing.T) {
	rng := NewRNG(1, 2)
	for _, f := range []Filter{Triangle, Nearest} {
		tr := TrainTransform{Width: 32, Height: 32, Scale: [2]float64{1, 1}, Ratio: [2]float64{1, 1}, Filter: f}
		p := tr.Plan(rng, 1000, 1000)
		want := 8
		if f == Nearest {
			want = 1
		}
		if p.Decode.ScaleDenom != want || p.Filter != f {
			t.Errorf("%v: ScaleDenom %d, filter %v; want %d", f, p.Decode.ScaleDenom, p.Filter, want)
		}
	}
}
