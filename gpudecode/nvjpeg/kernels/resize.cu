/* resize.cu: the GPU decode's resample, flip and normalisation, one
 * source for two compilers (NVRTC after prelude_gpu.h, gcc after
 * prelude_cpu.h), kept to the subset both take: the prelude's macros and
 * types, integer arithmetic, no headers.
 *
 * It is Pillow's two-pass resample (ImagingResample: a horizontal pass
 * into 8-bit rows, then a vertical pass, each a sum of taps in 22-bit
 * fixed point rounded by 1<<21, shifted and clamped to 0..255), with the
 * weight tables computed on the host by tables.go exactly as package
 * augment computes them, so the bytes are augment's. A horizontal flip is
 * the reversed table; the centre crop of the eval recipe is a window of
 * the whole resize's tables.
 *
 * A batch is described by desc, NDESC i64 per image (tables.go's Desc):
 *   0 src offset (bytes into src)   1 src stride (bytes)
 *   2 first source row read (ylo)   3 rows read (yhi - ylo)
 *   4 tmp offset (bytes into tmp)   5 offset of the horizontal table in tab
 *   6 its taps per output (hk)      7 offset of the vertical table in tab
 *   8 its taps per output (vk)      9 dst offset (elements of dst)
 * A table at offset o: start[n], count[n], then w[n * k] (int32).
 * Pixels are interleaved with ch channels (3; 1 works too). Every kernel
 * takes gx first: the grid is gx blocks per image, block b working on
 * image b / gx (the preludes' IMAGE and FOR_EACH). */

#define NDESC 10
#define PREC 22

DEVICE u8 clip8(i32 v) {
	v >>= PREC;
	return (u8)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* resize_h: rows [ylo, ylo + rows) of each image resampled to outw
 * columns into tmp (rows x outw x ch bytes at the image's tmp offset). */
KERNEL resize_h(i32 gx, const u8 *src, u8 *tmp, const i32 *tab, const i64 *desc, i32 outw, i32 ch) {
	const i64 *d = desc + IMAGE * NDESC;
	i64 rowlen = (i64)outw * ch;
	i64 n = d[3] * rowlen;
	const i32 *start = tab + d[5];
	const i32 *count = start + outw;
	const i32 *w0 = count + outw;
	FOR_EACH(e, n) {
		i64 y = e / rowlen;
		i32 r = (i32)(e - y * rowlen);
		i32 x = r / ch, c = r - x * ch;
		const u8 *s = src + d[0] + (d[2] + y) * d[1] + (i64)start[x] * ch + c;
		const i32 *w = w0 + (i64)x * d[6];
		i32 acc = 1 << (PREC - 1);
		for (i32 k = 0; k < count[x]; k++)
			acc += (i32)s[(i64)k * ch] * w[k];
		tmp[d[4] + e] = clip8(acc);
	}
}

/* vsample is output row y, element r (x * ch + c), of the vertical pass. */
DEVICE u8 vsample(const u8 *tmp, const i32 *tab, const i64 *d, i32 outw, i32 outh, i32 ch, i32 y, i32 r) {
	const i32 *start = tab + d[7];
	const i32 *count = start + outh;
	const i32 *w = count + outh + (i64)y * d[8];
	i64 rowlen = (i64)outw * ch;
	const u8 *t = tmp + d[4] + (start[y] - d[2]) * rowlen + r;
	i32 acc = 1 << (PREC - 1);
	for (i32 k = 0; k < count[y]; k++)
		acc += (i32)t[k * rowlen] * w[k];
	return clip8(acc);
}

/* resize_v_u8: the vertical pass into uint8 HWC rows (dst + d[9]). */
KERNEL resize_v_u8(i32 gx, const u8 *tmp, u8 *dst, const i32 *tab, const i64 *desc, i32 outw, i32 outh, i32 ch) {
	const i64 *d = desc + IMAGE * NDESC;
	i64 rowlen = (i64)outw * ch;
	FOR_EACH(e, rowlen * outh) {
		i32 y = (i32)(e / rowlen);
		i32 r = (i32)(e - (i64)y * rowlen);
		dst[d[9] + e] = vsample(tmp, tab, d, outw, outh, ch, y, r);
	}
}

/* resize_v_f32: the vertical pass into float32 CHW rows (dst + d[9]),
 * each value lut[c * 256 + v]: (v/255 - mean) / std as
 * augment.NewNormalizer rounds it (the host computes the table). */
KERNEL resize_v_f32(i32 gx, const u8 *tmp, float *dst, const i32 *tab, const i64 *desc, const float *lut, i32 outw, i32 outh, i32 ch) {
	const i64 *d = desc + IMAGE * NDESC;
	i64 plane = (i64)outw * outh;
	FOR_EACH(e, plane * ch) {
		i32 c = (i32)(e / plane);
		i64 p = e - c * plane;
		i32 y = (i32)(p / outw), x = (i32)(p - (i64)y * outw);
		dst[d[9] + e] = lut[c * 256 + vsample(tmp, tab, d, outw, outh, ch, y, x * ch + c)];
	}
}
