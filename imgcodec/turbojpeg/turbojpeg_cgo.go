//go:build cgo

package turbojpeg

/*
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <jpeglib.h>
#include <jerror.h>

enum { FJ_OK, FJ_ERROR, FJ_TRUNCATED, FJ_UNSUPPORTED, FJ_MISMATCH, FJ_TOO_LARGE, FJ_BAD_CROP, FJ_TOO_MANY_SCANS };

typedef struct {
	int width, height, components, color_space, progressive, arith, precision;
	int out_width, out_height;
	int code;      // FJ_*
	int msg_code;  // libjpeg's code of the fatal error
	int warnings;  // number of warnings
	int truncated; // a warning said data is missing
	long offset;   // input bytes consumed when decoding stopped
	char msg[JMSG_LENGTH_MAX];  // the fatal error
	char warn[JMSG_LENGTH_MAX]; // the first warning
} fj_result;

typedef struct {
	struct jpeg_error_mgr pub;
	jmp_buf jb;
	fj_result *res;
	int allow_truncated;
} fj_err;

typedef struct {
	struct jpeg_progress_mgr pub;
	fj_err *err;
	int max_scans, max_passes, last_scan;
	long long work, budget; // blocks the scans so far go over; max_passes times the image's
} fj_progress;

static void fj_error_exit(j_common_ptr c) {
	fj_err *e = (fj_err *)c->err;
	e->res->msg_code = c->err->msg_code;
	(*c->err->format_message)(c, e->res->msg);
	if (e->res->code == FJ_OK) e->res->code = FJ_ERROR;
	longjmp(e->jb, 1);
}

static void fj_emit_message(j_common_ptr c, int level) {
	fj_err *e = (fj_err *)c->err;
	int code = c->err->msg_code;
	if (level >= 0) return; // trace messages
	c->err->num_warnings++;
	if (e->res->warnings++ == 0) (*c->err->format_message)(c, e->res->warn);
	if (code == JWRN_JPEG_EOF || code == JWRN_HIT_MARKER) {
		e->res->truncated = 1;
		if (!e->allow_truncated) {
			e->res->code = FJ_TRUNCATED;
			e->res->msg_code = code;
			(*c->err->format_message)(c, e->res->msg);
			longjmp(e->jb, 1);
		}
	}
}

// fj_progress_monitor is called before each iMCU row libjpeg reads (and
// each batch of rows it outputs). At a new scan it counts the blocks the
// scan goes over and stops a file whose scans go over the image's blocks
// more than max_passes times (or that has more than max_scans scans)
// before the scan is decoded: a backstop to the Go walk of the markers
// (rawimg.CheckJPEGScans), which refuses such a file before decoding.
static void fj_progress_monitor(j_common_ptr c) {
	fj_progress *p = (fj_progress *)c->progress;
	j_decompress_ptr d = (j_decompress_ptr)c;
	int i;
	if (!c->is_decompressor || d->input_scan_number == p->last_scan) return;
	p->last_scan = d->input_scan_number;
	if (p->budget == 0) {
		for (i = 0; i < d->num_components; i++)
			p->budget += (long long)d->comp_info[i].width_in_blocks * d->comp_info[i].height_in_blocks;
		p->budget *= p->max_passes;
	}
	for (i = 0; i < d->comps_in_scan; i++)
		p->work += (long long)d->cur_comp_info[i]->width_in_blocks * d->cur_comp_info[i]->height_in_blocks;
	if (d->input_scan_number > p->max_scans || p->work > p->budget) {
		p->err->res->code = FJ_TOO_MANY_SCANS;
		snprintf(p->err->res->msg, JMSG_LENGTH_MAX, "too many scans: scan %d goes over the image's blocks more than %d times in all, or past %d scans (a scan bomb)",
			d->input_scan_number, p->max_passes, p->max_scans);
		longjmp(p->err->jb, 1);
	}
}

static void fj_fill_header(j_decompress_ptr d, fj_result *r) {
	r->width = d->image_width;
	r->height = d->image_height;
	r->components = d->num_components;
	r->color_space = d->jpeg_color_space;
	r->progressive = d->progressive_mode;
	r->arith = d->arith_code;
	r->precision = d->data_precision;
}

static void fj_fill_offset(j_decompress_ptr d, const unsigned char *src, unsigned long n, fj_result *r) {
	r->offset = -1;
	if (d->src != NULL) {
		const unsigned char *p = d->src->next_input_byte;
		if (p >= src && p <= src + n) r->offset = (long)(p - src);
		else r->offset = (long)n; // libjpeg substituted a fake EOI: all consumed
	}
}

static void fj_setup(j_decompress_ptr d, fj_err *e, fj_progress *p, fj_result *r, int allow_truncated) {
	d->err = jpeg_std_error(&e->pub);
	e->pub.error_exit = fj_error_exit;
	e->pub.emit_message = fj_emit_message;
	e->res = r;
	e->allow_truncated = allow_truncated;
	p->pub.progress_monitor = fj_progress_monitor;
	p->err = e;
	p->max_scans = 1000;
	p->max_passes = 64;
	p->last_scan = 0;
	p->work = p->budget = 0;
}

static int fj_header(const unsigned char *src, unsigned long n, fj_result *r) {
	struct jpeg_decompress_struct d;
	fj_err e;
	fj_progress p;
	memset(&d, 0, sizeof d);
	fj_setup(&d, &e, &p, r, 1);
	if (setjmp(e.jb)) {
		fj_fill_offset(&d, src, n, r);
		jpeg_destroy_decompress(&d);
		return r->code;
	}
	jpeg_create_decompress(&d);
	d.progress = &p.pub;
	jpeg_mem_src(&d, src, n);
	jpeg_read_header(&d, TRUE);
	fj_fill_header(&d, r);
	jpeg_destroy_decompress(&d);
	return r->code;
}

// fj_convert writes n pixels of a scratch row (in_ch bytes each: 1, 3 or
// Adobe CMYK 4) to dst as out_ch bytes each.
static void fj_convert(const JSAMPLE *s, unsigned char *dst, int n, int in_ch, int out_ch) {
	int i;
	if (in_ch == out_ch) {
		memcpy(dst, s, (size_t)n * out_ch);
		return;
	}
	for (i = 0; i < n; i++, s += 4) {
		unsigned w = s[3] * 0x101u;
		unsigned r = (s[0] * 0x101u * w / 0xffffu) >> 8;
		unsigned g = (s[1] * 0x101u * w / 0xffffu) >> 8;
		unsigned b = (s[2] * 0x101u * w / 0xffffu) >> 8;
		if (out_ch == 3) {
			dst[3*i] = r; dst[3*i+1] = g; dst[3*i+2] = b;
		} else {
			dst[i] = (19595u * r + 38470u * g + 7471u * b + 32768u) >> 16;
		}
	}
}

#define FJ_BATCH 16
#define FJ_MARGIN 2

// fj_start creates d, reads the header into r and checks it: at most
// max_pixels (FJ_TOO_LARGE), want_w x want_h (FJ_MISMATCH, the real size
// in r). It returns r->code, 0 when decoding may go on; the caller, whose
// frame holds the setjmp a libjpeg error jumps to, destroys d on failure.
static int fj_start(struct jpeg_decompress_struct *d, fj_progress *p, const unsigned char *src, unsigned long n,
		int want_w, int want_h, long long max_pixels, fj_result *r) {
	jpeg_create_decompress(d);
	d->progress = &p->pub;
	jpeg_mem_src(d, src, n);
	jpeg_read_header(d, TRUE);
	fj_fill_header(d, r);
	if ((long long)d->image_width * d->image_height > max_pixels) {
		r->code = FJ_TOO_LARGE;
	} else if ((int)d->image_width != want_w || (int)d->image_height != want_h) {
		r->code = FJ_MISMATCH;
	}
	return r->code;
}

// fj_decode decodes src into dst (dst_stride bytes per row, crop_h rows of
// crop_w pixels of gray?1:3 bytes). want_w and want_h are the image size
// the caller computed from the header; if libjpeg disagrees, nothing is
// written and the code is FJ_MISMATCH with the real size in r.
static int fj_decode(const unsigned char *src, unsigned long n, int want_w, int want_h,
		int denom, int gray, int crop_x, int crop_y, int crop_w, int crop_h,
		long long max_pixels, int allow_truncated, int max_scans, int max_passes,
		unsigned char *dst, long dst_stride, fj_result *r) {
	struct jpeg_decompress_struct d;
	fj_err e;
	fj_progress p;
	int cmyk, in_ch, out_ch = gray ? 1 : 3, direct, read_all;
	JDIMENSION xoff, xw, y, got, i, lead;
	JSAMPROW rows[FJ_BATCH];
	JSAMPARRAY scratch = NULL;

	memset(&d, 0, sizeof d);
	fj_setup(&d, &e, &p, r, allow_truncated);
	p.max_scans = max_scans;
	p.max_passes = max_passes;
	if (setjmp(e.jb)) {
		fj_fill_offset(&d, src, n, r);
		jpeg_destroy_decompress(&d);
		return r->code;
	}
	if (fj_start(&d, &p, src, n, want_w, want_h, max_pixels, r)) {
		jpeg_destroy_decompress(&d);
		return r->code;
	}
	switch (d.jpeg_color_space) {
	case JCS_GRAYSCALE: case JCS_YCbCr: case JCS_RGB:
		cmyk = 0;
		d.out_color_space = gray ? JCS_GRAYSCALE : JCS_RGB;
		break;
	case JCS_CMYK: case JCS_YCCK:
		cmyk = 1;
		d.out_color_space = JCS_CMYK;
		break;
	default:
		r->code = FJ_UNSUPPORTED;
		snprintf(r->msg, JMSG_LENGTH_MAX, "%d-component JPEG of unknown colour space", d.num_components);
		jpeg_destroy_decompress(&d);
		return r->code;
	}
	d.scale_num = 1;
	d.scale_denom = denom;
	jpeg_start_decompress(&d);
	r->out_width = d.output_width;
	r->out_height = d.output_height;
	if (crop_x < 0 || crop_y < 0 || crop_w <= 0 || crop_h <= 0 ||
	    (JDIMENSION)(crop_x + crop_w) > d.output_width || (JDIMENSION)(crop_y + crop_h) > d.output_height) {
		r->code = FJ_BAD_CROP;
		jpeg_destroy_decompress(&d);
		return r->code;
	}
	in_ch = d.output_components;
	// libjpeg upsamples chroma at the edges of a cropped or skipped region
	// by replication, not from the neighbours outside it. Decode a margin
	// around the crop so that its pixels equal those of a full decode: a
	// fancy upsampler reads one chroma sample beyond the pixel, so one
	// pixel suffices (TestCropDecode fails with none); FJ_MARGIN is two, and
	// jpeg_crop_scanline moves the left edge further, to an iMCU boundary.
	// (It was 32: up to a quarter more pixels decoded for a typical crop.)
	xoff = crop_x > FJ_MARGIN ? crop_x - FJ_MARGIN : 0;
	xw = (JDIMENSION)(crop_x + crop_w + FJ_MARGIN) < d.output_width ? crop_x + crop_w + FJ_MARGIN - xoff : d.output_width - xoff;
	if (xoff != 0 || xw != d.output_width) jpeg_crop_scanline(&d, &xoff, &xw);
	lead = crop_y > FJ_MARGIN ? FJ_MARGIN : crop_y;
	if (crop_y > (int)lead) jpeg_skip_scanlines(&d, crop_y - lead);
	direct = !cmyk && xoff == (JDIMENSION)crop_x && xw == (JDIMENSION)crop_w;
	if (!direct || lead > 0)
		scratch = (*d.mem->alloc_sarray)((j_common_ptr)&d, JPOOL_IMAGE, xw * in_ch, FJ_BATCH);
	while (lead > 0) {
		got = jpeg_read_scanlines(&d, scratch, lead < FJ_BATCH ? lead : FJ_BATCH);
		if (got == 0) break;
		lead -= got;
	}
	for (y = 0; y < (JDIMENSION)crop_h; y += got) {
		JDIMENSION want = crop_h - y;
		if (want > FJ_BATCH) want = FJ_BATCH;
		if (direct) {
			for (i = 0; i < want; i++) rows[i] = dst + (y + i) * dst_stride;
			got = jpeg_read_scanlines(&d, rows, want);
		} else {
			got = jpeg_read_scanlines(&d, scratch, want);
			for (i = 0; i < got; i++)
				fj_convert(scratch[i] + (crop_x - xoff) * in_ch, dst + (y + i) * dst_stride, crop_w, in_ch, out_ch);
		}
		if (got == 0) {
			r->code = FJ_ERROR;
			snprintf(r->msg, JMSG_LENGTH_MAX, "decoder returned no scanlines");
			fj_fill_offset(&d, src, n, r);
			jpeg_destroy_decompress(&d);
			return r->code;
		}
	}
	read_all = d.output_scanline == d.output_height;
	if (read_all) jpeg_finish_decompress(&d);
	fj_fill_offset(&d, src, n, r);
	jpeg_destroy_decompress(&d);
	return r->code;
}

// fj_decode420 decodes a YCbCr JPEG with 2x2 luma and 1x1 chroma sampling
// (4:2:0, what cameras and ImageNet mostly store) at 1/denom scale into its
// planes as stored, without upsampling the chroma or converting colours
// (libjpeg's raw_data_out): y (y_stride bytes a row) and cb, cr (c_stride)
// must hold rows MCU rows of 16/denom luma and 8/denom chroma rows each,
// and y_stride, c_stride the MCU columns' 16/denom and 8/denom samples. Any
// other sampling or colour space is FJ_UNSUPPORTED, before any output.
static int fj_decode420(const unsigned char *src, unsigned long n, int want_w, int want_h, int denom,
		long long max_pixels, int max_scans, int max_passes, int mcu_rows,
		unsigned char *y, long y_stride, unsigned char *cb, unsigned char *cr, long c_stride, fj_result *r) {
	struct jpeg_decompress_struct d;
	fj_err e;
	fj_progress p;
	JSAMPROW yr[16], cbr[8], crr[8];
	JSAMPARRAY planes[3] = {yr, cbr, crr};
	int i, ly, lc, row;

	memset(&d, 0, sizeof d);
	fj_setup(&d, &e, &p, r, 0);
	p.max_scans = max_scans;
	p.max_passes = max_passes;
	if (setjmp(e.jb)) {
		fj_fill_offset(&d, src, n, r);
		jpeg_destroy_decompress(&d);
		return r->code;
	}
	if (fj_start(&d, &p, src, n, want_w, want_h, max_pixels, r)) {
		jpeg_destroy_decompress(&d);
		return r->code;
	}
	if (d.jpeg_color_space != JCS_YCbCr || d.num_components != 3 ||
	    d.comp_info[0].h_samp_factor != 2 || d.comp_info[0].v_samp_factor != 2 ||
	    d.comp_info[1].h_samp_factor != 1 || d.comp_info[1].v_samp_factor != 1 ||
	    d.comp_info[2].h_samp_factor != 1 || d.comp_info[2].v_samp_factor != 1) {
		r->code = FJ_UNSUPPORTED;
		snprintf(r->msg, JMSG_LENGTH_MAX, "not a 4:2:0 YCbCr JPEG");
		jpeg_destroy_decompress(&d);
		return r->code;
	}
	d.raw_data_out = TRUE;
	d.scale_num = 1;
	d.scale_denom = denom;
	jpeg_start_decompress(&d);
	r->out_width = d.output_width;
	r->out_height = d.output_height;
	ly = 2 * d.min_DCT_scaled_size; // luma rows per MCU row
	lc = d.min_DCT_scaled_size;
	if (d.comp_info[1].DCT_scaled_size != lc || d.comp_info[2].DCT_scaled_size != lc) {
		// Scaled, libjpeg-turbo upsamples chroma in its IDCT instead.
		r->code = FJ_UNSUPPORTED;
		snprintf(r->msg, JMSG_LENGTH_MAX, "raw decode at 1/%d: chroma scaled apart", denom);
		jpeg_destroy_decompress(&d);
		return r->code;
	}
	if (ly * denom != 16 || (int)((d.output_height + ly - 1) / ly) > mcu_rows) {
		r->code = FJ_ERROR;
		snprintf(r->msg, JMSG_LENGTH_MAX, "raw decode: %d rows per MCU row at 1/%d", ly, denom);
		jpeg_destroy_decompress(&d);
		return r->code;
	}
	for (row = 0; d.output_scanline < d.output_height; row++) {
		for (i = 0; i < ly; i++) yr[i] = y + ((long)row * ly + i) * y_stride;
		for (i = 0; i < lc; i++) {
			cbr[i] = cb + ((long)row * lc + i) * c_stride;
			crr[i] = cr + ((long)row * lc + i) * c_stride;
		}
		if (jpeg_read_raw_data(&d, planes, ly) == 0) {
			r->code = FJ_ERROR;
			snprintf(r->msg, JMSG_LENGTH_MAX, "decoder returned no rows");
			fj_fill_offset(&d, src, n, r);
			jpeg_destroy_decompress(&d);
			return r->code;
		}
	}
	jpeg_finish_decompress(&d);
	fj_fill_offset(&d, src, n, r);
	jpeg_destroy_decompress(&d);
	return r->code;
}

typedef struct {
	struct jpeg_error_mgr pub;
	jmp_buf jb;
	char msg[JMSG_LENGTH_MAX];
} fj_cerr;

static void fj_cerror_exit(j_common_ptr c) {
	fj_cerr *e = (fj_cerr *)c->err;
	(*c->err->format_message)(c, e->msg);
	longjmp(e->jb, 1);
}

static void fj_cemit(j_common_ptr c, int level) {}

// fj_encode compresses pix into a malloc'd buffer *out of *outlen bytes
// that the caller frees. It returns 0, or 1 with the message in msg.
static int fj_encode(const unsigned char *pix, int w, int h, int ch, long stride, int quality,
		unsigned char **out, unsigned long *outlen, char *msg) {
	struct jpeg_compress_struct c;
	fj_cerr e;
	JSAMPROW rows[FJ_BATCH];
	int y, i, k;

	memset(&c, 0, sizeof c);
	*out = NULL;
	*outlen = 0;
	c.err = jpeg_std_error(&e.pub);
	e.pub.error_exit = fj_cerror_exit;
	e.pub.emit_message = fj_cemit;
	if (setjmp(e.jb)) {
		jpeg_destroy_compress(&c);
		if (*out != NULL) free(*out);
		*out = NULL;
		memcpy(msg, e.msg, JMSG_LENGTH_MAX);
		return 1;
	}
	jpeg_create_compress(&c);
	jpeg_mem_dest(&c, out, outlen);
	c.image_width = w;
	c.image_height = h;
	c.input_components = ch;
	c.in_color_space = ch == 1 ? JCS_GRAYSCALE : JCS_RGB;
	jpeg_set_defaults(&c);
	jpeg_set_quality(&c, quality, TRUE);
	jpeg_start_compress(&c, TRUE);
	for (y = 0; y < h; y += k) {
		k = h - y < FJ_BATCH ? h - y : FJ_BATCH;
		for (i = 0; i < k; i++) rows[i] = (JSAMPROW)(pix + (long)(y + i) * stride);
		jpeg_write_scanlines(&c, rows, k);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	return 0;
}
// fj_encode420 compresses planes as stored: y (w x h, y_stride bytes a
// row) and cb, cr (ceil(w/2) x ceil(h/2), c_stride) into a baseline 4:2:0
// JPEG (libjpeg's raw_data_in, no colour conversion or downsampling), in
// a malloc'd *out as fj_encode. Each MCU row is copied into scratch rows
// padded as libjpeg pads its own input: the last column and the last row
// repeated.
static int fj_encode420(const unsigned char *y, long y_stride, const unsigned char *cb, const unsigned char *cr,
		long c_stride, int w, int h, int quality, unsigned char **out, unsigned long *outlen, char *msg) {
	struct jpeg_compress_struct c;
	fj_cerr e;
	JSAMPARRAY sy, scb, scr;
	JSAMPARRAY planes[3];
	int cw = (w + 1) / 2, ch = (h + 1) / 2, pw, row, i, k;

	memset(&c, 0, sizeof c);
	*out = NULL;
	*outlen = 0;
	c.err = jpeg_std_error(&e.pub);
	e.pub.error_exit = fj_cerror_exit;
	e.pub.emit_message = fj_cemit;
	if (setjmp(e.jb)) {
		jpeg_destroy_compress(&c);
		if (*out != NULL) free(*out);
		*out = NULL;
		memcpy(msg, e.msg, JMSG_LENGTH_MAX);
		return 1;
	}
	jpeg_create_compress(&c);
	jpeg_mem_dest(&c, out, outlen);
	c.image_width = w;
	c.image_height = h;
	c.input_components = 3;
	c.in_color_space = JCS_YCbCr;
	jpeg_set_defaults(&c); // YCbCr, 2x2 1x1 1x1: 4:2:0
	jpeg_set_quality(&c, quality, TRUE);
	c.raw_data_in = TRUE;
	jpeg_start_compress(&c, TRUE);
	pw = (w + 15) / 16 * 16;
	sy = (*c.mem->alloc_sarray)((j_common_ptr)&c, JPOOL_IMAGE, pw, 16);
	scb = (*c.mem->alloc_sarray)((j_common_ptr)&c, JPOOL_IMAGE, pw / 2, 8);
	scr = (*c.mem->alloc_sarray)((j_common_ptr)&c, JPOOL_IMAGE, pw / 2, 8);
	planes[0] = sy;
	planes[1] = scb;
	planes[2] = scr;
	for (row = 0; c.next_scanline < c.image_height; row++) {
		for (i = 0; i < 16; i++) {
			int yy = row * 16 + i < h ? row * 16 + i : h - 1;
			memcpy(sy[i], y + (long)yy * y_stride, w);
			memset(sy[i] + w, sy[i][w - 1], pw - w);
		}
		for (i = 0; i < 8; i++) {
			int yy = row * 8 + i < ch ? row * 8 + i : ch - 1;
			memcpy(scb[i], cb + (long)yy * c_stride, cw);
			memcpy(scr[i], cr + (long)yy * c_stride, cw);
			for (k = cw; k < pw / 2; k++) {
				scb[i][k] = scb[i][cw - 1];
				scr[i][k] = scr[i][cw - 1];
			}
		}
		jpeg_write_raw_data(&c, planes, 16);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	return 0;
}
*/
import "C"

