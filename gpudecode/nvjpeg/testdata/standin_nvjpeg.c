/* standin_nvjpeg.c: a stand-in of libnvjpeg.so.13 that the tests build
 * with gcc (nvj_test.go), linked with standin_cudart.c's library, whose
 * streams it queues its device work on (so the work runs when the stream
 * is synchronised, and its stream is checked). Two kinds of "JPEG":
 *   - made-up ones, FF D8 and a tag (the routing test): 'A' the hardware
 *     takes it; 'P' the hardware refuses it
 *     (nvjpegDecodeBatchedSupportedEx) and the hybrid backend takes it;
 *     'X' both refuse it (the hybrid's nvjpegDecodeJpegHost returns
 *     NVJPEG_STATUS_JPEG_NOT_SUPPORTED); 'F' fails the hardware's whole
 *     batch. A decode writes its backend's tag ("HW" or "GP") and the
 *     region's x and width into the destination's first four bytes;
 *   - JPEG files (FF D8 FF): the hardware refuses a progressive one; a
 *     decode fills the region of interest with pattern(), a function of
 *     the full image's coordinates and the file's length that the
 *     decoder test computes too.
 * The hybrid backend's phases hand on what they know as nvJPEG's do:
 * the host phase writes the attached pinned buffer, the transfer (queued)
 * copies it into the attached device buffer, the device phase (queued)
 * writes the picture from the device buffer. "Device memory" is host
 * memory.
 *
 * It names on stderr, one line "standin: ..." each, the backend of every
 * handle and decoder made, each handle's padding, the hardware decoder's
 * pre-allocation, a batch initialised past it (where nvJPEG would free
 * and allocate again), and every parse (whole stream or header only, and
 * the handle's backend). A decoder of any backend but
 * NVJPEG_BACKEND_HYBRID (1) is refused: the decoupled decoder takes
 * progressive JPEGs, which NVJPEG_BACKEND_GPU_HYBRID (2) cannot. The host
 * phase of a stream parsed by its header alone is a VIOLATION: nvJPEG
 * decodes the whole stream. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct faster_nvjpeg_image {
	unsigned char *channel[4];
	size_t pitch[4];
};

void standin_enqueue(void *stream, const char *call, void (*run)(void *), void *arg, const void *src, size_t n);
void standin_violation(const char *format, ...);

struct params {
	int x, y, w, h;
};
struct handle {
	int backend;
};
struct jstream {
	const unsigned char *data;
	size_t len;
	int header_only; /* parsed by nvjpegJpegStreamParseHeader */
};
/* what a decode knows of its image: its kind (a tag, 'j' a JPEG file, 'p'
 * a progressive one), its region, pattern()'s tag */
struct summary {
	int kind, x, y, w, h, tag;
};
struct buffer {
	struct summary s;
};
struct state {
	int batch, prealloc;
	struct buffer *pinned, *device;
};

static int progressive(const unsigned char *d, size_t n) {
	size_t i = 2;
	while (i + 4 <= n && d[i] == 0xFF) {
		if (d[i + 1] == 0xC2)
			return 1;
		if (d[i + 1] == 0xDA) /* start of scan */
			break;
		i += 2 + ((size_t)d[i + 2] << 8 | d[i + 3]);
	}
	return 0;
}

static int kind(const unsigned char *d, size_t n) {
	if (n < 3)
		return 0;
	if (d[2] != 0xFF)
		return d[2];
	return progressive(d, n) ? 'p' : 'j';
}

/* frame reads a JPEG's frame size from its SOF marker (0 when there is
 * none before the first scan). */
static void frame(const unsigned char *d, size_t n, int *w, int *h) {
	*w = *h = 0;
	size_t i = 2;
	while (i + 9 <= n && d[i] == 0xFF && d[i + 1] != 0xDA) {
		int m = d[i + 1];
		if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
			*h = d[i + 5] << 8 | d[i + 6];
			*w = d[i + 7] << 8 | d[i + 8];
			return;
		}
		i += 2 + ((size_t)d[i + 2] << 8 | d[i + 3]);
	}
}

/* summarise is what a decode of d with params p knows: the region, or,
 * for nvJPEG's (0, 0, -1, -1), the whole frame; a region outside the
 * frame is a violation, as nvJPEG refuses it. */
static struct summary summarise(const unsigned char *d, size_t n, const struct params *p) {
	struct summary s = {kind(d, n), p->x, p->y, p->w, p->h, (int)(n % 251)};
	if (s.kind != 'j' && s.kind != 'p')
		return s;
	int fw, fh;
	frame(d, n, &fw, &fh);
	if (p->w == -1 && p->h == -1 && p->x == 0 && p->y == 0) {
		fprintf(stderr, "standin: a decode of the whole %dx%d frame (no ROI)\n", fw, fh);
		s.w = fw;
		s.h = fh;
	} else if (p->x < 0 || p->y < 0 || p->w <= 0 || p->h <= 0 || p->x + p->w > fw || p->y + p->h > fh) {
		standin_violation("ROI %d,%d %dx%d outside the %dx%d frame", p->x, p->y, p->w, p->h, fw, fh);
	}
	return s;
}

