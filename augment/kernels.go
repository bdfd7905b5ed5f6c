package augment

//go:generate python3 internal/gen/gen_kernels.py kernels_unrolled.go

// The per-pixel loops. They are written for the Go compiler's bounds-check
// elimination: every slice is re-sliced to its exact length before the loop
// so that the loop body indexes without checks, weights are integers, and
// the vertical pass walks whole rows (contiguous memory) with the taps
// unrolled.

type sample interface{ ~uint8 | ~uint16 }

// hpass resamples one source row (ch interleaved channels) into dst using
// the horizontal table c: dst[x] = (sum w*src + round) >> shift, clamped
// to maxv.
func hpass[T sample](dst []T, src []uint8, c *coeffs, ch int, shift uint, maxv int32) {
	if c.fixed && hpassFixed(dst, src, c.start[:c.n], c.w[:c.n*c.ksize], c.ksize, ch, shift, maxv) {
		return
	}
	round := int32(1) << (shift - 1)
	ks := c.ksize
	start := c.start[:c.n]
	count := c.count[:c.n]
	w := c.w[:c.n*ks]
	switch ch {
	case 3:
		dst = dst[:c.n*3]
		for x := range start {
			s0 := int(start[x])
			n := int(count[x])
			ww := w[x*ks : x*ks+n]
			ss := src[s0*3 : (s0+n)*3]
			r, g, b := round, round, round
			for k, wk := range ww {
				p := ss[k*3 : k*3+3 : k*3+3]
				r += int32(p[0]) * wk
				g += int32(p[1]) * wk
				b += int32(p[2]) * wk
			}
			d := dst[x*3 : x*3+3 : x*3+3]
			d[0] = T(min(max(r>>shift, 0), maxv))
			d[1] = T(min(max(g>>shift, 0), maxv))
			d[2] = T(min(max(b>>shift, 0), maxv))
		}
	default:
		dst = dst[:c.n]
		for x := range start {
			s0 := int(start[x])
			n := int(count[x])
			ww := w[x*ks : x*ks+n]
			ss := src[s0 : s0+n]
			v := round
			for k, wk := range ww {
				v += int32(ss[k]) * wk
			}
			dst[x] = T(min(max(v>>shift, 0), maxv))
		}
	}
}

// vpass computes one output row from the rows tmp[(first+k)*rowLen:] of the
// horizontal pass, k < len(w), with the weights w.
func vpass[T sample](dst []uint8, tmp []T, rowLen, first int, w []int32, shift uint, acc []int32) {
	dst = dst[:rowLen]
	if vpassFixed(dst, tmp, rowLen, first, w, shift) {
		return
	}
	round := int32(1) << (shift - 1)
	row := func(k int) []T { return tmp[(first+k)*rowLen : (first+k+1)*rowLen] }
	switch len(w) {
	case 1:
		r0, w0 := row(0), w[0]
		for i := range dst {
			dst[i] = uint8(min(max((round+int32(r0[i])*w0)>>shift, 0), 255))
		}
		return
	case 2:
		r0, r1, w0, w1 := row(0), row(1), w[0], w[1]
		r0, r1 = r0[:len(dst)], r1[:len(dst)]
		for i := range dst {
			s := round + int32(r0[i])*w0 + int32(r1[i])*w1
			dst[i] = uint8(min(max(s>>shift, 0), 255))
		}
		return
	case 3:
		r0, r1, r2 := row(0), row(1), row(2)
		w0, w1, w2 := w[0], w[1], w[2]
		r0, r1, r2 = r0[:len(dst)], r1[:len(dst)], r2[:len(dst)]
		for i := range dst {
			s := round + int32(r0[i])*w0 + int32(r1[i])*w1 + int32(r2[i])*w2
			dst[i] = uint8(min(max(s>>shift, 0), 255))
		}
		return
	case 4:
		r0, r1, r2, r3 := row(0), row(1), row(2), row(3)
		w0, w1, w2, w3 := w[0], w[1], w[2], w[3]
		r0, r1, r2, r3 = r0[:len(dst)], r1[:len(dst)], r2[:len(dst)], r3[:len(dst)]
		for i := range dst {
			s := round + int32(r0[i])*w0 + int32(r1[i])*w1 + int32(r2[i])*w2 + int32(r3[i])*w3
			dst[i] = uint8(min(max(s>>shift, 0), 255))
		}
		return
	}
	// Many taps: accumulate two rows at a time into acc.
	acc = acc[:len(dst)]
	for i := range acc {
		acc[i] = round
	}
	k := 0
	for ; k+1 < len(w); k += 2 {
		r0, r1, w0, w1 := row(k), row(k+1), w[k], w[k+1]
		r0, r1 = r0[:len(acc)], r1[:len(acc)]
		for i := range acc {
			acc[i] += int32(r0[i])*w0 + int32(r1[i])*w1
		}
	}
	if k < len(w) {
		r0, w0 := row(k), w[k]
		r0 = r0[:len(acc)]
		for i := range acc {
			acc[i] += int32(r0[i]) * w0
		}
	}
	for i := range dst {
		dst[i] = uint8(min(max(acc[i]>>shift, 0), 255))
	}
}