import (
	"fmt"
	"image"
	"io"
	"unsafe"

	"github.com/faster-training/faster/imgcodec/internal/rawimg"
)

// Backend names the implementation in this build: "libjpeg-turbo" or "pure-go".
const Backend = "libjpeg-turbo"

var colorSpaces = map[C.int]rawimg.ColorSpace{
	C.JCS_GRAYSCALE: rawimg.ColorGray,
	C.JCS_YCbCr:     rawimg.ColorYCbCr,
	C.JCS_RGB:       rawimg.ColorRGB,
	C.JCS_CMYK:      rawimg.ColorCMYK,
	C.JCS_YCCK:      rawimg.ColorYCCK,
}

func headerOf(r *C.fj_result) Header {
	return Header{
		Width: int(r.width), Height: int(r.height), Components: int(r.components),
		Precision: int(r.precision), Progressive: r.progressive != 0, Arithmetic: r.arith != 0,
		ColorSpace: colorSpaces[r.color_space],
	}
}

// DecodeHeader reads the header: the Go marker scanner first, libjpeg for
// what the scanner rejects.
func DecodeHeader(data []byte) (Header, error) {
	h, err := rawimg.ParseJPEGHeader(data)
	if err == nil || len(data) == 0 {
		return h, err
	}
	var r C.fj_result
	if C.fj_header((*C.uchar)(unsafe.Pointer(&data[0])), C.ulong(len(data)), &r) != C.FJ_OK {
		return h, err
	}
	return headerOf(&r), nil
}

