//go:build cgo

/* nvj.c: nvJPEG through the pointers dl.c resolved (see nvj.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dl.h"
#include "nvj.h"

#define TRY(call)                                                              \
	do {                                                                   \
		int r_ = (call);                                               \
		if (r_ != FASTER_NVJPEG_STATUS_SUCCESS) {                      \
			snprintf(report, cap, "%s: nvjpeg status %d", #call, r_); \
			return r_;                                             \
		}                                                              \
	} while (0)

/* CUDA_TRY returns a failed runtime call's status, named with its words
 * in report. */
#define CUDA_TRY(call)                                                      \
	do {                                                                \
		int r_ = (call);                                            \
		if (r_ != FASTER_cudaSuccess) {                             \
			snprintf(report, cap, "%s: %s (%d)", #call,         \
				 faster_nvj_p_cudaGetErrorString(r_), r_);   \
			return r_;                                          \
		}                                                           \
	} while (0)

/* set_device makes c's GPU the calling thread's current device. */
static int set_device(struct faster_nvj *c, char *report, size_t cap) {
	int r = faster_nvj_p_cudaSetDevice(c->ordinal);
	if (r != FASTER_cudaSuccess)
		snprintf(report, cap, "cudaSetDevice(%d): %s (%d)", c->ordinal, faster_nvj_p_cudaGetErrorString(r), r);
	return r;
}

/* Every allocation of a handle is padded to a multiple of these
 * (nvjpegSetDeviceMemoryPadding, nvjpegSetPinnedMemoryPadding), so that
 * an image a little larger than any before reuses nvJPEG's buffers
 * instead of freeing them (cudaFree waits for the whole device, a
 * trainer's work included) and allocating again: DALI's defaults for
 * ImageNet, 16 MiB of device memory and 8 MiB of pinned memory. */
#define DEVICE_PADDING ((size_t)16 << 20)
#define PINNED_PADDING ((size_t)8 << 20)

/* The image size the hardware batched decoder's buffers are allocated for
 * at open (nvjpegDecodeBatchedPreAllocate, with the decoder's largest
 * batch, 4:4:4, the most a pixel needs): 512×512 holds ImageNet's
 * typical image (most are at most 500 pixels a side; at a batch of 256
 * their pixels alone are 200 MB of the GPU's memory); a larger image
 * grows nvJPEG's buffers once, padded as above. */
#define PREALLOC_WIDTH 512
#define PREALLOC_HEIGHT 512

/* pad sets handle h's padding. Like the pre-allocation below, a hint for
 * speed: refused, nvJPEG allocates as it needs, and the stage still runs
 * (its status is ignored). */
static void pad(void *h) {
	(void)faster_nvj_p_nvjpegSetDeviceMemoryPadding(DEVICE_PADDING, h);
	(void)faster_nvj_p_nvjpegSetPinnedMemoryPadding(PINNED_PADDING, h);
}

