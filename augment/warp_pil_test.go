package augment

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/internal/testenv"
)

// The bicubic warps against torchvision 0.14 on PIL images (the path a
// Compose runs before ToTensor or PILToTensor; torchvision refuses bicubic
// warps on tensors): F.rotate (PIL's Image.rotate), F.affine (PIL's
// Image.transform) and the policies' _apply_op, BICUBIC, on real
// photographs (Debian's mate-backgrounds at 224x168 and 168x224, and the
// first one as a one-channel L picture); testdata/pil_warp_oracle.py
// computes PIL's output at test time with Debian's /usr/bin/python3. The
// same cases run bilinear on PIL images too (WarpBilinearPIL, an op before
// the tensor), against PIL's bilinear, and bilinear on tensors
// (WarpBilinear) against the tensor path's, for the figures (its own
// bounds are TestTorchvision's).

// pilWarpCase is one forced-parameter warp, run with each interpolation.
type pilWarpCase struct {
	name   string
	op     string // rotate, affine, augop
	params map[string]any
	rgb    bool // a three-value fill: RGB pictures only
	run    func(s *Scratch, m *imgcodec.Image, in Interp) error
}

func pilWarpCases() []pilWarpCase {
	var cs []pilWarpCase
	for _, r := range []struct {
		angle  float64
		center *[2]float64
		fill   []float64
	}{
		{17.5, nil, []float64{0}}, {-90, nil, []float64{0}}, {135, nil, []float64{0}},
		{-33, &[2]float64{20, 30}, []float64{128, 30, 250}}, {4, nil, []float64{77}}, {-10.25, nil, []float64{0}},
		{180, nil, []float64{0}}, {0, nil, []float64{0}}, {390.5, &[2]float64{100.5, 7}, []float64{200}},
	} {
		p := map[string]any{"angle": r.angle}
		if r.center != nil {
			p["center"] = r.center[:]
		}
		p["fill"] = fillParam(r.fill)
		cs = append(cs, pilWarpCase{fmt.Sprintf("rotate/%g/center=%v/fill=%v", r.angle, r.center, r.fill), "rotate", p, len(r.fill) == 3,
			func(s *Scratch, m *imgcodec.Image, in Interp) error {
				return s.Rotate(m, r.angle, in, r.center, r.fill)
			}})
	}
	for _, a := range []struct {
		p      AffineParams
		center *[2]float64
		fill   []float64
	}{
		{AffineParams{Angle: 12, Translate: [2]int{5, -9}, Scale: 1.1, ShearX: 8, ShearY: -4}, nil, []float64{0}},
		{AffineParams{Angle: -40, Translate: [2]int{-20, 3}, Scale: 0.8, ShearX: -15}, nil, []float64{10, 200, 90}},
		{AffineParams{Scale: 1, ShearX: 26.6}, &[2]float64{0, 0}, []float64{0}},
		{AffineParams{Angle: 7.3, Translate: [2]int{3, 2}, Scale: 1.3}, &[2]float64{50.5, 20}, []float64{33}},
		{AffineParams{Angle: 0, Scale: 0.55, ShearY: 30}, nil, []float64{0}},
	} {
		p := map[string]any{"angle": a.p.Angle, "translate": a.p.Translate[:], "scale": a.p.Scale,
			"shear": []float64{a.p.ShearX, a.p.ShearY}, "fill": fillParam(a.fill)}
		if a.center != nil {
			p["center"] = a.center[:]
		}
		cs = append(cs, pilWarpCase{fmt.Sprintf("affine/%+v/center=%v/fill=%v", a.p, a.center, a.fill), "affine", p, len(a.fill) == 3,
			func(s *Scratch, m *imgcodec.Image, in Interp) error { return s.Affine(m, a.p, in, a.center, a.fill) }})
	}
	steps := []AugStep{
		{OpShearX, 0.33}, {OpShearX, -0.99}, {OpShearY, 0.6270000338554382}, {OpShearY, -0.2},
		{OpTranslateX, 17.066667556762695}, {OpTranslateX, -32}, {OpTranslateY, 9.6}, {OpTranslateY, -23.4},
		{OpRotate, 40.5}, {OpRotate, -135}, {OpRotate, 8.666666984558105},
	}
	for _, fill := range [][]float64{nil, {128, 64, 200}} {
		for _, st := range steps {
			p := map[string]any{"name": st.Op.String(), "magnitude": st.Magnitude}
			if fill != nil {
				p["fill"] = fill
			}
			cs = append(cs, pilWarpCase{fmt.Sprintf("%v/%g/fill=%v", st.Op, st.Magnitude, fill), "augop", p, fill != nil,
				func(s *Scratch, m *imgcodec.Image, in Interp) error { return s.ApplyAugOp(m, st, in, fill) }})
		}
	}
	// The policies' other ops, on PIL images PIL's own (ImageEnhance,
	// ImageOps: pilcolor.go), on tensors the tensor path's.
	for _, st := range []AugStep{
		{OpIdentity, 0}, {OpBrightness, 0.3}, {OpBrightness, -0.6000000238418579}, {OpColor, 0.45}, {OpColor, -0.9},
		{OpColor, 0.9900000095367432}, {OpContrast, 0.5}, {OpContrast, -0.30000001192092896}, {OpContrast, 0.87},
		{OpSharpness, 0.7}, {OpSharpness, -0.95}, {OpSharpness, 0.33000001311302185}, {OpAutoContrast, 0},
		{OpPosterize, 4}, {OpSolarize, 100}, {OpSolarize, 7.5}, {OpEqualize, 0},
	} {
		p := map[string]any{"name": st.Op.String(), "magnitude": st.Magnitude}
		cs = append(cs, pilWarpCase{fmt.Sprintf("%v/%g", st.Op, st.Magnitude), "augop", p, false,
			func(s *Scratch, m *imgcodec.Image, in Interp) error { return s.ApplyAugOp(m, st, in, nil) }})
	}
	// ColorJitter's adjustments and RandomGrayscale, on PIL images PIL's
	// (applyJitterPIL, pilGray), on tensors the tensor path's.
	for _, a := range []struct {
		name   string
		k      int
		factor float64
	}{
		{"brightness", 0, 1.4}, {"brightness", 0, 0.55}, {"contrast", 1, 0.6}, {"contrast", 1, 1.7},
		{"saturation", 2, 0.3}, {"saturation", 2, 1.9}, {"hue", 3, 0.2}, {"hue", 3, -0.05000000074505806},
		{"hue", 3, 0.5}, {"hue", 3, -0.4999}, {"hue", 3, 0.0001},
	} {
		p := JitterParams{Order: [4]uint8{uint8(a.k), uint8(a.k+1) % 4, uint8(a.k+2) % 4, uint8(a.k+3) % 4}}
		p.Has[a.k] = true
		*[4]*float64{&p.Brightness, &p.Contrast, &p.Saturation, &p.Hue}[a.k] = a.factor
		cs = append(cs, pilWarpCase{fmt.Sprintf("adjust_%s/%g", a.name, a.factor), "adjust",
			map[string]any{"name": a.name, "factor": a.factor}, false,
			func(s *Scratch, m *imgcodec.Image, in Interp) error {
				if in.onPIL() {
					return s.applyJitterPIL(m, p)
				}
				return ApplyJitter(m, p)
			}})
	}
	cs = append(cs, pilWarpCase{"rgb_to_grayscale", "gray", map[string]any{}, true,
		func(s *Scratch, m *imgcodec.Image, in Interp) error {
			return RandomGrayscale{P: 1, PIL: in.onPIL()}.Augment(s, rand.New(rand.NewPCG(1, 2)), m)
		}})
	return cs
}

