package downscale

// Size is the output size of a w x h image under the Faster Training study's rule
// (resize_imagenet.py): an image whose shorter edge exceeds maxSize is
// resized so that its shorter edge is exactly maxSize, the longer edge
// computed as int((long/short) * maxSize) in float64, truncated, exactly as
// the Python script computes it (division first, then the product; a
// square counts as "portrait"). ok is false when the image is already small
// enough (shorter edge <= maxSize) and is to be copied as it is.
//
// Note the order of operations: augment.ShorterEdgeSize (torchvision's rule)
// computes size*long/short, which differs from the Faster Training study's (long/short)*size
// by one pixel for some sizes (2013x231 to 224: 1951 here, 1952 there).
func Size(w, h, maxSize int) (ow, oh int, ok bool) {
	if min(w, h) <= maxSize {
		return w, h, false
	}
	if h < w {
		return int(float64(w) / float64(h) * float64(maxSize)), maxSize, true
	}
	return maxSize, int(float64(h) / float64(w) * float64(maxSize)), true
}

// MinScaledEdge is how many times the target shorter edge the shorter edge
// of a DCT-scaled decode must keep: the decoder's scaling (close to a box
// filter) does at most the part of the reduction beyond a factor of
// MinScaledEdge, and the exact area filter always does at least that factor.
// With 2, the output stays within 45 dB PSNR of the unscaled path on
// photographs (TestScaledDecodePSNR); with 1 it drops to about 38 dB.
const MinScaledEdge = 2

// ScaleDenom is the DCT scale denominator (8, 4, 2 or 1) used to decode a
// w x h JPEG whose shorter edge will become maxSize: the largest d whose
// scaled shorter edge, ceil(short/d), is still at least MinScaledEdge*maxSize.
func ScaleDenom(w, h, maxSize int) int {
	short := min(w, h)
	for _, d := range [...]int{8, 4, 2} {
		if (short+d-1)/d >= MinScaledEdge*maxSize {
			return d
		}
	}
	return 1
}