int faster_nvj_open(struct faster_nvj *c, int ordinal, int max_batch, char *report, size_t cap) {
	memset(c, 0, sizeof *c);
	c->ordinal = ordinal;
	report[0] = 0;
	int r = set_device(c, report, cap);
	if (r != 0)
		return r;
	if (max_batch < 1)
		max_batch = 1;
	CUDA_TRY(faster_nvj_p_cudaStreamCreateWithFlags(&c->stream, FASTER_cudaStreamNonBlocking));
	CUDA_TRY(faster_nvj_p_cudaStreamCreateWithFlags(&c->upload, FASTER_cudaStreamNonBlocking));
	CUDA_TRY(faster_nvj_p_cudaStreamCreateWithFlags(&c->hstream, FASTER_cudaStreamNonBlocking));
	CUDA_TRY(faster_nvj_p_cudaEventCreateWithFlags(&c->hdone, FASTER_cudaEventDisableTiming));
	/* The hardware backend is optional: a GPU without JPEG engines
	 * refuses it (NVJPEG_STATUS_ARCH_MISMATCH) and every image goes to
	 * the hybrid backend. Its buffers are allocated here, for the largest
	 * batch, so that nvjpegDecodeBatchedInitialize, called again whenever
	 * a batch has another number of hardware images, finds them large
	 * enough and frees nothing. */
	if (faster_nvj_p_nvjpegCreateEx(FASTER_NVJPEG_BACKEND_HARDWARE, NULL, NULL, 0, &c->hw) != FASTER_NVJPEG_STATUS_SUCCESS)
		c->hw = NULL;
	else {
		pad(c->hw);
		TRY(faster_nvj_p_nvjpegJpegStateCreate(c->hw, &c->hw_state));
		TRY(faster_nvj_p_nvjpegJpegStreamCreate(c->hw, &c->hw_jstream));
		(void)faster_nvj_p_nvjpegDecodeBatchedPreAllocate(c->hw, c->hw_state, max_batch, PREALLOC_WIDTH, PREALLOC_HEIGHT,
								  FASTER_NVJPEG_CSS_444, FASTER_NVJPEG_OUTPUT_RGBI);
	}
	/* The hybrid backend (NVJPEG_BACKEND_HYBRID: Huffman decode on the
	 * host, the rest on the GPU), for what the hardware refuses:
	 * progressive JPEGs above all. Not NVJPEG_BACKEND_GPU_HYBRID, whose
	 * Huffman decode on the GPU takes baseline JPEGs only (NVIDIA's
	 * nvImageCodec and DALI send progressive ones to the hybrid backend,
	 * and the GPU-hybrid one only baseline images larger than about
	 * 1000×1000, which the hardware takes here). */
	TRY(faster_nvj_p_nvjpegCreateEx(FASTER_NVJPEG_BACKEND_HYBRID, NULL, NULL, 0, &c->hyb));
	pad(c->hyb);
	TRY(faster_nvj_p_nvjpegDecoderCreate(c->hyb, FASTER_NVJPEG_BACKEND_HYBRID, &c->dec));
	TRY(faster_nvj_p_nvjpegDecoderStateCreate(c->hyb, c->dec, &c->dstate));
	for (int b = 0; b < 2; b++) {
		TRY(faster_nvj_p_nvjpegBufferPinnedCreate(c->hyb, NULL, &c->pinned[b]));
		TRY(faster_nvj_p_nvjpegJpegStreamCreate(c->hyb, &c->jstream[b]));
	}
	TRY(faster_nvj_p_nvjpegBufferDeviceCreate(c->hyb, NULL, &c->devbuf));
	TRY(faster_nvj_p_nvjpegStateAttachDeviceBuffer(c->dstate, c->devbuf));
	TRY(faster_nvj_p_nvjpegDecodeParamsCreate(c->hyb, &c->hparams));
	TRY(faster_nvj_p_nvjpegDecodeParamsSetOutputFormat(c->hparams, FASTER_NVJPEG_OUTPUT_RGBI));
	return 0;
}

void faster_nvj_close(struct faster_nvj *c) {
	faster_nvj_p_cudaSetDevice(c->ordinal);
	if (c->stream)
		faster_nvj_p_cudaStreamSynchronize(c->stream);
	if (c->hstream)
		faster_nvj_p_cudaStreamSynchronize(c->hstream);
	for (int i = 0; i < c->nparams; i++)
		faster_nvj_p_nvjpegDecodeParamsDestroy(c->params[i]);
	free(c->params);
	if (c->hparams)
		faster_nvj_p_nvjpegDecodeParamsDestroy(c->hparams);
	if (c->dstate)
		faster_nvj_p_nvjpegJpegStateDestroy(c->dstate);
	for (int b = 0; b < 2; b++) {
		if (c->jstream[b])
			faster_nvj_p_nvjpegJpegStreamDestroy(c->jstream[b]);
		if (c->pinned[b])
			faster_nvj_p_nvjpegBufferPinnedDestroy(c->pinned[b]);
	}
	if (c->devbuf)
		faster_nvj_p_nvjpegBufferDeviceDestroy(c->devbuf);
	if (c->dec)
		faster_nvj_p_nvjpegDecoderDestroy(c->dec);
	if (c->hyb)
		faster_nvj_p_nvjpegDestroy(c->hyb);
	if (c->hw_jstream)
		faster_nvj_p_nvjpegJpegStreamDestroy(c->hw_jstream);
	if (c->hw_state)
		faster_nvj_p_nvjpegJpegStateDestroy(c->hw_state);
	if (c->hw)
		faster_nvj_p_nvjpegDestroy(c->hw);
	if (c->stream)
		faster_nvj_p_cudaStreamDestroy(c->stream);
	if (c->upload) {
		faster_nvj_p_cudaStreamSynchronize(c->upload);
		faster_nvj_p_cudaStreamDestroy(c->upload);
	}
	if (c->hdone)
		faster_nvj_p_cudaEventDestroy(c->hdone);
	if (c->hstream)
		faster_nvj_p_cudaStreamDestroy(c->hstream);
	memset(c, 0, sizeof *c);
}

