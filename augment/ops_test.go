package augment

import (
	"math"
	"testing"
)

// within fails when a count strays more than 5 standard deviations
// from n*p (the draws are seeded, so the test is deterministic).
func within(t *testing.T, what string, count, n int, p float64) {
	t.Helper()
	mean := float64(n) * p
	sd := math.Sqrt(float64(n) * p * (1 - p))
	if math.Abs(float64(count)-mean) > 5*sd+1 {
		t.Errorf("%s: %d of %d, want about %.0f (p=%g)", what, count, n, mean, p)
	}
}

// TestDrawDistributions draws many samples' parameters (fixed seeds):
// TrivialAugmentWide's op frequencies, bins and signs; ColorJitter's
// orders and ranges; RandomGrayscale's and RandomErasing's probabilities
// and rectangles; RandomAffine's and RandomRotation's ranges; Cutout's
// positions; RandAugment's and AutoAugment's ops. And that a fresh source
// for the same (seed, index) draws the same parameters.
func TestDrawDistributions(t *testing.T) {
	const n = 28000
	var ta TrivialAugmentWide
	tbl := TrivialAugmentTable(31)
	var ops [numAugOps]int
	var bins [31]int
	neg, signed := 0, 0
	for i := range uint64(n) {
		st := ta.Draw(NewRNG(1, i))
		if st != ta.Draw(NewRNG(1, i)) {
			t.Fatal("same (seed, index), another draw")
		}
		ops[st.Op]++
		if st.Op == OpInvert {
			t.Fatal("TrivialAugmentWide drew Invert")
		}
		if m := tbl[st.Op]; m != nil {
			k := -1
			for j, v := range m {
				if float64(v) == math.Abs(st.Magnitude) {
					k = j
					break
				}
			}
			if k < 0 {
				t.Fatalf("%v magnitude %v not in the table", st.Op, st.Magnitude)
			}
			if st.Op == OpRotate {
				bins[k]++
			}
		} else if st.Magnitude != 0 {
			t.Fatalf("%v magnitude %v", st.Op, st.Magnitude)
		}
		if st.Op.signed() && st.Magnitude != 0 {
			signed++
			if st.Magnitude < 0 {
				neg++
			}
		}
	}
	for op := OpIdentity; op < OpInvert; op++ {
		within(t, "TrivialAugmentWide "+op.String(), ops[op], n, 1.0/14)
	}
	for _, c := range bins {
		within(t, "Rotate bin", c, ops[OpRotate], 1.0/31)
	}
	within(t, "negative magnitudes", neg, signed, 0.5)

	// ColorJitter: every order equally often, factors in range.
	cj := ColorJitter{Brightness: JitterRange(0.4, 1), Contrast: JitterRange(0.4, 1), Saturation: JitterRange(0.4, 1), Hue: JitterRange(0.1, 0)}
	orders := map[[4]uint8]int{}
	for i := range uint64(n) {
		p := cj.Draw(NewRNG(2, i))
		orders[p.Order]++
		if p.Has != [4]bool{true, true, true, true} || p.Brightness < 0.6 || p.Brightness > 1.4 ||
			p.Contrast < 0.6 || p.Contrast > 1.4 || p.Saturation < 0.6 || p.Saturation > 1.4 || math.Abs(p.Hue) > 0.1 {
			t.Fatalf("jitter draw %+v", p)
		}
	}
	if len(orders) != 24 {
		t.Errorf("%d orders of 4, want 24", len(orders))
	}
	for _, c := range orders {
		within(t, "jitter order", c, n, 1.0/24)
	}
	if p := (&ColorJitter{Brightness: JitterRange(0.5, 1)}).Draw(NewRNG(2, 0)); p.Has != [4]bool{true, false, false, false} {
		t.Errorf("brightness-only jitter: %+v", p)
	}

	gray, erased := 0, 0
	re := RandomErasing{P: 0.5}
	for i := range uint64(n) {
		rng := NewRNG(3, i)
		if (RandomGrayscale{P: 0.1}).Draw(rng) {
			gray++
		}
		p := re.Draw(rng, 3, 224, 224, nil)
		if p.Erase {
			erased++
			a := float64(p.H*p.W) / (224 * 224)
			if p.I+p.H > 224 || p.J+p.W > 224 || a < 0.015 || a > 0.34 {
				t.Fatalf("erase %+v (area %.3f)", p, a)
			}
		}
	}
	within(t, "RandomGrayscale(0.1)", gray, n, 0.1)
	within(t, "RandomErasing(0.5)", erased, n, 0.5)

	ra := RandomAffine{Degrees: [2]float64{-10, 10}, Translate: &[2]float64{0.1, 0.2}, Scale: &[2]float64{0.9, 1.1}, Shear: &[4]float64{-5, 5, -3, 3}, ShearY: true}
	rr := RandomRotation{Degrees: [2]float64{-30, 30}}
	cut := Cutout{Size: 16}
	for i := range uint64(2000) {
		rng := NewRNG(4, i)
		p := ra.Draw(rng, 200, 100)
		if math.Abs(p.Angle) > 10 || abs(p.Translate[0]) > 20 || abs(p.Translate[1]) > 20 || p.Scale < 0.9 || p.Scale > 1.1 ||
			math.Abs(p.ShearX) > 5 || math.Abs(p.ShearY) > 3 {
			t.Fatalf("affine draw %+v", p)
		}
		if a := rr.Draw(rng); math.Abs(a) > 30 {
			t.Fatalf("rotation %v", a)
		}
		if x, y := cut.Draw(rng, 50, 40); x < 0 || y < 0 || x+16 > 50 || y+16 > 40 {
			t.Fatalf("cutout at %d,%d", x, y)
		}
	}

	rand := RandAugment{M: 9}
	aa := AutoAugment{}
	var raOps [numAugOps]int
	aaSteps := 0
	for i := range uint64(n / 4) {
		for _, st := range rand.Draw(NewRNG(5, i), 224, 224, nil) {
			raOps[st.Op]++
		}
		aaSteps += len(aa.Draw(NewRNG(6, i), 224, 224, nil))
	}
	for op := OpIdentity; op < OpInvert; op++ {
		within(t, "RandAugment "+op.String(), raOps[op], n/2, 1.0/14)
	}
	// AutoAugment's ImageNet policy runs sum(p)/25 ops per sample on average.
	var sum float64
	for _, sp := range ImageNetPolicy {
		sum += sp[0].p + sp[1].p
	}
	if got, want := float64(aaSteps)/float64(n/4), sum/25; math.Abs(got-want) > 0.05 {
		t.Errorf("AutoAugment: %.3f ops per sample, want %.3f", got, want)
	}
}

