package augment

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/faster-training/faster/imgcodec"
)

// RandomErasing is torchvision's RandomErasing(p, scale, ratio, value),
// which runs after normalisation, on the float32 CHW tensor. With
// probability P a rectangle of area fraction uniform in Scale and aspect
// ratio (height/width) log-uniform in Ratio is erased: set to Value (one
// per channel, or one for all), or, with RandomValue (torchvision's
// value="random"), to standard normal noise. The zero values of Scale and
// Ratio mean torchvision's (0.02, 0.33) and (0.3, 3.3); the zero Value is
// torchvision's default value=0.
type RandomErasing struct {
	P           float64
	Scale       [2]float64
	Ratio       [2]float64
	Value       []float32
	RandomValue bool
}

// ErasePlan is one draw of RandomErasing: the rectangle (top I, left J,
// height H, width W) and the values to write (one per channel, or
// C*H*W of them in CHW order for random noise). Erase is false when the
// sample is left alone (the coin said so, or ten draws found no rectangle
// that fits, where torchvision returns the image itself).
type ErasePlan struct {
	Erase      bool
	I, J, H, W int
	Values     []float32
}

// Draw draws the plan for a c x h x w tensor in torchvision's order: the
// coin, then up to ten (area, log-ratio) pairs, the noise if any, then the
// top and left offsets. Random noise goes into buf (grown as needed) and
// Values aliases it.
func (e *RandomErasing) Draw(rng *rand.Rand, c, h, w int, buf []float32) ErasePlan {
	if !(rng.Float64() < e.P) {
		return ErasePlan{}
	}
	scale, ratio := e.Scale, e.Ratio
	if scale == ([2]float64{}) {
		scale = [2]float64{0.02, 0.33}
	}
	if ratio == ([2]float64{}) {
		ratio = [2]float64{0.3, 3.3}
	}
	area := float64(h * w)
	lo, hi := math.Log(ratio[0]), math.Log(ratio[1])
	for range 10 {
		ea := area * (scale[0] + (scale[1]-scale[0])*rng.Float64())
		ar := math.Exp(lo + (hi-lo)*rng.Float64())
		// Compared before the conversion to int: a side beyond int (an
		// extreme ratio) or NaN is a miss, as torchvision's Python ints
		// compare.
		fh := math.RoundToEven(math.Sqrt(ea * ar))
		fw := math.RoundToEven(math.Sqrt(ea / ar))
		if !(fh >= 0 && fh < float64(h) && fw >= 0 && fw < float64(w)) {
			continue
		}
		eh, ew := int(fh), int(fw)
		p := ErasePlan{Erase: true, H: eh, W: ew}
		switch {
		case e.RandomValue:
			buf = grow(buf, c*eh*ew)
			for i := range buf {
				buf[i] = float32(rng.NormFloat64())
			}
			p.Values = buf
		case len(e.Value) == 0:
			p.Values = zeroValue[:]
		default:
			p.Values = e.Value
		}
		p.I = rng.IntN(h - eh + 1)
		p.J = rng.IntN(w - ew + 1)
		return p
	}
	return ErasePlan{}
}

var zeroValue = [1]float32{0}

// Erase writes the plan into t, a c x h x w float32 tensor (CHW), as
// torchvision's erase: t[..., I:I+H, J:J+W] = values.
func Erase(t []float32, c, h, w int, p ErasePlan) error {
	if !p.Erase {
		return nil
	}
	if len(t) < c*h*w || p.I < 0 || p.J < 0 || p.H < 0 || p.W < 0 || p.I+p.H > h || p.J+p.W > w {
		return fmt.Errorf("%w: erase %dx%d at (%d,%d) in %dx%dx%d (%d floats)", ErrSize, p.H, p.W, p.I, p.J, c, h, w, len(t))
	}
	perPixel := len(p.Values) == c*p.H*p.W && p.H*p.W > 1
	if !perPixel && len(p.Values) != 1 && len(p.Values) != c {
		return fmt.Errorf("augment: %d erase values for %d channels of %dx%d", len(p.Values), c, p.H, p.W)
	}
	for k := 0; k < c; k++ {
		plane := t[k*h*w:][:h*w]
		for y := 0; y < p.H; y++ {
			row := plane[(p.I+y)*w+p.J:][:p.W]
			if perPixel {
				copy(row, p.Values[(k*p.H+y)*p.W:][:p.W])
				continue
			}
			v := p.Values[min(k, len(p.Values)-1)]
			for x := range row {
				row[x] = v
			}
		}
	}
	return nil
}

// Cutout is FFCV's Cutout(crop_size, fill): a Size x Size square, its
// top-left corner uniform over the positions where it fits, set to Fill
// (uint8 RGB, before normalisation).
type Cutout struct {
	Size int
	Fill [3]uint8
}

// Draw draws the top-left corner (x, y) of the square in a w x h image:
// the row first, then the column, as FFCV draws them.
func (c *Cutout) Draw(rng *rand.Rand, w, h int) (x, y int) {
	y = rng.IntN(max(h-c.Size+1, 1))
	x = rng.IntN(max(w-c.Size+1, 1))
	return x, y
}

// Apply fills the square at (x, y), clipped to m.
func (c *Cutout) Apply(m *imgcodec.Image, x, y int) error {
	if err := checkImage(m); err != nil {
		return err
	}
	x0, y0 := max(x, 0), max(y, 0)
	x1, y1 := min(x+c.Size, m.Width), min(y+c.Size, m.Height)
	for yy := y0; yy < y1; yy++ {
		row := m.Pix[yy*m.Stride:][x0*m.Channels : x1*m.Channels]
		for i := range row {
			row[i] = c.Fill[min(i%m.Channels, 2)]
		}
	}
	return nil
}
