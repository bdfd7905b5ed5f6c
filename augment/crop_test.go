package augment

import (
	"image"
	"math"
	"sort"
	"testing"
)

// TestRandomResizedCropStats compares the crop distribution on a 500x375
// image with torchvision 0.14's RandomResizedCrop.get_params (50,000
// draws, seed 0): mean area fraction 0.4337 (std 0.2172, quartiles
// q10/q50/q90 0.147/0.423/0.738), mean log aspect 0.0314 (std 0.1641).
func TestRandomResizedCropStats(t *testing.T) {
	const n = 20000
	const w, h = 500, 375
	var a Augmenter
	areas := make([]float64, n)
	var sumA, sumL, sumL2 float64
	for i := range n {
		r := RandomResizedCropRect(a.RNG(1, uint64(i)), w, h, DefaultScale, DefaultRatio)
		if !r.In(image.Rect(0, 0, w, h)) || r.Empty() {
			t.Fatalf("crop %v outside %dx%d", r, w, h)
		}
		f := float64(r.Dx()*r.Dy()) / (w * h)
		l := math.Log(float64(r.Dx()) / float64(r.Dy()))
		areas[i] = f
		sumA += f
		sumL += l
		sumL2 += l * l
	}
	sort.Float64s(areas)
	meanL := sumL / n
	stdL := math.Sqrt(sumL2/n - meanL*meanL)
	check := func(name string, got, want, tol float64) {
		if math.Abs(got-want) > tol {
			t.Errorf("%s = %.4f, torchvision %.4f (tolerance %.3f)", name, got, want, tol)
		}
	}
	check("mean area", sumA/n, 0.4337, 0.01)
	check("q10 area", areas[n/10], 0.147, 0.01)
	check("q50 area", areas[n/2], 0.423, 0.015)
	check("q90 area", areas[n*9/10], 0.738, 0.015)
	check("mean log ratio", meanL, 0.0314, 0.01)
	check("std log ratio", stdL, 0.1641, 0.01)
}

func TestRandomResizedCropFallback(t *testing.T) {
	rng := NewRNG(3, 4)
	// Far too wide for any ratio in [3/4, 4/3]: every draw misses, and the
	// fallback is the centre crop at ratio 4/3.
	if r, want := RandomResizedCropRect(rng, 1000, 10, DefaultScale, DefaultRatio), image.Rect(493, 0, 506, 10); r != want {
		t.Errorf("wide fallback %v, want %v", r, want)
	}
	if r, want := RandomResizedCropRect(rng, 10, 1000, DefaultScale, DefaultRatio), image.Rect(0, 493, 10, 506); r != want {
		t.Errorf("tall fallback %v, want %v", r, want)
	}
	// A 1x1 image can only give itself.
	if r := RandomResizedCropRect(rng, 1, 1, DefaultScale, DefaultRatio); r != image.Rect(0, 0, 1, 1) {
		t.Errorf("1x1: %v", r)
	}
	// Scale (1, 1), ratio (1, 1) on a square image is the whole image.
	if r := RandomResizedCropRect(rng, 64, 64, [2]float64{1, 1}, [2]float64{1, 1}); r != image.Rect(0, 0, 64, 64) {
		t.Errorf("full: %v", r)
	}
}

func TestPlanDeterminism(t *testing.T) {
	tr := TrainTransform{Width: 224, Height: 224}
	var a, b Augmenter
	flips := 0
	same := 0
	for i := range uint64(2000) {
		p := tr.Plan(a.RNG(42, i), 640, 480)
		q := tr.Plan(b.RNG(42, i), 640, 480)
		if p != q {
			t.Fatalf("sample %d: plans differ for the same seed: %+v vs %+v", i, p, q)
		}
		if p == tr.Plan(NewRNG(43, i), 640, 480) {
			same++
		}
		if p.Flip {
			flips++
		}
	}
	if same > 2 {
		t.Errorf("%d of 2000 plans equal under another seed", same)
	}
	if flips < 900 || flips > 1100 {
		t.Errorf("%d flips in 2000, want about 1000", flips)
	}
}

