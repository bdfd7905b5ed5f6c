package augment

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/faster-training/faster/imgcodec"
)

// warpRef is Warp as it was before its fast paths (one general loop over
// every pixel, each corner bounds-checked): the reference the fast paths
// must equal byte for byte.
func (s *Scratch) warpRef(m *imgcodec.Image, mat [6]float64, interp Interp, fill []float64) error {
	if err := checkImage(m); err != nil {
		return err
	}
	w, h, ch := m.Width, m.Height, m.Channels
	rowLen := w * ch
	s.src = grow(s.src, rowLen*h)
	src := s.src
	for y := 0; y < h; y++ {
		copy(src[y*rowLen:][:rowLen], m.Pix[y*m.Stride:][:rowLen])
	}
	var fillv [3]float32
	if fill != nil {
		if len(fill) != 1 && len(fill) != ch {
			return fmt.Errorf("augment: %d fill values for %d channels", len(fill), ch)
		}
		for c := range ch {
			fillv[c] = float32(fill[min(c, len(fill)-1)])
		}
	}
	// _gen_affine_grid: theta^T / [w/2, h/2], applied to the centred
	// pixel coordinates (x + 0.5 - w/2, y + 0.5 - h/2, 1).
	hw, hh := float32(0.5*float64(w)), float32(0.5*float64(h))
	var t [6]float32
	for i := range t {
		t[i] = float32(mat[i])
	}
	ax, bx, cx := t[0]/hw, t[1]/hw, t[2]/hw
	ay, by, cy := t[3]/hh, t[4]/hh, t[5]/hh
	// grid_sample's unnormalize: (g + 1) * size/2 - 0.5
	sw, sh := float32(w)/2, float32(h)/2
	var vals [3]float32
	for oy := 0; oy < h; oy++ {
		gyb := float32(oy) + 0.5 - hh
		out := m.Pix[oy*m.Stride:][:rowLen]
		for ox := 0; ox < w; ox++ {
			gxb := float32(ox) + 0.5 - hw
			gx := float32(gxb*ax) + float32(gyb*bx) + cx
			gy := float32(gxb*ay) + float32(gyb*by) + cy
			ix := float32((gx+1)*sw) - 0.5
			iy := float32((gy+1)*sh) - 0.5
			o := out[ox*ch : ox*ch+ch : ox*ch+ch]
			if interp == WarpNearest {
				nx := math.RoundToEven(float64(ix))
				ny := math.RoundToEven(float64(iy))
				if nx >= 0 && nx < float64(w) && ny >= 0 && ny < float64(h) {
					p := src[int(ny)*rowLen+int(nx)*ch:]
					copy(o, p[:ch])
					continue
				}
				if fill == nil {
					clear(o)
					continue
				}
				for c := range ch {
					o[c] = round8(fillv[c])
				}
				continue
			}
			x0, y0 := floor32(ix), floor32(iy)
			wx := ix - float32(x0)
			wy := iy - float32(y0)
			ex, sy := 1-wx, 1-wy
			wnw, wne := float32(sy*ex), float32(sy*wx)
			wsw, wse := float32(wy*ex), float32(wy*wx)
			inX0, inX1 := x0 >= 0 && x0 < w, x0+1 >= 0 && x0+1 < w
			inY0, inY1 := y0 >= 0 && y0 < h, y0+1 >= 0 && y0+1 < h
			vals = [3]float32{}
			var mask float32
			// The corners in grid_sample's order (nw, ne, sw, se); one
			// outside the image adds nothing (zero padding).
			if inX0 && inY0 {
				p := src[y0*rowLen+x0*ch:][:ch]
				for c := range p {
					vals[c] += float32(wnw * float32(p[c]))
				}
				mask += wnw
			}
			if inX1 && inY0 {
				p := src[y0*rowLen+(x0+1)*ch:][:ch]
				for c := range p {
					vals[c] += float32(wne * float32(p[c]))
				}
				mask += wne
			}
			if inX0 && inY1 {
				p := src[(y0+1)*rowLen+x0*ch:][:ch]
				for c := range p {
					vals[c] += float32(wsw * float32(p[c]))
				}
				mask += wsw
			}
			if inX1 && inY1 {
				p := src[(y0+1)*rowLen+(x0+1)*ch:][:ch]
				for c := range p {
					vals[c] += float32(wse * float32(p[c]))
				}
				mask += wse
			}
			for c := range ch {
				v := vals[c]
				if fill != nil {
					v = float32(v*mask) + float32((1-mask)*fillv[c])
				}
				o[c] = round8(v)
			}
		}
	}
	return nil
}

