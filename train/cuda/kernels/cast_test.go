package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// castInputs are float32s that exercise every path of the conversions:
// every binary16 and bfloat16 value, and the float32s between and around
// them (ties, overflow, subnormals, NaNs), and random bit patterns.
func castInputs() []float32 {
	var in []float32
	for h := range 1 << 16 {
		in = append(in, f16Twin(uint16(h)))
		in = append(in, math.Float32frombits(uint32(h)<<16))
	}
	for _, b := range []uint32{0x477fe000, 0x477fefff, 0x477ff000, 0x477ff001, 0x33000000, 0x33000001, 0x32ffffff,
		0x38800000, 0x387fffff, 0x387ff000, 0x7f800001, 0xff800001, 0x7fffffff, 0x00000001, 0x80000001, 0x7f7fffff} {
		in = append(in, math.Float32frombits(b), math.Float32frombits(b|0x80000000))
	}
	// Halfway points of the binary16 grid: ties to even.
	for h := range 0x7c00 {
		a, b := f16Twin(uint16(h)), f16Twin(uint16(h+1))
		in = append(in, float32((float64(a)+float64(b))/2))
	}
	r := rand.New(rand.NewPCG(37, 2))
	for range 1 << 18 {
		in = append(in, math.Float32frombits(r.Uint32()))
	}
	return in
}

// f16Twin decodes binary16 in Go, independently of kernels.cu.
func f16Twin(h uint16) float32 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e, m := int(h>>10)&0x1f, float64(h&0x3ff)
	switch e {
	case 0x1f:
		if m != 0 {
			return float32(math.NaN())
		}
		return float32(sign * math.Inf(1))
	case 0:
		return float32(sign * m * math.Ldexp(1, -24))
	}
	return float32(sign * (1 + m/1024) * math.Ldexp(1, e-15))
}

func TestCastF16AllValues(t *testing.T) {
	needCPU(t)
	in := make([]uint16, 1<<16)
	for i := range in {
		in[i] = uint16(i)
	}
	out := make([]float32, len(in))
	if err := CastF16F32(plan(t, small, Elementwise, int64(len(in)), 0), in, out); err != nil {
		t.Fatal(err)
	}
	for i, h := range in {
		if w := f16Twin(h); ulps(out[i], w) != 0 || (w == w && math.Signbit(float64(out[i])) != math.Signbit(float64(w))) {
			t.Fatalf("f16 %#04x → %v, want %v", h, out[i], w)
		}
	}
	// Round trip: every binary16 comes back to its bits (NaNs stay NaN).
	back := make([]uint16, len(in))
	if err := CastF32F16(plan(t, H200, Elementwise, int64(len(in)), 0), out, back); err != nil {
		t.Fatal(err)
	}
	for i, h := range in {
		if back[i] != h && !(h&0x7c00 == 0x7c00 && h&0x3ff != 0 && back[i]&0x7c00 == 0x7c00 && back[i]&0x3ff != 0) {
			t.Fatalf("f16 %#04x → %v → %#04x", h, out[i], back[i])
		}
	}
}