static unsigned char pattern(int tag, int x, int y, int c) { return (unsigned char)(x * 3 + y * 5 + c * 71 + tag * 17); }

static void write_image(const struct faster_nvjpeg_image *d, const struct summary *s, const char *backend) {
	unsigned char *p = d->channel[0];
	if (s->kind != 'j' && s->kind != 'p') {
		p[0] = backend[0];
		p[1] = backend[1];
		p[2] = (unsigned char)s->x;
		p[3] = (unsigned char)s->w;
		return;
	}
	for (int y = 0; y < s->h; y++)
		for (int x = 0; x < s->w; x++)
			for (int c = 0; c < 3; c++)
				p[y * d->pitch[0] + x * 3 + c] = pattern(s->tag, s->x + x, s->y + y, c);
}

int nvjpegGetProperty(int type, int *value) {
	*value = 13;
	return 0;
}
static int backend_of(void *h) { return ((struct handle *)h)->backend; }

int nvjpegCreateEx(int backend, void *a, void *b, unsigned int flags, void **handle) {
	struct handle *h = malloc(sizeof *h);
	h->backend = backend;
	*handle = h;
	fprintf(stderr, "standin: nvjpegCreateEx(backend %d)\n", backend);
	return 0;
}
int nvjpegSetDeviceMemoryPadding(size_t padding, void *h) {
	fprintf(stderr, "standin: nvjpegSetDeviceMemoryPadding(%zu) on backend %d\n", padding, backend_of(h));
	return 0;
}
int nvjpegSetPinnedMemoryPadding(size_t padding, void *h) {
	fprintf(stderr, "standin: nvjpegSetPinnedMemoryPadding(%zu) on backend %d\n", padding, backend_of(h));
	return 0;
}
int nvjpegDestroy(void *h) {
	free(h);
	return 0;
}
int nvjpegJpegStateCreate(void *h, void **s) {
	*s = calloc(1, sizeof(struct state));
	return 0;
}
int nvjpegJpegStateDestroy(void *s) {
	free(s);
	return 0;
}
int nvjpegDecoderStateCreate(void *h, void *d, void **s) { return nvjpegJpegStateCreate(h, s); }

int nvjpegDecodeBatchedPreAllocate(void *h, void *s, int n, int w, int ht, int css, int fmt) {
	fprintf(stderr, "standin: nvjpegDecodeBatchedPreAllocate(backend %d, batch %d, %dx%d, css %d, output %d)\n",
		backend_of(h), n, w, ht, css, fmt);
	((struct state *)s)->prealloc = n;
	return n >= 1 && w >= 1 && ht >= 1 && fmt == 5 ? 0 : 2;
}

int nvjpegDecodeBatchedInitialize(void *h, void *s, int n, int threads, int fmt) {
	struct state *st = s;
	st->batch = n;
	if (n > st->prealloc)
		fprintf(stderr, "standin: nvjpegDecodeBatchedInitialize(batch %d) past the pre-allocation (%d): nvJPEG allocates again\n",
			n, st->prealloc);
	return fmt == 5 ? 0 : 2;
}

struct hw_decode {
	struct faster_nvjpeg_image d;
	const unsigned char *data;
	size_t len;
	struct params roi;
};

static void run_hw_decode(void *arg) {
	struct hw_decode *a = arg;
	struct summary s = summarise(a->data, a->len, &a->roi);
	write_image(&a->d, &s, "HW");
}

int nvjpegDecodeBatchedEx(void *h, void *state, const unsigned char *const *data, const size_t *lengths,
			  struct faster_nvjpeg_image *dst, void **params, void *stream) {
	int n = ((struct state *)state)->batch;
	for (int i = 0; i < n; i++)
		if (kind(data[i], lengths[i]) == 'F')
			return 6; /* NVJPEG_STATUS_EXECUTION_FAILED */
	for (int i = 0; i < n; i++) {
		struct hw_decode *a = malloc(sizeof *a);
		a->d = dst[i];
		a->data = data[i];
		a->len = lengths[i];
		a->roi = *(struct params *)params[i];
		/* the bitstreams are read as the stream runs */
		standin_enqueue(stream, "nvjpegDecodeBatchedEx", run_hw_decode, a, data[i], lengths[i]);
	}
	return 0;
}