// Decode decodes a JPEG into a buffer from alloc.
func Decode(data []byte, o *Options, alloc Alloc) (Frame, error) {
	if o == nil {
		o = &Options{}
	}
	h, err := DecodeHeader(data)
	if err != nil {
		return Frame{}, err
	}
	if err := rawimg.CheckJPEGScans(data, MaxScans, false); err != nil {
		return Frame{}, err
	}
	for try := 0; ; try++ {
		f, err := decode(data, o, h, alloc)
		if m, ok := err.(mismatch); ok && try == 0 {
			h = Header(m)
			continue
		}
		return f, err
	}
}

// mismatch carries libjpeg's header when it disagrees with the scanner's.
type mismatch Header

func (m mismatch) Error() string {
	return fmt.Sprintf("jpeg: header scan and libjpeg disagree on the size (%dx%d)", m.Width, m.Height)
}

func decode(data []byte, o *Options, h Header, alloc Alloc) (Frame, error) {
	if err := o.CheckPixels("jpeg", h.Width, h.Height); err != nil {
		return Frame{}, err
	}
	d, rect, err := o.Region(h.Width, h.Height)
	if err != nil {
		return Frame{}, err
	}
	limit := o.MaxPixels
	if limit <= 0 {
		limit = rawimg.DefaultMaxPixels
	}
	ch := o.Channels()
	f := Frame{Width: rect.Dx(), Height: rect.Dy(), Channels: ch, Stride: rect.Dx() * ch}
	f.Pix = alloc(f.Stride * f.Height)
	var r C.fj_result
	gray, allow := 0, 0
	if o.Gray {
		gray = 1
	}
	if o.AllowTruncated {
		allow = 1
	}
	C.fj_decode((*C.uchar)(unsafe.Pointer(&data[0])), C.ulong(len(data)), C.int(h.Width), C.int(h.Height),
		C.int(d), C.int(gray), C.int(rect.Min.X), C.int(rect.Min.Y), C.int(rect.Dx()), C.int(rect.Dy()),
		C.longlong(limit), C.int(allow), C.int(MaxScans), C.int(MaxScanPasses),
		(*C.uchar)(unsafe.Pointer(&f.Pix[0])), C.long(f.Stride), &r)
	if err := resultError(&r, data, o, rect); err != nil {
		return Frame{}, err
	}
	f.Warning = warning(&r, data)
	return f, nil
}