// The casts against torch 1.13's .half() and .bfloat16() (c10's round to
// nearest even) on every input of castInputs, bit for bit; a NaN may
// differ in payload only.
func TestCastsAgainstTorch(t *testing.T) {
	needCPU(t)
	in := castInputs()
	l := plan(t, H200, Elementwise, int64(len(in)), 0)
	h, b := make([]uint16, len(in)), make([]uint16, len(in))
	if err := CastF32F16(l, in, h); err != nil {
		t.Fatal(err)
	}
	if err := CastF32BF16(l, in, b); err != nil {
		t.Fatal(err)
	}
	res := torch(t, `
x = load("x", np.float32)
save("h", x.half().view(torch.int16))
save("b", x.bfloat16().view(torch.int16))
save("hf", x.half().float())
save("bf", x.bfloat16().float())
`, map[string]any{"x": in}, "h", "b", "hf", "bf")
	th, tb := u16s(res["h"]), u16s(res["b"])
	hf, bf := make([]float32, len(in)), make([]float32, len(in))
	if err := CastF16F32(l, h, hf); err != nil {
		t.Fatal(err)
	}
	if err := CastBF16F32(l, b, bf); err != nil {
		t.Fatal(err)
	}
	isNaN16 := func(v uint16) bool { return v&0x7c00 == 0x7c00 && v&0x3ff != 0 }
	isNaNbf := func(v uint16) bool { return v&0x7f80 == 0x7f80 && v&0x7f != 0 }
	var badH, badB int
	for i := range in {
		if h[i] != th[i] && !(isNaN16(h[i]) && isNaN16(th[i])) {
			if badH++; badH < 5 {
				t.Errorf("f16(%g = %#08x) = %#04x, torch %#04x", in[i], math.Float32bits(in[i]), h[i], th[i])
			}
		}
		if b[i] != tb[i] && !(isNaNbf(b[i]) && isNaNbf(tb[i])) {
			if badB++; badB < 5 {
				t.Errorf("bf16(%g = %#08x) = %#04x, torch %#04x", in[i], math.Float32bits(in[i]), b[i], tb[i])
			}
		}
	}
	dh, db := compare(hf, f32s(res["hf"])), compare(bf, f32s(res["bf"]))
	if dh.ulps != 0 || db.ulps != 0 {
		t.Errorf("widening differs from torch's: fp16 %d ulp, bf16 %d ulp", dh.ulps, db.ulps)
	}
	t.Logf("%d values: fp16 %d bits differ from torch, bf16 %d; widened: 0 ulp", len(in), badH, badB)
}

// The channels_last casts (cast_nchw_nhwc_*, cast_nhwc_nchw_*) are the
// plain casts with the values moved NCHW ↔ NHWC: against the plain casts'
// results transposed in Go, bit for bit, at shapes where c and hw differ
// (a swapped index shows), whole and partial 32×32 tiles, every launch.
func TestCastChannelsLast(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(41, 3))
	type cast struct {
		name  string
		round func(Launch, []float32, []uint16) error
		widen func(Launch, []uint16, []float32) error
	}
	for _, k := range []cast{{"f16", CastF32F16, CastF16F32}, {"bf16", CastF32BF16, CastBF16F32}} {
		for _, s := range [][3]int{{2, 3, 5}, {3, 64, 49}, {1, 7, 1}, {4, 1, 9}, {2, 16, 9 * 9}, {2, 40, 70}, {1, 33, 32}, {2, 64, 64}} {
			n, c, hw := s[0], s[1], s[2]
			total := n * c * hw
			in := specials(r, randn(r, total, 100))
			flat := make([]uint16, total)
			if err := k.round(Launch{1, 32}, in, flat); err != nil {
				t.Fatal(err)
			}
			want := make([]uint16, total) // NHWC of the plain cast
			for b := range n {
				for ch := range c {
					for p := range hw {
						want[(b*hw+p)*c+ch] = flat[(b*c+ch)*hw+p]
					}
				}
			}
			back := make([]float32, total) // the plain widening of want, NCHW again
			wide := make([]float32, total)
			if err := k.widen(Launch{1, 32}, want, wide); err != nil {
				t.Fatal(err)
			}
			for b := range n {
				for ch := range c {
					for p := range hw {
						back[(b*c+ch)*hw+p] = wide[(b*hw+p)*c+ch]
					}
				}
			}
			for _, l := range launches(t, PerRow, int64(CastTiles(n, c, hw)), TileValues) {
				got := make([]uint16, total)
				if err := LaunchCPU("cast_nchw_nhwc_"+k.name, l, []uint64{ptrSlot(in), ptrSlot(got), i32Slot(n), i32Slot(c), i32Slot(hw)}); err != nil {
					t.Fatal(err)
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("%s %v launch %+v: cast_nchw_nhwc value %d is %#04x, want %#04x", k.name, s, l, i, got[i], want[i])
					}
				}
				gotBack := make([]float32, total)
				if err := LaunchCPU("cast_nhwc_nchw_"+k.name, l, []uint64{ptrSlot(want), ptrSlot(gotBack), i32Slot(n), i32Slot(c), i32Slot(hw)}); err != nil {
					t.Fatal(err)
				}
				if d := bitDiff(gotBack, back); d != 0 {
					t.Fatalf("%s %v launch %+v: cast_nhwc_nchw differs in %d values", k.name, s, l, d)
				}
			}
		}
	}
}