// fillParam is a fill as RandomRotation and RandomAffine pass it to
// F.rotate and F.affine: one value as a number (PIL takes a list only of
// one value a channel).
func fillParam(f []float64) any {
	if len(f) == 1 {
		return f[0]
	}
	return f
}

// warpStats are |got - want| in levels over every value of a case.
type warpStats struct{ diffs []int }

func (w *warpStats) add(got, want []byte) {
	for i := range got {
		w.diffs = append(w.diffs, abs(int(got[i])-int(want[i])))
	}
}

// levels is (max, 99th percentile, mean).
func (w *warpStats) levels() (int, int, float64) {
	d := slices.Clone(w.diffs)
	slices.Sort(d)
	sum := 0
	for _, x := range d {
		sum += x
	}
	return d[len(d)-1], d[len(d)*99/100], float64(sum) / float64(len(d))
}

func TestPILWarpsMatchPIL(t *testing.T) {
	requireTorchvision(t)
	photos := tvPhotos(t)
	gray := NewImage(photos[0].Width, photos[0].Height, 1)
	for i := range gray.Pix {
		p := photos[0].Pix[3*i:]
		gray.Pix[i] = uint8((299*int(p[0]) + 587*int(p[1]) + 114*int(p[2]) + 500) / 1000)
	}
	photos = append(photos, gray)
	cases := pilWarpCases()
	// Each case on each picture: bicubic on PIL, bilinear on PIL, bilinear
	// on tensors. The oracle's interpolation is the mode's name.
	type run struct {
		c, p   int
		interp Interp
		path   string
	}
	var runs []run
	var spec []map[string]any
	inputs := map[string][]byte{}
	for pi, m := range photos {
		name := fmt.Sprintf("in_%d.bin", pi)
		inputs[name] = packed(m)
		for ci, c := range cases {
			if c.rgb && m.Channels != 3 {
				continue
			}
			for _, r := range []run{{ci, pi, WarpBicubic, "pil"}, {ci, pi, WarpBilinearPIL, "pil"}, {ci, pi, WarpNearestPIL, "pil"},
				{ci, pi, WarpBilinear, "tensor"}} {
				params := map[string]any{"interp": modeOf(r.interp)}
				for k, v := range c.params {
					params[k] = v
				}
				spec = append(spec, map[string]any{"op": c.op, "in": name, "w": m.Width, "h": m.Height, "c": m.Channels,
					"path": r.path, "params": params})
				runs = append(runs, r)
			}
		}
	}
	dir := runPILWarpOracle(t, spec, inputs)
	stats := map[string]*warpStats{} // case name + " " + kind
	kindOf := func(r run) string { return modeOf(r.interp) + "/" + r.path }
	var s Scratch
	for k, r := range runs {
		c, src := cases[r.c], photos[r.p]
		m := NewImage(src.Width, src.Height, src.Channels)
		copy(m.Pix, src.Pix)
		if err := c.run(&s, m, r.interp); err != nil {
			t.Fatalf("%s %v: %v", c.name, r.interp, err)
		}
		want, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("out_%d.bin", k)))
		if err != nil {
			t.Fatal(err)
		}
		got := packed(m)
		if len(got) != len(want) {
			t.Fatalf("%s: %d bytes, torchvision %d", c.name, len(got), len(want))
		}
		key := c.name + " " + kindOf(r)
		if stats[key] == nil {
			stats[key] = &warpStats{}
		}
		stats[key].add(got, want)
		if r.interp.onPIL() {
			if d, frac, at := compareBytes(got, want); d > 0 {
				px := at / m.Channels
				t.Errorf("%s %v on %dx%dx%d: max |diff| %d (at x=%d y=%d c=%d: %d vs PIL's %d), %.4f%% differ; want PIL's bytes",
					c.name, r.interp, m.Width, m.Height, m.Channels, d, px%m.Width, px/m.Width, at%m.Channels, got[at], want[at], 100*frac)
			}
		}
	}
	all := map[string]*warpStats{}
	for _, c := range cases {
		line := fmt.Sprintf("%-72s", c.name)
		for _, kind := range []string{"bicubic/pil", "bilinear/pil", "nearest/pil", "bilinear/tensor"} {
			st := stats[c.name+" "+kind]
			mx, p99, mean := st.levels()
			line += fmt.Sprintf("  %s %3d %3d %6.3f", kind, mx, p99, mean)
			if all[kind] == nil {
				all[kind] = &warpStats{}
			}
			all[kind].diffs = append(all[kind].diffs, st.diffs...)
		}
		t.Log(line)
	}
	for _, kind := range []string{"bicubic/pil", "bilinear/pil", "nearest/pil", "bilinear/tensor"} {
		mx, p99, mean := all[kind].levels()
		t.Logf("all cases, Go's %s against torchvision's: max %d levels, 99th percentile %d, mean %.4f", kind, mx, p99, mean)
	}
}