// resultError maps the wrapper's result code to an error (nil for FJ_OK).
func resultError(r *C.fj_result, data []byte, o *Options, rect image.Rectangle) error {
	msg := C.GoString(&r.msg[0])
	switch r.code {
	case C.FJ_OK:
		return nil
	case C.FJ_MISMATCH:
		return mismatch(headerOf(r))
	case C.FJ_TRUNCATED:
		return rawimg.Truncated("jpeg", int64(r.offset), msg)
	case C.FJ_TOO_LARGE:
		return o.CheckPixels("jpeg", int(r.width), int(r.height))
	case C.FJ_BAD_CROP:
		return fmt.Errorf("jpeg: crop %v outside the %dx%d output: %w", rect, r.out_width, r.out_height, rawimg.ErrInvalidOptions)
	case C.FJ_UNSUPPORTED:
		return fmt.Errorf("jpeg: %s: %w", msg, rawimg.ErrUnsupported)
	case C.FJ_TOO_MANY_SCANS:
		return &rawimg.CorruptError{Format: "jpeg", Offset: int64(r.offset), Err: fmt.Errorf("%s", msg)}
	}
	switch r.msg_code {
	case C.JERR_BAD_PRECISION, C.JERR_ARITH_NOTIMPL, C.JERR_NOT_COMPILED, C.JERR_CONVERSION_NOTIMPL:
		return fmt.Errorf("jpeg: %s: %w", msg, rawimg.ErrUnsupported)
	}
	if r.truncated != 0 {
		// The data ran out and libjpeg then failed: truncation.
		return rawimg.Truncated("jpeg", int64(len(data)), msg)
	}
	return &rawimg.CorruptError{Format: "jpeg", Offset: int64(r.offset), Err: fmt.Errorf("%s", msg)}
}

