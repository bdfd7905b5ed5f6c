package kernels

import (
	"errors"
	"fmt"
	"image"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/imgcodec"
)

// photos decodes Debian's photographs (mate-backgrounds) at 1/4 scale,
// or the repository's cjpeg-made JPEGs where they are missing.
func photos(t *testing.T) []*imgcodec.Image {
	t.Helper()
	paths, _ := filepath.Glob("/usr/share/backgrounds/*/*/*.jpg")
	denom := 4
	if len(paths) == 0 {
		paths, _ = filepath.Glob("../../../imgcodec/testdata/ycc4*.jpg")
		denom = 1
	}
	if len(paths) > 6 {
		paths = paths[:6]
	}
	var out []*imgcodec.Image
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		m, err := imgcodec.Decode(data, &imgcodec.DecodeOptions{ScaleDenom: denom})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		t.Fatal("no photographs")
	}
	return out
}

// job is one resample of the test: the source picture as the kernels see
// it (pixels, stride, box) and augment's reference.
type job struct {
	src          *imgcodec.Image
	box          augment.Box
	fullW, fullH int
	view         image.Rectangle
	flip         bool
	f            augment.Filter
	what         string
}

// jobs draws train crops (as the ROI decode gives them: the crop as a
// picture of its own, with the photograph's stride) and eval resizes
// (the whole picture, a centre-crop view), for each filter.
func jobs(rng *rand.Rand, ms []*imgcodec.Image, out int) []job {
	var js []job
	for i, m := range ms {
		for _, f := range []augment.Filter{augment.Triangle, augment.Bicubic, augment.Nearest} {
			for k := range 3 {
				r := augment.RandomResizedCropRect(rng, m.Width, m.Height, augment.DefaultScale, augment.DefaultRatio)
				roi := augment.SubImage(m, r.Min.X, r.Min.Y, r.Max.X, r.Max.Y)
				js = append(js, job{src: &roi, box: augment.Box{X1: float64(r.Dx()), Y1: float64(r.Dy())},
					fullW: out, fullH: out, view: image.Rect(0, 0, out, out), flip: k%2 == 1, f: f,
					what: fmt.Sprintf("photo %d %v crop %v flip %v", i, f, r, k%2 == 1)})
			}
			rw, rh := augment.ShorterEdgeSize(m.Width, m.Height, out*256/224)
			js = append(js, job{src: m, box: augment.Box{X1: float64(m.Width), Y1: float64(m.Height)},
				fullW: rw, fullH: rh, view: augment.CenterCropRect(rw, rh, out, out), f: f,
				what: fmt.Sprintf("photo %d %v eval %dx%d", i, f, rw, rh)})
		}
	}
	return js
}

// batch lays the jobs' pictures out in one source arena, as the decoder
// does in device memory, and plans them.
func batch(t *testing.T, js []job, out int, f32 bool) (*Batch, []byte) {
	t.Helper()
	var src []byte
	var imgs []Image
	for i, j := range js {
		m := j.src
		off := int64(len(src))
		n := (m.Height-1)*m.Stride + m.Width*m.Channels
		src = append(src, m.Pix[:n]...)
		src = append(src, 0, 0, 0, 0, 0) // an odd gap between pictures
		imgs = append(imgs, Image{Src: off, W: m.Width, H: m.Height, Stride: m.Stride, Box: j.box,
			FullW: j.fullW, FullH: j.fullH, View: j.view, Flip: j.flip, Filter: j.f, Dst: int64(i * out * out * 3)})
	}
	b, err := Plan(imgs, out, out, 3)
	if err != nil {
		t.Fatal(err)
	}
	return b, src
}

// The kernels' CPU build gives augment's bytes, to the bit, on
// photographs: the measured bound is 0 levels (uint8) and 0 ulp (float32)
// for bilinear, bicubic and nearest, train crops with flips and eval
// centre crops. The GPU build runs the same integer arithmetic.
func TestResizeMatchesAugment(t *testing.T) {
	ms := photos(t)
	rng := rand.New(rand.NewPCG(1, 2))
	const out = 56
	js := jobs(rng, ms, out)
	b, src := batch(t, js, out, false)
	got := make([]byte, len(js)*out*out*3)
	if err := RunCPU(b, src, got, nil, nil); errors.Is(err, ErrNoCPU) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	mean, std := augment.ImageNetMean, augment.ImageNetStd
	gotF := make([]float32, len(js)*out*out*3)
	if err := RunCPU(b, src, nil, gotF, NormLUT(mean, std)); err != nil {
		t.Fatal(err)
	}
	norm := augment.NewNormalizer(mean, std)
	var rz augment.Resizer
	worst := 0
	for i, j := range js {
		want := augment.NewImage(out, out, 3)
		if err := rz.ResizeView(want, j.src, j.box, j.fullW, j.fullH, j.view, j.f, j.flip); err != nil {
			t.Fatal(err)
		}
		row := got[i*out*out*3 : (i+1)*out*out*3]
		for k := range row {
			worst = max(worst, abs(int(row[k])-int(want.Pix[k])))
		}
		if worst != 0 {
			t.Fatalf("%s: uint8 rows differ by up to %d levels", j.what, worst)
		}
		wantF := make([]float32, out*out*3)
		norm.CHW(wantF, want)
		for k, v := range gotF[i*out*out*3 : (i+1)*out*out*3] {
			if v != wantF[k] {
				t.Fatalf("%s: float32 element %d: %v, want %v", j.what, k, v, wantF[k])
			}
		}
	}
	t.Logf("%d resamples of %d photographs: 0 levels from augment", len(js), len(ms))
}

// Plan refuses what the kernels cannot do, naming the image.
func TestPlanRefuses(t *testing.T) {
	ok := Image{W: 10, H: 10, Stride: 30, Box: augment.Box{X1: 10, Y1: 10}, FullW: 4, FullH: 4, View: image.Rect(0, 0, 4, 4)}
	for _, c := range []struct {
		m    func(Image) Image
		want string
	}{
		{func(m Image) Image { m.Filter = augment.Area; return m }, "filter"},
		{func(m Image) Image { m.Box.X1 = 11; return m }, "box"},
		{func(m Image) Image { m.Stride = 20; return m }, "stride"},
		{func(m Image) Image { m.View = image.Rect(1, 1, 5, 5); return m }, "view"},
	} {
		_, err := Plan([]Image{ok, c.m(ok)}, 4, 4, 3)
		if err == nil || !containsAll(err.Error(), "image 1", c.want) {
			t.Errorf("want an error naming image 1 and %s: %v", c.want, err)
		}
	}
	if _, err := Plan([]Image{ok}, 4, 4, 3); err != nil {
		t.Fatal(err)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
