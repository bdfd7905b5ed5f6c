package train

import "math"

// Resized is a Dataset whose images are those of another resized to H×W
// with PyTorch's antialiased bilinear filter
// (F.interpolate(mode="bilinear", antialias=True, align_corners=False):
// a triangle filter widened by the scale when shrinking, PIL's resize).
// Progressive resizing trains on it at a low resolution early. Its Fill
// is not safe for concurrent use (it holds one scratch buffer).
type Resized struct {
	Data    Dataset
	H, W    int
	rows    []taps // per output row: which input rows, with what weights
	cols    []taps
	scratch []float32
	tmp     []float32
}

type taps struct {
	lo int
	w  []float32
}

// NewResized resizes d's images to h×w.
func NewResized(d Dataset, h, w int) *Resized {
	_, ih, iw := d.Shape()
	return &Resized{Data: d, H: h, W: w, rows: aaTaps(ih, h), cols: aaTaps(iw, w)}
}

// aaTaps computes the antialiased bilinear weights of torch's
// _compute_indices_weights_aa for in → out samples.
func aaTaps(in, out int) []taps {
	scale := float64(in) / float64(out)
	support, inv := 1.0, 1.0
	if scale >= 1 {
		support, inv = scale, 1/scale
	}
	ts := make([]taps, out)
	for i := range ts {
		center := scale * (float64(i) + 0.5)
		lo := max(int(center-support+0.5), 0)
		hi := min(int(center+support+0.5), in)
		w := make([]float64, hi-lo)
		total := 0.0
		for j := range w {
			w[j] = max(0, 1-math.Abs((float64(j+lo)-center+0.5)*inv))
			total += w[j]
		}
		t := taps{lo: lo, w: make([]float32, len(w))}
		for j := range w {
			if total != 0 {
				t.w[j] = float32(w[j] / total)
			}
		}
		ts[i] = t
	}
	return ts
}

func (r *Resized) Len() int { return r.Data.Len() }

func (r *Resized) Shape() (c, h, w int) {
	c, _, _ = r.Data.Shape()
	return c, r.H, r.W
}

// Fill implements Dataset.
func (r *Resized) Fill(idx []int, x []float32, y []int) {
	c, ih, iw := r.Data.Shape()
	n := len(idx) * c
	if cap(r.scratch) < n*ih*iw {
		r.scratch = make([]float32, n*ih*iw)
	}
	if cap(r.tmp) < ih*r.W {
		r.tmp = make([]float32, ih*r.W)
	}
	src, tmp := r.scratch[:n*ih*iw], r.tmp[:ih*r.W]
	r.Data.Fill(idx, src, y)
	for p := range n {
		img, dst := src[p*ih*iw:(p+1)*ih*iw], x[p*r.H*r.W:(p+1)*r.H*r.W]
		for yy := range ih { // horizontal pass
			row := img[yy*iw : (yy+1)*iw]
			for ox, t := range r.cols {
				s := float32(0)
				for j, w := range t.w {
					s += w * row[t.lo+j]
				}
				tmp[yy*r.W+ox] = s
			}
		}
		for oy, t := range r.rows { // vertical pass
			out := dst[oy*r.W : (oy+1)*r.W]
			clear(out)
			for j, w := range t.w {
				in := tmp[(t.lo+j)*r.W : (t.lo+j+1)*r.W]
				for ox := range out {
					out[ox] += w * in[ox]
				}
			}
		}
	}
}