// warning is the Frame.Warning of a decode that succeeded.
func warning(r *C.fj_result, data []byte) error {
	if r.warnings == 0 {
		return nil
	}
	w := C.GoString(&r.warn[0])
	if r.truncated != 0 {
		return rawimg.Truncated("jpeg", int64(len(data)), w)
	}
	return &rawimg.CorruptError{Format: "jpeg", Offset: -1, Err: fmt.Errorf("%s", w)}
}

// Decode420 decodes a 4:2:0 YCbCr JPEG into its planes as stored (see
// Planes420), into one buffer from alloc. Other JPEGs are ErrUnsupported;
// o may set only ScaleDenom and MaxPixels.
func Decode420(data []byte, o *Options, alloc Alloc) (Planes420, error) {
	if o == nil {
		o = &Options{}
	}
	if o.Gray || !o.Crop.Empty() || o.AllowTruncated {
		return Planes420{}, fmt.Errorf("jpeg: planar decode: gray, crop or truncated data: %w", rawimg.ErrInvalidOptions)
	}
	h, err := DecodeHeader(data)
	if err != nil {
		return Planes420{}, err
	}
	if h.Components != 3 || h.ColorSpace != rawimg.ColorYCbCr {
		return Planes420{}, fmt.Errorf("jpeg: planar decode of a %d-component JPEG: %w", h.Components, rawimg.ErrUnsupported)
	}
	if err := rawimg.CheckJPEGScans(data, MaxScans, false); err != nil {
		return Planes420{}, err
	}
	for try := 0; ; try++ {
		p, err := decode420(data, o, h, alloc)
		if m, ok := err.(mismatch); ok && try == 0 {
			h = Header(m)
			continue
		}
		return p, err
	}
}