/* params grows the hardware batch's decode parameters to n. */
static int params(struct faster_nvj *c, int n, char *report, size_t cap) {
	if (n <= c->nparams)
		return 0;
	void **p = realloc(c->params, (size_t)n * sizeof *p);
	if (!p) {
		snprintf(report, cap, "out of memory for %d decode parameters", n);
		return -1;
	}
	c->params = p;
	for (; c->nparams < n; c->nparams++) {
		TRY(faster_nvj_p_nvjpegDecodeParamsCreate(c->hw, &c->params[c->nparams]));
		int r = faster_nvj_p_nvjpegDecodeParamsSetOutputFormat(c->params[c->nparams], FASTER_NVJPEG_OUTPUT_RGBI);
		if (r != 0) { /* not counted yet: destroyed here */
			faster_nvj_p_nvjpegDecodeParamsDestroy(c->params[c->nparams]);
			snprintf(report, cap, "nvjpegDecodeParamsSetOutputFormat: nvjpeg status %d", r);
			return r;
		}
	}
	return 0;
}

static struct faster_nvjpeg_image dest(unsigned long long ptr, size_t pitch) {
	struct faster_nvjpeg_image d;
	memset(&d, 0, sizeof d);
	d.channel[0] = (unsigned char *)(size_t)ptr;
	d.pitch[0] = pitch;
	return d;
}

/* hardware queues the images routed 0 on c->stream as one
 * nvjpegDecodeBatchedEx; on a refusal or a failed batch they are routed
 * 1. */
static int hardware(struct faster_nvj *c, int n, const unsigned char *data, const size_t *off, const size_t *len,
		    const int *roi, const unsigned long long *dst, const size_t *pitch, int *route,
		    char *report, size_t cap) {
	if (!c->hw) {
		for (int i = 0; i < n; i++)
			if (route[i] == 0)
				route[i] = 1;
		return 0;
	}
	int r = params(c, n, report, cap);
	if (r)
		return r;
	const unsigned char **ptrs = malloc((size_t)n * sizeof *ptrs);
	size_t *lens = malloc((size_t)n * sizeof *lens);
	struct faster_nvjpeg_image *dests = malloc((size_t)n * sizeof *dests);
	void **ps = malloc((size_t)n * sizeof *ps);
	int *idx = malloc((size_t)n * sizeof *idx);
	int m = 0;
	if (!ptrs || !lens || !dests || !ps || !idx) {
		snprintf(report, cap, "out of memory for a batch of %d", n);
		r = -1;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		if (route[i] != 0)
			continue;
		void *p = c->params[m];
		int sup = 1;
		/* nvjpegDecodeBatchedSupportedEx reads the frame header alone,
		 * and nvjpegDecodeBatchedEx the bytes themselves: the markers
		 * up to the first scan are parsed, not the whole stream. */
		if (faster_nvj_p_nvjpegDecodeParamsSetROI(p, roi[4 * i], roi[4 * i + 1], roi[4 * i + 2], roi[4 * i + 3]) != 0 ||
		    faster_nvj_p_nvjpegJpegStreamParseHeader(c->hw, data + off[i], len[i], c->hw_jstream) != 0 ||
		    faster_nvj_p_nvjpegDecodeBatchedSupportedEx(c->hw, c->hw_jstream, p, &sup) != 0 || sup != 0) {
			route[i] = 1; /* 0 is "supported" */
			continue;
		}
		ptrs[m] = data + off[i];
		lens[m] = len[i];
		dests[m] = dest(dst[i], pitch[i]);
		ps[m] = p;
		idx[m++] = i;
	}
	if (m == 0)
		goto out;
	/* A batch of another size initialises the decoder again: within the
	 * buffers nvjpegDecodeBatchedPreAllocate made at open (the largest
	 * batch), so nvJPEG does not free and allocate them again. */
	if (m != c->hw_batch) {
		r = faster_nvj_p_nvjpegDecodeBatchedInitialize(c->hw, c->hw_state, m, 1, FASTER_NVJPEG_OUTPUT_RGBI);
		c->hw_batch = r == 0 ? m : 0;
	}
	if (r == 0)
		r = faster_nvj_p_nvjpegDecodeBatchedEx(c->hw, c->hw_state, ptrs, lens, dests, ps, c->stream);
	if (r != 0) { /* the batch failed: each image to the hybrid backend */
		c->hw_batch = 0; /* initialise again next time */
		for (int k = 0; k < m; k++)
			route[idx[k]] = 1;
		r = 0;
	}
out:
	free(ptrs);
	free(lens);
	free(dests);
	free(ps);
	free(idx);
	return r;
}

