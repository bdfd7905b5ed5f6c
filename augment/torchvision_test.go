package augment

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/faster-training/faster/imgcodec"

	"github.com/faster-training/faster/internal/testenv"
)

// The equality tests of the augmentation ops against torchvision 0.14's
// functional API, tensor path (uint8 CHW tensors, as PILToTensor gives):
// each case forces the same parameters on both sides, on real photographs
// (Debian's mate-backgrounds, resized to 224x168 and 168x224 here), and
// testdata/tv_oracle.py computes torchvision's output at test time with
// Debian's /usr/bin/python3. Tolerances are per op: the largest absolute
// difference in 8-bit levels and the fraction of values that differ at
// all (ties of float32 roundings that torch sums in another order).

var tvPython = testenv.Python

var tvPhotoFiles = []string{
	testenv.PhotoDir + "/FreshFlower.jpg",
	testenv.PhotoDir + "/GreenMeadow.jpg",
}

// requireTorchvision skips (or, under FASTER_REQUIRE_DATA=1, fails) when
// the photographs or Debian's python3 are missing.
func requireTorchvision(t *testing.T) {
	t.Helper()
	var missing []string
	for _, f := range append([]string{tvPython}, tvPhotoFiles...) {
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		testenv.Missing(t, "missing %v", missing)
	}
}