// The fast paths of Warp (per-column products, the all-inside bilinear
// path for RGB) give exactly the bytes of the general loop, for rotations,
// shears, translations and scales, nearest and bilinear, with and without
// fill, on RGB and grey images of many sizes (tiny, odd, a real photo).
func TestWarpEqualsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var images []*imgcodec.Image
	for _, wh := range [][2]int{{1, 1}, {2, 3}, {5, 4}, {17, 9}, {64, 48}, {101, 77}} {
		for _, ch := range []int{1, 3} {
			m := NewImage(wh[0], wh[1], ch)
			for i := range m.Pix {
				m.Pix[i] = uint8(rng.IntN(256))
			}
			images = append(images, m)
		}
	}
	if photos := tvPhotoFilesPresent(); len(photos) > 0 {
		full := loadImage(t, photos[0])
		var r Resizer
		m := NewImage(224, 168, 3)
		if err := r.Resize(m, full, Triangle); err != nil {
			t.Fatal(err)
		}
		images = append(images, m)
	}
	var s, sr Scratch
	cases := 0
	for _, m := range images {
		for k := range 40 {
			angle := rng.Float64()*360 - 180
			tr := [2]float64{math.Round(rng.Float64()*80 - 40), rng.Float64()*60 - 30}
			scale := 0.7 + rng.Float64()*0.6
			shear := [2]float64{rng.Float64()*60 - 30, rng.Float64()*20 - 10}
			switch k % 4 {
			case 0: // rotation only, as Rotate
				tr, scale, shear = [2]float64{}, 1, [2]float64{}
			case 1: // TranslateX/Y: integral pixels
				angle, scale, shear = 0, 1, [2]float64{}
			case 2: // ShearX
				angle, tr, scale, shear[1] = 0, [2]float64{}, 1, 0
			}
			mat := InverseAffine(m.Width, m.Height, nil, angle, tr, scale, shear)
			for _, interp := range []Interp{WarpNearest, WarpBilinear} {
				for _, fill := range [][]float64{nil, {128}, {10, 200, 0}, {-40, 300, 255}} {
					if len(fill) == 3 && m.Channels != 3 {
						continue
					}
					want := cloneImage(m)
					if err := sr.warpRef(want, mat, interp, fill); err != nil {
						t.Fatal(err)
					}
					// With the SIMD kernel (where the CPU has it) and
					// without: the Go kernels.
					for _, useSIMD := range []bool{true, false} {
						warpSIMD = useSIMD
						got := cloneImage(m)
						err := s.Warp(got, mat, interp, fill)
						warpSIMD = true
						if err != nil {
							t.Fatal(err)
						}
						if !bytes.Equal(got.Pix, want.Pix) {
							t.Fatalf("simd %v: %dx%dx%d angle %.3f translate %v scale %.3f shear %v %v fill %v: %s", useSIMD,
								m.Width, m.Height, m.Channels, angle, tr, scale, shear, interp, fill, firstDiff(got.Pix, want.Pix))
						}
						cases++
					}
				}
			}
		}
	}
	t.Logf("%d warps equal to the reference", cases)
}

func tvPhotoFilesPresent() []string {
	var out []string
	for _, f := range tvPhotoFiles {
		if _, err := os.Stat(f); err == nil {
			out = append(out, f)
		}
	}
	return out
}

func firstDiff(a, b []byte) string {
	for i := range a {
		if a[i] != b[i] {
			return fmt.Sprintf("first difference at byte %d: %d, want %d", i, a[i], b[i])
		}
	}
	return "lengths differ"
}