// TestAugMixDraws checks AugMix's draws: the weights add up to 1 (the
// Beta draw's halves), Beta(1,1) makes M0 uniform, depths 1 to 3, ops of
// AugMix's space only, bins below the severity.
func TestAugMixDraws(t *testing.T) {
	am := AugMix{}
	tbl := AugMixTable(224, 224)
	low, depth := 0, [4]int{}
	const n = 4000
	for i := range uint64(n) {
		p := am.Draw(NewRNG(7, i), 224, 224)
		sum := float64(p.M0)
		for _, w := range p.Weights {
			sum += float64(w)
		}
		if math.Abs(sum-1) > 1e-5 || len(p.Chains) != 3 {
			t.Fatalf("draw %+v: weights sum to %v", p, sum)
		}
		if p.M0 < 0.25 {
			low++
		}
		for _, c := range p.Chains {
			depth[len(c)]++
			for _, st := range c {
				if st.Op == OpIdentity || st.Op == OpInvert {
					t.Fatalf("AugMix drew %v", st.Op)
				}
				if m := tbl[st.Op]; m != nil {
					ok := false
					for _, v := range m[:3] {
						ok = ok || float64(v) == math.Abs(st.Magnitude)
					}
					if !ok {
						t.Fatalf("%v magnitude %v beyond severity 3", st.Op, st.Magnitude)
					}
				}
			}
		}
	}
	within(t, "AugMix M0 < 1/4 (Beta(1,1))", low, n, 0.25)
	for d := 1; d <= 3; d++ {
		within(t, "AugMix chain depth", depth[d], 3*n, 1.0/3)
	}
}

func TestCutout(t *testing.T) {
	m := NewImage(10, 8, 3)
	for i := range m.Pix {
		m.Pix[i] = 9
	}
	c := Cutout{Size: 4, Fill: [3]uint8{1, 2, 3}}
	if err := c.Apply(m, 6, 5); err != nil {
		t.Fatal(err)
	}
	n := 0
	for y := range 8 {
		for x := range 10 {
			p := m.Pix[y*m.Stride+x*3:][:3]
			in := x >= 6 && y >= 5
			if in != (p[0] == 1 && p[1] == 2 && p[2] == 3) || !in && p[0] != 9 {
				t.Fatalf("pixel %d,%d = %v", x, y, p)
			}
			if in {
				n++
			}
		}
	}
	if n != 12 {
		t.Errorf("%d pixels filled, want 12 (clipped square)", n)
	}
}