func decode420(data []byte, o *Options, h Header, alloc Alloc) (Planes420, error) {
	if err := o.CheckPixels("jpeg", h.Width, h.Height); err != nil {
		return Planes420{}, err
	}
	d, _, err := o.Region(h.Width, h.Height)
	if err != nil {
		return Planes420{}, err
	}
	limit := o.MaxPixels
	if limit <= 0 {
		limit = rawimg.DefaultMaxPixels
	}
	mx, my := (h.Width+15)/16, (h.Height+15)/16 // MCU columns and rows
	// Chroma: one column and one row more than the MCUs hold, filled
	// below by repeating the last, so that a resize whose box passes the
	// padded edge by less than a sample still reads inside the plane.
	p := Planes420{Width: (h.Width + d - 1) / d, Height: (h.Height + d - 1) / d,
		YStride: mx * 16 / d, CStride: mx*8/d + 1, Rows: my * 16 / d, CRows: my*8/d + 1}
	ny, nc := p.YStride*p.Rows, p.CStride*p.CRows
	buf := alloc(ny + 2*nc)
	p.Y, p.Cb, p.Cr = buf[:ny:ny], buf[ny:ny+nc:ny+nc], buf[ny+nc:]
	var r C.fj_result
	C.fj_decode420((*C.uchar)(unsafe.Pointer(&data[0])), C.ulong(len(data)), C.int(h.Width), C.int(h.Height),
		C.int(d), C.longlong(limit), C.int(MaxScans), C.int(MaxScanPasses), C.int(my),
		(*C.uchar)(unsafe.Pointer(&p.Y[0])), C.long(p.YStride), (*C.uchar)(unsafe.Pointer(&p.Cb[0])),
		(*C.uchar)(unsafe.Pointer(&p.Cr[0])), C.long(p.CStride), &r)
	if err := resultError(&r, data, o, image.Rectangle{}); err != nil {
		return Planes420{}, err
	}
	p.Warning = warning(&r, data)
	for _, c := range [][]byte{p.Cb, p.Cr} {
		for y := 0; y < p.CRows-1; y++ {
			c[y*p.CStride+p.CStride-1] = c[y*p.CStride+p.CStride-2]
		}
		copy(c[(p.CRows-1)*p.CStride:], c[(p.CRows-2)*p.CStride:(p.CRows-1)*p.CStride])
	}
	return p, nil
}