int nvjpegDecodeBatchedSupportedEx(void *h, void *js, void *params, int *sup) {
	struct jstream *j = js;
	int k = kind(j->data, j->len);
	*sup = k == 'P' || k == 'X' || k == 'p';
	return 0;
}
int nvjpegJpegStreamCreate(void *h, void **s) {
	*s = calloc(1, sizeof(struct jstream));
	return 0;
}
int nvjpegJpegStreamDestroy(void *s) {
	free(s);
	return 0;
}
int nvjpegJpegStreamParse(void *h, const unsigned char *data, size_t len, int a, int b, void *js) {
	struct jstream *j = js;
	fprintf(stderr, "standin: nvjpegJpegStreamParse on backend %d\n", backend_of(h));
	j->data = data;
	j->len = len;
	j->header_only = 0;
	return len >= 3 ? 0 : 3;
}
int nvjpegJpegStreamParseHeader(void *h, const unsigned char *data, size_t len, void *js) {
	struct jstream *j = js;
	fprintf(stderr, "standin: nvjpegJpegStreamParseHeader on backend %d\n", backend_of(h));
	j->data = data;
	j->len = len;
	j->header_only = 1;
	return len >= 3 ? 0 : 3;
}
int nvjpegDecodeParamsCreate(void *h, void **p) {
	*p = calloc(1, sizeof(struct params));
	return 0;
}
int nvjpegDecodeParamsDestroy(void *p) {
	free(p);
	return 0;
}
int nvjpegDecodeParamsSetOutputFormat(void *p, int fmt) { return fmt == 5 ? 0 : 2; }
int nvjpegDecodeParamsSetROI(void *p, int x, int y, int w, int h) {
	struct params *q = p;
	q->x = x;
	q->y = y;
	q->w = w;
	q->h = h;
	return 0;
}
int nvjpegDecoderCreate(void *h, int impl, void **d) {
	fprintf(stderr, "standin: nvjpegDecoderCreate(backend %d) on backend %d\n", impl, backend_of(h));
	*d = malloc(8);
	return impl == 1 ? 0 : 2; /* NVJPEG_BACKEND_HYBRID, else NVJPEG_STATUS_INVALID_PARAMETER */
}
int nvjpegDecoderDestroy(void *d) {
	free(d);
	return 0;
}
int nvjpegBufferPinnedCreate(void *h, void *a, void **b) {
	*b = calloc(1, sizeof(struct buffer));
	return 0;
}
int nvjpegBufferPinnedDestroy(void *b) {
	free(b);
	return 0;
}
int nvjpegBufferDeviceCreate(void *h, void *a, void **b) { return nvjpegBufferPinnedCreate(h, a, b); }
int nvjpegBufferDeviceDestroy(void *b) { return nvjpegBufferPinnedDestroy(b); }
int nvjpegStateAttachPinnedBuffer(void *s, void *b) {
	((struct state *)s)->pinned = b;
	return 0;
}
int nvjpegStateAttachDeviceBuffer(void *s, void *b) {
	((struct state *)s)->device = b;
	return 0;
}

/* The host phase: the summary into the attached pinned buffer, now. */
int nvjpegDecodeJpegHost(void *h, void *d, void *state, void *params, void *js) {
	struct state *s = state;
	struct jstream *j = js;
	if (!s->pinned || !s->device) {
		standin_violation("nvjpegDecodeJpegHost without a pinned and a device buffer attached");
		return 2; /* NVJPEG_STATUS_INVALID_PARAMETER */
	}
	if (j->header_only) {
		standin_violation("nvjpegDecodeJpegHost of a stream parsed by nvjpegJpegStreamParseHeader (it decodes the whole stream)");
		return 2;
	}
	if (kind(j->data, j->len) == 'X')
		return 4; /* NVJPEG_STATUS_JPEG_NOT_SUPPORTED */
	s->pinned->s = summarise(j->data, j->len, params);
	return 0;
}

struct transfer {
	struct buffer *from, *to;
};

static void run_transfer(void *arg) {
	struct transfer *a = arg;
	a->to->s = a->from->s;
}

int nvjpegDecodeJpegTransferToDevice(void *h, void *d, void *state, void *js, void *stream) {
	struct state *s = state;
	struct transfer *a = malloc(sizeof *a);
	a->from = s->pinned;
	a->to = s->device;
	/* the pinned buffer is read as the stream runs */
	standin_enqueue(stream, "nvjpegDecodeJpegTransferToDevice", run_transfer, a, &s->pinned->s, sizeof s->pinned->s);
	return 0;
}

struct device_phase {
	struct buffer *from;
	struct faster_nvjpeg_image d;
};

static void run_device(void *arg) {
	struct device_phase *a = arg;
	write_image(&a->d, &a->from->s, "GP");
}

int nvjpegDecodeJpegDevice(void *h, void *d, void *state, struct faster_nvjpeg_image *dst, void *stream) {
	struct device_phase *a = malloc(sizeof *a);
	a->from = ((struct state *)state)->device;
	a->d = *dst;
	standin_enqueue(stream, "nvjpegDecodeJpegDevice", run_device, a, NULL, 0);
	return 0;
}
