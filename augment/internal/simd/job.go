package simd

// Axis is one axis's weight table as augment builds it: output i reads
// Count[i] samples from Start[i] with weights W[i*KSize:][:Count[i]], and
// the weights past Count[i] up to KSize are zero.
type Axis struct {
	N, KSize     int
	Start, Count []int32
	W            []int32
}

// Job is one resize: the horizontal pass over source rows [YLo, YHi) into
// Tmp8 (or Tmp16 when the intermediate is 16-bit), each sample
// (round + sum w*src) >> HShift clamped to [0, HMax], then the vertical
// pass of every output row from those rows, (round + sum w*tmp) >> VShift
// clamped to [0, 255]. Tmp8 or Tmp16 must hold (YHi-YLo)*H.N*Channels +
// TmpSlack samples, Weights WeightsLen(H.N, H.KSize, Channels).
type Job struct {
	Dst                 []uint8
	DstStride, DstH     int
	Src                 []uint8
	SrcStride, Channels int
	H, V                Axis
	YLo, YHi            int
	Tmp8                []uint8
	Tmp16               []uint16
	HShift, VShift      uint
	HMax                int32
	Weights             []int16
}

// TmpSlack is the number of samples past the intermediate rows that the
// horizontal kernel may overwrite.
const TmpSlack = 4

// WeightsLen is the number of int16 the kernels need in Job.Weights for a
// horizontal table of n outputs of ksize weights over ch channels.
func WeightsLen(n, ksize, ch int) int {
	if ch == 3 {
		return n * ((ksize + 3) / 4) * 32
	}
	return n * ((ksize + 7) / 8) * 16
}

// valid reports whether the slices of j are long enough for its sizes, so
// that the kernels stay inside them.
func (j *Job) valid() bool {
	h, v := &j.H, &j.V
	rowLen := h.N * j.Channels
	rows := j.YHi - j.YLo
	if h.N <= 0 || h.KSize <= 0 || j.DstH <= 0 || rows <= 0 || j.YLo < 0 || v.KSize < 0 ||
		(j.Channels != 1 && j.Channels != 3) || j.SrcStride <= 0 || j.DstStride < rowLen ||
		len(h.Start) < h.N || len(h.Count) < h.N || len(h.W) < h.N*h.KSize ||
		len(v.Start) < j.DstH || len(v.Count) < j.DstH || len(v.W) < j.DstH*v.KSize ||
		len(j.Dst) < (j.DstH-1)*j.DstStride+rowLen || len(j.Src) < (j.YHi-1)*j.SrcStride ||
		len(j.Weights) < WeightsLen(h.N, h.KSize, j.Channels) {
		return false
	}
	if need := rows*rowLen + TmpSlack; (j.Tmp16 == nil && len(j.Tmp8) < need) || (j.Tmp16 != nil && len(j.Tmp16) < need) {
		return false
	}
	for x := 0; x < h.N; x++ {
		s, n := int(h.Start[x]), int(h.Count[x])
		if s < 0 || n < 0 || n > h.KSize || (j.YHi-1)*j.SrcStride+(s+n)*j.Channels > len(j.Src) {
			return false
		}
	}
	for y := 0; y < j.DstH; y++ {
		s, n := int(v.Start[y]), int(v.Count[y])
		if n < 0 || n > v.KSize || (n > 0 && (s < j.YLo || s+n > j.YHi)) {
			return false
		}
	}
	return true
}