int faster_nvj_decode(struct faster_nvj *c, int n, const unsigned char *data, const size_t *off, const size_t *len,
		      const int *roi, const unsigned long long *dst, const size_t *pitch, int *route, int *status,
		      char *report, size_t cap) {
	report[0] = 0;
	int r = set_device(c, report, cap);
	if (r != 0)
		return r;
	for (int i = 0; i < n; i++)
		status[i] = 0;
	if ((r = hardware(c, n, data, off, len, roi, dst, pitch, route, report, cap)) != 0)
		return r;
	/* The hybrid backend's images, one at a time: the parse (the whole
	 * stream: the host phase decodes it) and the host phase
	 * write JPEG stream b and pinned buffer b; the transfer, which reads
	 * them, and the device phase are queued on the hybrid stream. Before
	 * a transfer that stream is waited for when an earlier transfer is
	 * queued, as nvJPEG's decoupled-decode sample does (the transfer may
	 * also grow the device buffer a queued device phase reads): the
	 * previous hybrid image, not the hardware batch on c->stream. So at
	 * most one transfer is pending, and b, which changes after each
	 * queued transfer, is never what it reads: the next image's host
	 * phase overlaps the queued work without rewriting its input. At the
	 * end c->stream waits for the hybrid stream (hdone), so the kernels
	 * queued after the decode read every image. */
	int b = 0, queued = 0, any = 0;
	for (int i = 0; i < n; i++) {
		if (route[i] != 1)
			continue;
		struct faster_nvjpeg_image d = dest(dst[i], pitch[i]);
		int s = faster_nvj_p_nvjpegJpegStreamParse(c->hyb, data + off[i], len[i], 0, 0, c->jstream[b]);
		if (s == 0)
			s = faster_nvj_p_nvjpegDecodeParamsSetROI(c->hparams, roi[4 * i], roi[4 * i + 1], roi[4 * i + 2], roi[4 * i + 3]);
		if (s == 0)
			s = faster_nvj_p_nvjpegStateAttachPinnedBuffer(c->dstate, c->pinned[b]);
		if (s == 0)
			s = faster_nvj_p_nvjpegDecodeJpegHost(c->hyb, c->dec, c->dstate, c->hparams, c->jstream[b]);
		if (s == 0 && queued)
			CUDA_TRY(faster_nvj_p_cudaStreamSynchronize(c->hstream));
		if (s == 0) {
			any = 1;
			s = faster_nvj_p_nvjpegDecodeJpegTransferToDevice(c->hyb, c->dec, c->dstate, c->jstream[b], c->hstream);
			if (s != 0) {
				/* A failed transfer may have queued part of its copy
				 * from pinned[b], which the next image's host phase
				 * writes: wait for it first. */
				CUDA_TRY(faster_nvj_p_cudaStreamSynchronize(c->hstream));
				queued = 0;
			}
		}
		if (s == 0) {
			queued = 1;
			b ^= 1;
			s = faster_nvj_p_nvjpegDecodeJpegDevice(c->hyb, c->dec, c->dstate, &d, c->hstream);
		}
		if (s != 0) {
			route[i] = 2;
			status[i] = s;
		}
	}
	if (any) {
		CUDA_TRY(faster_nvj_p_cudaEventRecord(c->hdone, c->hstream));
		CUDA_TRY(faster_nvj_p_cudaStreamWaitEvent(c->stream, c->hdone, 0));
	}
	return 0;
}

int faster_nvj_sync(struct faster_nvj *c, char *report, size_t cap) {
	report[0] = 0;
	int r = set_device(c, report, cap);
	if (r != 0)
		return r;
	/* The hybrid stream first: after a decode that failed midway,
	 * c->stream may not wait for its work. */
	CUDA_TRY(faster_nvj_p_cudaStreamSynchronize(c->hstream));
	CUDA_TRY(faster_nvj_p_cudaStreamSynchronize(c->stream));
	return 0;
}