func TestPlanDecode(t *testing.T) {
	for _, tc := range []struct {
		w, h   int
		crop   image.Rectangle
		out    int
		max    int
		wantD  int
		wantSz image.Point
	}{
		{2000, 1500, image.Rect(0, 0, 2000, 1500), 224, 0, 4, image.Pt(500, 375)},
		{2000, 1500, image.Rect(101, 33, 101+1800, 33+1400), 224, 0, 4, image.Pt(451, 351)},
		{2000, 1500, image.Rect(101, 33, 101+1800, 33+1400), 224, 2, 2, image.Pt(901, 701)},
		{2000, 1500, image.Rect(0, 0, 1800, 1800*3/4), 224, 1, 1, image.Pt(1800, 1350)},
		{500, 375, image.Rect(10, 20, 250, 260), 224, 0, 1, image.Pt(240, 240)},
		{500, 375, image.Rect(3, 5, 463, 370), 160, 0, 2, image.Pt(231, 183)},
		{501, 377, image.Rect(3, 5, 501, 377), 60, 0, 4, image.Pt(126, 94)},
		{4000, 3000, image.Rect(7, 9, 3007, 2009), 224, 0, 8, image.Pt(376, 251)},
	} {
		opts, box := PlanDecode(tc.w, tc.h, tc.crop, tc.out, tc.out, tc.max)
		if opts.ScaleDenom != tc.wantD || opts.Crop.Size() != tc.wantSz {
			t.Errorf("%v of %dx%d: denom %d crop %v, want %d and size %v", tc.crop, tc.w, tc.h, opts.ScaleDenom, opts.Crop, tc.wantD, tc.wantSz)
		}
		d := float64(opts.ScaleDenom)
		sw, sh := (tc.w+opts.ScaleDenom-1)/opts.ScaleDenom, (tc.h+opts.ScaleDenom-1)/opts.ScaleDenom
		if !opts.Crop.In(image.Rect(0, 0, sw, sh)) {
			t.Errorf("crop %v outside the scaled %dx%d", opts.Crop, sw, sh)
		}
		// The box maps back onto the full-size crop exactly.
		back := [4]float64{(box.X0 + float64(opts.Crop.Min.X)) * d, (box.Y0 + float64(opts.Crop.Min.Y)) * d,
			(box.X1 + float64(opts.Crop.Min.X)) * d, (box.Y1 + float64(opts.Crop.Min.Y)) * d}
		want := [4]float64{float64(tc.crop.Min.X), float64(tc.crop.Min.Y), float64(tc.crop.Max.X), float64(tc.crop.Max.Y)}
		for i := range back {
			if math.Abs(back[i]-want[i]) > 1e-9 {
				t.Errorf("box %v maps back to %v, want %v", box, back, want)
				break
			}
		}
		if box.Dx() < float64(tc.out)-1e-9 {
			t.Errorf("box %v narrower than the output %d", box, tc.out)
		}
	}
}

func TestCenterCropAndShorterEdge(t *testing.T) {
	if r, want := CenterCropRect(256, 341, 224, 224), image.Rect(16, 58, 240, 282); r != want {
		t.Errorf("center crop %v, want %v", r, want)
	}
	if r, want := CenterCropRect(100, 50, 224, 224), image.Rect(0, 0, 100, 50); r != want {
		t.Errorf("oversized center crop %v, want %v", r, want)
	}
	for _, tc := range [][4]int{{500, 375, 341, 256}, {375, 500, 256, 341}, {256, 256, 256, 256}, {1, 1000, 256, 256000}} {
		if w, h := ShorterEdgeSize(tc[0], tc[1], 256); w != tc[2] || h != tc[3] {
			t.Errorf("ShorterEdgeSize(%d, %d) = %d, %d, want %d, %d", tc[0], tc[1], w, h, tc[2], tc[3])
		}
	}
}
