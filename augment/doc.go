// Package augment owns the per-sample image transforms of a training input
// pipeline: resize (an exact area average like OpenCV's INTER_AREA, and
// Pillow's BILINEAR, BICUBIC and NEAREST bit for bit: the interpolations
// torchvision applies to PIL images), random-resized-crop with
// the crop decoded at the smallest DCT scale that still covers the output,
// centre crop, resize of the shorter edge, horizontal flip, and
// normalisation with mean/std to float32 CHW.
//
// # Flow of one training sample
//
//	rng := augment.NewRNG(seed, index)          // reproducible per sample
//	cfg, _ := imgcodec.DecodeConfig(data)
//	p := t.Plan(rng, cfg.Width, cfg.Height)       // crop, DCT scale, flip
//	img, _ := imgcodec.Decode(data, &p.Decode)    // only the crop, scaled
//	a.Apply(dst, img, p)                          // resize + flip into dst (uint8 HWC)
//	norm.CHW(out, dst)                            // float32 CHW, (x/255-mean)/std
//
// Plan works in the coordinates of the full-size image and hands the
// decoder a crop in the coordinates of the scaled image; the exact
// (fractional) crop box left after the decoder's rounding goes to the
// resampler as a Box, so the geometry is the one torchvision would use on
// the full-size image, whatever ScaleDenom the plan chose.
//
// # Kernels
//
// Both filters are separable: a horizontal pass over only the source rows
// the output needs, into a row buffer, then a vertical pass a whole output
// row at a time. Weights are precomputed per call in fixed point (no
// floating point per pixel). The triangle and bicubic filters reproduce
// Pillow's arithmetic bit for bit (22-bit weights, 8-bit intermediate);
// nearest is a one-tap table of Pillow's sample positions on the same
// kernels. ResizeView computes a crop of a larger resize (Resize then
// CenterCrop) with the whole resize's weights, as Pillow would. The area
// filter follows OpenCV's weight table (computeResizeAreaTab) with 14-bit
// weights and a 7-bit-fraction intermediate; when the output is larger than
// the source on either axis it uses OpenCV's INTER_AREA upscaling rule
// (bilinear with area-derived weights), as cv2.resize does.
//
// Horizontal flip is free inside a resize: the horizontal weight table is
// reversed.
//
// With cgo on x86 the passes run in internal/simd (SSSE3 or AVX2, chosen at
// run time), one cgo call per image; they form the same integer sums as the
// Go kernels and so give the same bytes. Without cgo, or where those
// kernels cannot run a job, the Go kernels run.
//
// # Concurrency
//
// Functions without a receiver are safe for concurrent use. A Resizer,
// Augmenter or *rand.Rand holds scratch state: use one per goroutine.
// Normalizer is read-only after NewNormalizer and may be shared.
package augment
