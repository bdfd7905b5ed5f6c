package augment

import (
	"math"
	"math/big"
)

// The trigonometry of torchvision's matrices for PIL images, as CPython's
// math module computes it (glibc's sin, cos, tan and atan, which round
// correctly but in cases rarer than these tests reach): the exact value
// of the float64 argument to 160 bits, rounded once to float64. Go's
// math.Tan and math.Atan are often one ulp off glibc's, and one ulp of a
// matrix coefficient moves a sampling position enough to change a
// truncated byte (PIL truncates its bicubic sums) on a few pixels of a
// photograph. Arguments beyond ±1e4 (no picture op draws them) fall back
// to Go's math.

const trigPrec = 160

// piBig is pi to 200 bits.
var piBig = func() *big.Float {
	p, _, err := big.ParseFloat("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803482534211706798214808651", 10, 200, big.ToNearestEven)
	if err != nil {
		panic(err)
	}
	return p
}()

func newF(x float64) *big.Float { return new(big.Float).SetPrec(trigPrec).SetFloat64(x) }

// sinCosBig is sin x and cos x to trigPrec bits, |x| <= 1e4.
func sinCosBig(x float64) (sin, cos *big.Float) {
	// r = x - k·2π, in [-π, π]
	r := newF(x)
	twoPi := new(big.Float).SetPrec(trigPrec).Mul(piBig, big.NewFloat(2))
	k := math.Round(x / (2 * math.Pi))
	r.Sub(r, new(big.Float).SetPrec(trigPrec).Mul(twoPi, newF(k)))
	r2 := new(big.Float).SetPrec(trigPrec).Mul(r, r)
	eps := new(big.Float).SetMantExp(big.NewFloat(1), -trigPrec-8)
	series := func(term *big.Float, n int) *big.Float {
		// term: the first term; each next is -term·r²/((n+1)(n+2))
		sum := new(big.Float).SetPrec(trigPrec).Set(term)
		t := new(big.Float).SetPrec(trigPrec).Set(term)
		for ; ; n += 2 {
			t.Mul(t, r2)
			t.Quo(t, newF(float64((n+1)*(n+2))))
			t.Neg(t)
			sum.Add(sum, t)
			if new(big.Float).Abs(t).Cmp(eps) < 0 {
				return sum
			}
		}
	}
	return series(r, 1), series(newF(1), 0)
}

func trigOK(x float64) bool { return x >= -1e4 && x <= 1e4 }

func pilSin(x float64) float64 {
	if !trigOK(x) {
		return math.Sin(x)
	}
	s, _ := sinCosBig(x)
	v, _ := s.Float64()
	return v
}

func pilCos(x float64) float64 {
	if !trigOK(x) {
		return math.Cos(x)
	}
	_, c := sinCosBig(x)
	v, _ := c.Float64()
	return v
}

func pilTan(x float64) float64 {
	if !trigOK(x) {
		return math.Tan(x)
	}
	s, c := sinCosBig(x)
	v, _ := s.Quo(s, c).Float64()
	return v
}

// pilAtan is atan x: halving the argument three times
// (atan x = 2 atan(x / (1 + sqrt(1 + x²)))), then its series.
func pilAtan(x float64) float64 {
	if !trigOK(x) || x == 0 {
		return math.Atan(x)
	}
	r := newF(x)
	one := newF(1)
	const halvings = 3
	for range halvings {
		d := new(big.Float).SetPrec(trigPrec).Mul(r, r)
		d.Add(d, one)
		d.Sqrt(d)
		d.Add(d, one)
		r.Quo(r, d)
	}
	r2 := new(big.Float).SetPrec(trigPrec).Mul(r, r)
	eps := new(big.Float).SetMantExp(big.NewFloat(1), -trigPrec-8)
	sum := new(big.Float).SetPrec(trigPrec).Set(r)
	p := new(big.Float).SetPrec(trigPrec).Set(r) // r^(2n+1)
	for n := 1; ; n++ {
		p.Mul(p, r2)
		p.Neg(p)
		t := new(big.Float).SetPrec(trigPrec).Quo(p, newF(float64(2*n+1)))
		sum.Add(sum, t)
		if new(big.Float).Abs(t).Cmp(eps) < 0 {
			break
		}
	}
	sum.SetMantExp(sum, halvings)
	v, _ := sum.Float64()
	return v
}
