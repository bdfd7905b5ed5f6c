package augment

import (
	"math"
	"testing"
)

// pilToHSVFmod and pilFromHSVFloor are PIL's conversions with Convert.c's
// fmod and floor per pixel: pilToHSV and pilFromHSV compute the same
// bytes with the fmod replaced (its argument lies in [5/6, 2)) and the
// hue's sector tabled.
func pilToHSVFmod(r, g, b uint8) (h, s, v uint8) {
	hf, sf, v, grey := pilHueRaw(r, g, b)
	if grey {
		return 0, 0, v
	}
	return pilHSVBytes(float32(math.Mod(float64(hf)/6.0+1.0, 1.0)), sf, v)
}

func pilFromHSVFloor(h, s, v uint8) (r, g, b uint8) {
	if s == 0 {
		return v, v, v
	}
	i, f := pilSector(h)
	return pilFromSector(i%6, f, s, v)
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