// Encode420 writes planes as stored into a baseline 4:2:0 JPEG of the given
// quality (1-100): y is w x h (yStride bytes a row), cb and cr
// ceil(w/2) x ceil(h/2) (cStride). No colour conversion or chroma
// downsampling is done: the planes are the JPEG's.
func Encode420(wr io.Writer, y []byte, yStride int, cb, cr []byte, cStride, w, h, quality int) error {
	if err := checkEncode420(y, yStride, cb, cr, cStride, w, h, quality); err != nil {
		return err
	}
	var out *C.uchar
	var n C.ulong
	var msg [C.JMSG_LENGTH_MAX]C.char
	if C.fj_encode420((*C.uchar)(unsafe.Pointer(&y[0])), C.long(yStride), (*C.uchar)(unsafe.Pointer(&cb[0])),
		(*C.uchar)(unsafe.Pointer(&cr[0])), C.long(cStride), C.int(w), C.int(h), C.int(quality), &out, &n, &msg[0]) != 0 {
		return fmt.Errorf("jpeg: encode: %s", C.GoString(&msg[0]))
	}
	defer C.free(unsafe.Pointer(out))
	_, err := wr.Write(unsafe.Slice((*byte)(unsafe.Pointer(out)), int(n)))
	return err
}

// Encode writes pix (w x h, 1 or 3 channels, stride bytes per row) as a
// baseline JPEG of the given quality (1-100) with 4:2:0 chroma subsampling.
func Encode(wr io.Writer, pix []byte, w, h, channels, stride, quality int) error {
	if err := checkEncode(pix, w, h, channels, stride, quality); err != nil {
		return err
	}
	var out *C.uchar
	var n C.ulong
	var msg [C.JMSG_LENGTH_MAX]C.char
	if C.fj_encode((*C.uchar)(unsafe.Pointer(&pix[0])), C.int(w), C.int(h), C.int(channels), C.long(stride),
		C.int(quality), &out, &n, &msg[0]) != 0 {
		return fmt.Errorf("jpeg: encode: %s", C.GoString(&msg[0]))
	}
	defer C.free(unsafe.Pointer(out))
	_, err := wr.Write(unsafe.Slice((*byte)(unsafe.Pointer(out)), int(n)))
	return err
}