// modeOf is interp's InterpolationMode name, as the oracle takes it.
func modeOf(interp Interp) string {
	switch interp {
	case WarpBilinearPIL:
		return "bilinear"
	case WarpNearestPIL:
		return "nearest"
	}
	return interp.String()
}

// runPILWarpOracle writes inputs and cases to a temporary folder, runs
// pil_warp_oracle.py there and returns the folder.
func runPILWarpOracle(t *testing.T, cases []map[string]any, inputs map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range inputs {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	js, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cases.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs("testdata/pil_warp_oracle.py")
	cmd := exec.Command(testenv.Python, script, dir)
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		testenv.Missing(t, "torchvision missing for %s: %s", testenv.Python, out)
	}
	if err != nil {
		t.Fatalf("pil_warp_oracle.py: %v\n%s", err, out)
	}
	return dir
}

// TestWarpPILFastPath: the RGB interior paths (bicubicPIL3, bilinearPIL3,
// and the bilinear rows' SIMD kernel where the CPU has AVX2) write the
// bytes of the general ones (every tap clamped), on random matrices over
// a photograph, some sending every position far outside or to NaN, fills
// and one-channel pictures included.
func TestWarpPILFastPath(t *testing.T) {
	photo := loadImage(t, "testdata/photo.png")
	var r Resizer
	rng := NewRNG(7, 0)
	var s Scratch
	for k := range 120 {
		w, h := 2+rng.IntN(140), 20+rng.IntN(120)
		src := NewImage(w, h, 3)
		if err := r.Resize(src, photo, Triangle); err != nil {
			t.Fatal(err)
		}
		u := func(lo, hi float64) float64 { return lo + (hi-lo)*rng.Float64() }
		mat := PILAffineMatrix(w, h, nil, u(-180, 180), [2]float64{u(-10, 10), u(-10, 10)}, u(0.5, 2), [2]float64{u(-40, 40), u(-40, 40)})
		switch k % 10 {
		case 3: // positions beyond int32
			mat[2], mat[5] = u(-1, 1)*1e10, u(-1, 1)*3e9
		case 6: // a shrinking warp: every position inside, near the middle
			mat = [6]float64{u(0.01, 0.1), u(-0.05, 0.05), float64(w) / 2, u(-0.05, 0.05), u(0.01, 0.1), float64(h) / 2}
		case 9:
			mat[0] = math.NaN()
		}
		var fill []float64
		if k%2 == 1 {
			fill = []float64{u(0, 255), u(0, 255), u(0, 255)}
		}
		for _, interp := range []Interp{WarpBicubic, WarpBilinearPIL} {
			want := NewImage(w, h, 3)
			copy(want.Pix, src.Pix)
			pilFast = false
			err := s.warpPIL(want, mat, interp, fill)
			pilFast = true
			if err != nil {
				t.Fatal(err)
			}
			for _, useSIMD := range []bool{true, false} {
				got := NewImage(w, h, 3)
				copy(got.Pix, src.Pix)
				warpSIMD = useSIMD
				err := s.warpPIL(got, mat, interp, fill)
				warpSIMD = true
				if err != nil {
					t.Fatal(err)
				}
				if d, frac, at := compareBytes(packed(got), packed(want)); d != 0 {
					t.Fatalf("case %d %v (simd %v) %dx%d %v: max |diff| %d at %d (%.4f%%)", k, interp, useSIMD, w, h, mat, d, at, 100*frac)
				}
			}
		}
	}
	// A fill of three values on a one-channel picture is refused, as PIL
	// refuses it; one value is taken.
	g := NewImage(8, 8, 1)
	if err := s.WarpPIL(g, PILRotateMatrix(8, 8, 30, nil), []float64{1, 2, 3}); err == nil {
		t.Error("3 fill values on a 1-channel picture: no error")
	}
	if err := s.WarpPIL(g, PILRotateMatrix(8, 8, 30, nil), []float64{9}); err != nil || g.Pix[0] != 9 {
		t.Errorf("fill 9 on a 1-channel picture: corner %d, %v", g.Pix[0], err)
	}
	// Warp (grid_sample) takes no bicubic.
	if err := s.Warp(NewImage(8, 8, 3), RotateMatrix(8, 8, 30, nil), WarpBicubic, nil); err == nil {
		t.Error("Warp with WarpBicubic: no error")
	}
}