// tvPhotos are the test's inputs: the photographs at 224x168 and 168x224.
func tvPhotos(t *testing.T) []*imgcodec.Image {
	t.Helper()
	var out []*imgcodec.Image
	var r Resizer
	for i, f := range tvPhotoFiles {
		full := loadImage(t, f)
		w, h := 224, 168
		if i%2 == 1 {
			w, h = 168, 224
		}
		m := NewImage(w, h, 3)
		if err := r.Resize(m, full, Triangle); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// tvCase is one forced-parameter comparison.
type tvCase struct {
	name    string
	op      string
	params  map[string]any
	run     func(s *Scratch, m *imgcodec.Image) error
	maxDiff int     // largest allowed |go - torchvision|, in levels
	maxFrac float64 // largest allowed fraction of values that differ
}

type tvResult struct {
	diff int
	frac float64
}

// runOracle writes inputs and cases to a temporary folder, runs
// tv_oracle.py there and returns the folder.
func runOracle(t *testing.T, cases []map[string]any, inputs map[string][]byte) string {
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
	script, _ := filepath.Abs("testdata/tv_oracle.py")
	cmd := exec.Command(tvPython, script, dir)
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		testenv.Missing(t, "torchvision missing for %s: %s", tvPython, out)
	}
	if err != nil {
		t.Fatalf("tv_oracle.py: %v\n%s", err, out)
	}
	return dir
}

func packed(m *imgcodec.Image) []byte {
	n := m.Width * m.Channels
	out := make([]byte, 0, n*m.Height)
	for y := 0; y < m.Height; y++ {
		out = append(out, m.Pix[y*m.Stride:][:n]...)
	}
	return out
}

func compareBytes(got, want []byte) (int, float64, int) {
	worst, n, at := 0, 0, -1
	for i := range got {
		d := abs(int(got[i]) - int(want[i]))
		if d > 0 {
			n++
		}
		if d > worst {
			worst, at = d, i
		}
	}
	return worst, float64(n) / float64(len(got)), at
}

// tvColorCases are the photometric and geometric ops on uint8 images.
func tvColorCases() []tvCase {
	var cs []tvCase
	for _, f := range []float64{0, 0.37, 1.6} {
		cs = append(cs, tvCase{fmt.Sprintf("brightness/%g", f), "brightness", map[string]any{"f": f},
			func(_ *Scratch, m *imgcodec.Image) error { return AdjustBrightness(m, f) }, 0, 0})
		cs = append(cs, tvCase{fmt.Sprintf("contrast/%g", f), "contrast", map[string]any{"f": f},
			func(_ *Scratch, m *imgcodec.Image) error { return AdjustContrast(m, f) }, 0, 0})
		cs = append(cs, tvCase{fmt.Sprintf("saturation/%g", f), "saturation", map[string]any{"f": f},
			func(_ *Scratch, m *imgcodec.Image) error { return AdjustSaturation(m, f) }, 0, 0})
	}
	for _, f := range []float64{-0.5, -0.13, 0.02, 0.31, 0.5} {
		cs = append(cs, tvCase{fmt.Sprintf("hue/%g", f), "hue", map[string]any{"f": f},
			func(_ *Scratch, m *imgcodec.Image) error { return AdjustHue(m, f) }, 0, 0})
	}
	cs = append(cs, tvCase{"grayscale", "grayscale", map[string]any{},
		func(_ *Scratch, m *imgcodec.Image) error { return ToGrayscale(m) }, 0, 0})
	jp := JitterParams{Order: [4]uint8{2, 0, 3, 1}, Brightness: 1.3, Contrast: 0.7, Saturation: 1.4, Hue: -0.08, Has: [4]bool{true, true, true, true}}
	cs = append(cs, tvCase{"jitter", "jitter", map[string]any{"order": []int{2, 0, 3, 1}, "b": jp.Brightness, "c": jp.Contrast, "s": jp.Saturation, "h": jp.Hue},
		func(_ *Scratch, m *imgcodec.Image) error { return ApplyJitter(m, jp) }, 0, 0})
	for _, b := range []struct {
		kw, kh int
		sx, sy float64
	}{{3, 3, 0.8, 0.8}, {9, 5, 1.7, 0.6}, {23, 23, 2.0, 2.0}} {
		cs = append(cs, tvCase{fmt.Sprintf("blur/%dx%d", b.kw, b.kh), "blur", map[string]any{"kw": b.kw, "kh": b.kh, "sx": b.sx, "sy": b.sy},
			func(s *Scratch, m *imgcodec.Image) error { return s.GaussianBlur(m, b.kw, b.kh, b.sx, b.sy) }, 1, 0.0005})
	}
	for _, in := range []Interp{WarpNearest, WarpBilinear} {
		// A sampling position that float32 rounds to the other side of a
		// pixel boundary or a rounding tie: one level with bilinear, a
		// neighbouring pixel with nearest.
		geoDiff, geoFrac := 1, 0.003
		if in == WarpNearest {
			geoFrac = 0.0005
			geoDiff = 255
		}
		for _, r := range []struct {
			angle  float64
			center *[2]float64
			fill   []float64
		}{{17.5, nil, nil}, {-90, nil, nil}, {135, nil, []float64{0}}, {-33, &[2]float64{20, 30}, []float64{128, 30, 250}}, {4, nil, []float64{77}}} {
			p := map[string]any{"angle": r.angle, "interp": in.String()}
			if r.center != nil {
				p["center"] = r.center[:]
			}
			if r.fill != nil {
				p["fill"] = r.fill
			}
			cs = append(cs, tvCase{fmt.Sprintf("rotate/%v/%g/fill=%v", in, r.angle, r.fill), "rotate", p,
				func(s *Scratch, m *imgcodec.Image) error { return s.Rotate(m, r.angle, in, r.center, r.fill) }, geoDiff, geoFrac})
		}
		for _, a := range []struct {
			p      AffineParams
			center *[2]float64
			fill   []float64
		}{
			{AffineParams{Angle: 12, Translate: [2]int{5, -9}, Scale: 1.1, ShearX: 8, ShearY: -4}, nil, nil},
			{AffineParams{Angle: -40, Translate: [2]int{-20, 3}, Scale: 0.8, ShearX: -15}, nil, []float64{10, 200, 90}},
			{AffineParams{Scale: 1, ShearX: 26.6}, &[2]float64{0, 0}, nil}, // AutoAugment's ShearX
		} {
			p := map[string]any{"angle": a.p.Angle, "translate": a.p.Translate[:], "scale": a.p.Scale,
				"shear": []float64{a.p.ShearX, a.p.ShearY}, "interp": in.String()}
			if a.center != nil {
				p["center"] = a.center[:]
			}
			if a.fill != nil {
				p["fill"] = a.fill
			}
			cs = append(cs, tvCase{fmt.Sprintf("affine/%v/%+v/fill=%v", in, a.p, a.fill), "affine", p,
				func(s *Scratch, m *imgcodec.Image) error { return s.Affine(m, a.p, in, a.center, a.fill) }, geoDiff, geoFrac})
		}
	}
	return cs
}

// tvAugCases are the ops of the automatic augmentation policies, each
// through torchvision's own _apply_op (the signed magnitudes, the shear
// and translation conventions, the fill) and the ops of
// torchvision.transforms.functional they call.
func tvAugCases() []tvCase {
	var cs []tvCase
	steps := []AugStep{
		{OpIdentity, 0}, {OpShearX, 0.33}, {OpShearX, -0.99}, {OpShearY, 0.6270000338554382}, {OpShearY, -0.2},
		{OpTranslateX, 17.066667556762695}, {OpTranslateX, -32}, {OpTranslateY, 9.6}, {OpTranslateY, -23.4},
		{OpRotate, 40.5}, {OpRotate, -135}, {OpBrightness, 0.5}, {OpBrightness, -0.99}, {OpColor, 0.9},
		{OpColor, -0.4}, {OpContrast, 0.66}, {OpContrast, -0.8}, {OpSharpness, 0.99}, {OpSharpness, -0.7},
		{OpPosterize, 2}, {OpPosterize, 5}, {OpPosterize, 8}, {OpSolarize, 246.5}, {OpSolarize, 127.5}, {OpSolarize, 0},
		{OpAutoContrast, 0}, {OpEqualize, 0}, {OpInvert, 0},
	}
	for _, in := range []Interp{WarpNearest, WarpBilinear} {
		for _, fill := range [][]float64{nil, {128, 64, 200}} {
			for _, st := range steps {
				geometric := st.Op >= OpShearX && st.Op <= OpRotate
				if !geometric && (in == WarpBilinear || fill != nil) {
					continue // the same as with nearest and no fill
				}
				p := map[string]any{"name": st.Op.String(), "magnitude": st.Magnitude, "interp": in.String()}
				if fill != nil {
					p["fill"] = fill
				}
				d, frac := 0, 0.0
				if st.Op == OpAutoContrast {
					d, frac = 1, 0.0001 // 255/(max-min) times (max-min): 254.99998 or 255
				}
				if geometric {
					d, frac = 1, 0.003
					if in == WarpNearest {
						d = 255
					}
				}
				cs = append(cs, tvCase{fmt.Sprintf("%v/%g/%v/fill=%v", st.Op, st.Magnitude, in, fill), "augop", p,
					func(s *Scratch, m *imgcodec.Image) error { return s.ApplyAugOp(m, st, in, fill) }, d, frac})
			}
		}
	}
	return cs
}

// checkTV runs the uint8 cases on every photograph and the erase plans on
// the first one's normalised tensor, all in one run of tv_oracle.py, and
// checks the magnitude tables it returns.
func checkTV(t *testing.T, cases []tvCase, erase []ErasePlan) {
	photos := tvPhotos(t)
	inputs := map[string][]byte{}
	var spec []map[string]any
	type key struct{ c, p int }
	var order []key
	for pi, m := range photos {
		name := fmt.Sprintf("in_%d.bin", pi)
		inputs[name] = packed(m)
		for ci, c := range cases {
			spec = append(spec, map[string]any{"op": c.op, "in": name, "w": m.Width, "h": m.Height, "c": m.Channels, "params": c.params})
			order = append(order, key{ci, pi})
		}
	}
	// The erase plans, on the normalised tensor of the first photograph.
	m0 := photos[0]
	ec, eh, ew := 3, m0.Height, m0.Width
	norm := make([]float32, ec*eh*ew)
	if err := NewNormalizer(ImageNetMean, ImageNetStd).CHW(norm, m0); err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, 4*len(norm))
	for i, v := range norm {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	inputs["norm.bin"] = raw
	for _, p := range erase {
		spec = append(spec, map[string]any{"op": "erase", "in": "norm.bin", "w": ew, "h": eh, "c": ec, "dtype": "float32",
			"params": map[string]any{"i": p.I, "j": p.J, "h": p.H, "w": p.W, "values": p.Values}})
	}

	dir := runOracle(t, spec, inputs)
	worst := map[string]tvResult{}
	var s Scratch
	for k, o := range order {
		c, src := cases[o.c], photos[o.p]
		m := NewImage(src.Width, src.Height, src.Channels)
		copy(m.Pix, src.Pix)
		if err := c.run(&s, m); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("out_%d.bin", k)))
		if err != nil {
			t.Fatal(err)
		}
		got := packed(m)
		if len(got) != len(want) {
			t.Fatalf("%s: %d bytes, torchvision %d", c.name, len(got), len(want))
		}
		d, frac, at := compareBytes(got, want)
		if d > c.maxDiff || frac > c.maxFrac {
			px := at / m.Channels
			t.Errorf("%s on %dx%d: max |diff| %d (at x=%d y=%d c=%d: %d vs %d), %.4f%% differ; tolerance %d, %.4f%%",
				c.name, m.Width, m.Height, d, px%m.Width, px/m.Width, at%m.Channels, got[at], want[at], 100*frac, c.maxDiff, 100*c.maxFrac)
		}
		r := worst[c.name]
		worst[c.name] = tvResult{max(d, r.diff), max(frac, r.frac)}
	}
	if testing.Verbose() {
		for _, c := range cases {
			r := worst[c.name]
			t.Logf("%-56s max |diff| %3d, %.4f%% of values differ", c.name, r.diff, 100*r.frac)
		}
	}

	for k, p := range erase {
		got := append([]float32(nil), norm...)
		if err := Erase(got, ec, eh, ew, p); err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("out_%d.bin", len(order)+k)))
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range got {
			if wv := math.Float32frombits(binary.LittleEndian.Uint32(want[4*i:])); wv != v {
				t.Fatalf("erase %d: value %d = %v, torchvision %v", k, i, v, wv)
			}
		}
	}

	// The magnitude tables, value for value.
	js, err := os.ReadFile(filepath.Join(dir, "tables.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tables map[string]map[string][]float64
	if err := json.Unmarshal(js, &tables); err != nil {
		t.Fatal(err)
	}
	for name, ours := range map[string]*MagnitudeTable{
		"ta": TrivialAugmentTable(31), "ra": RandAugmentTable(31, 168, 224), "aa": RandAugmentTable(10, 168, 224),
		"am": AugMixTable(168, 224),
	} {
		theirs := tables[name]
		for op := OpIdentity; op < numAugOps; op++ {
			tv, ok := theirs[op.String()]
			if !ok {
				continue
			}
			if len(tv) == 1 && tv[0] == 0 && ours[op] == nil {
				continue
			}
			if len(tv) != len(ours[op]) {
				t.Errorf("%s %v: %d magnitudes, torchvision %d", name, op, len(ours[op]), len(tv))
				continue
			}
			for i, v := range tv {
				// torch's vectorised linspace rounds a few bins one float32
				// step apart from start + step*i (end - step*(n-1-i) past half)
				if o := ours[op][i]; float64(o) != v && math.Nextafter32(o, float32(v)) != float32(v) {
					t.Errorf("%s %v bin %d: %v, torchvision %v", name, op, i, ours[op][i], v)
				}
			}
		}
	}
}

// TestTorchvision compares every op with torchvision 0.14 (tensor path)
// on the same forced parameters; see the top of this file.
func TestTorchvision(t *testing.T) {
	requireTorchvision(t)
	noise := make([]float32, 3*20*31)
	for i := range noise {
		noise[i] = float32(math.Sin(float64(i))) * 2
	}
	erase := []ErasePlan{
		{Erase: true, I: 10, J: 40, H: 50, W: 70, Values: []float32{0}},
		{Erase: true, I: 0, J: 0, H: 167, W: 3, Values: []float32{0.5, -1, 2}},
		{Erase: true, I: 100, J: 7, H: 20, W: 31, Values: noise},
	}
	cases := append(tvColorCases(), tvAugCases()...)
	// AugMix with forced weights and chains (drawn here from our RNG).
	for i, am := range []AugMix{{Interp: WarpBilinear}, {Severity: 10, Width: 4, Depth: 2, Alpha: 0.5, Interp: WarpNearest, Fill: []float64{9, 99, 199}}} {
		p := am.Draw(NewRNG(11, uint64(i)), 224, 168) // magnitudes for the landscape photo; both use them
		var chains [][]any
		for _, c := range p.Chains {
			var ops []any
			for _, st := range c {
				ops = append(ops, []any{st.Op.String(), st.Magnitude})
			}
			chains = append(chains, ops)
		}
		params := map[string]any{"m0": p.M0, "weights": p.Weights, "chains": chains, "interp": am.Interp.String()}
		if am.Fill != nil {
			params["fill"] = am.Fill
		}
		d := 1
		if am.Interp == WarpNearest {
			d = 255
		}
		cases = append(cases, tvCase{fmt.Sprintf("AugMix/%d/%v", i, am.Interp), "augmix", params,
			func(s *Scratch, m *imgcodec.Image) error { return am.Apply(s, m, p) }, d, 0.003})
	}
	checkTV(t, cases, erase)
}
