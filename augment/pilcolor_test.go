package augment

import (
	"math"
	"testing"
)

// pilToHSVFmod and pilFromHSVFloor are PIL's conversions as Convert.c
// writes them (fmod, floor per pixel): pilToHSV and pilFromHSV compute
// the same bytes with the fmod replaced (its argument lies in [5/6, 2))
// and the hue's sector tabled.
func pilToHSVFmod(r, g, b uint8) (h, s, v uint8) {
	maxc, minc := max(r, g, b), min(r, g, b)
	if maxc == minc {
		return 0, 0, maxc
	}
	cr := float32(maxc - minc)
	sf := float32(cr / float32(maxc))
	rc := float32(float32(maxc-r) / cr)
	gc := float32(float32(maxc-g) / cr)
	bc := float32(float32(maxc-b) / cr)
	var hf float32
	switch {
	case r == maxc:
		hf = float32(bc - gc)
	case g == maxc:
		hf = float32(2.0 + float64(rc) - float64(bc))
	default:
		hf = float32(4.0 + float64(gc) - float64(rc))
	}
	hf = float32(math.Mod(float64(hf)/6.0+1.0, 1.0))
	return clip8i(int(float64(hf) * 255.0)), clip8i(int(float64(sf) * 255.0)), maxc
}

func pilFromHSVFloor(h, s, v uint8) (r, g, b uint8) {
	if s == 0 {
		return v, v, v
	}
	x := float64(float32(h)) * 6.0 / 255.0
	i := int(math.Floor(x))
	f := float32(x - float64(float32(i)))
	fs := float32(float64(float32(s)) / 255.0)
	fv := float64(float32(v))
	p := clip8i(int(math.Round(fv * (1.0 - float64(fs)))))
	q := clip8i(int(math.Round(fv * (1.0 - float64(float32(fs*f))))))
	t := clip8i(int(math.Round(fv * (1.0 - float64(float64(fs)*(1.0-float64(f)))))))
	switch i % 6 {
	case 0:
		return v, t, p
	case 1:
		return q, v, p
	case 2:
		return p, v, t
	case 3:
		return p, q, v
	case 4:
		return t, p, v
	}
	return v, p, q
}

// Every one of the 2^24 colours, both ways (every 61st under the race
// detector, where the walk takes twenty seconds): the same bytes as
// Convert.c's expressions.
func TestPILHSVExhaustive(t *testing.T) {
	step := 1
	if raceOn {
		step = 61
	}
	bad := 0
	for c := 0; c < 1<<24; c += step {
		a, b, d := uint8(c>>16), uint8(c>>8), uint8(c)
		h, s, v := pilToHSV(a, b, d)
		h0, s0, v0 := pilToHSVFmod(a, b, d)
		r, g, bb := pilFromHSV(a, b, d)
		r0, g0, b0 := pilFromHSVFloor(a, b, d)
		if h != h0 || s != s0 || v != v0 || r != r0 || g != g0 || bb != b0 {
			if bad++; bad <= 5 {
				t.Errorf("%d,%d,%d: to HSV %d,%d,%d (Convert.c %d,%d,%d), from HSV %d,%d,%d (%d,%d,%d)", a, b, d, h, s, v, h0, s0, v0, r, g, bb, r0, g0, b0)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d colours differ", bad)
	}
}
