/* nvj.h: the GPU decoder's C side (nvj.c): nvJPEG's handles for one GPU,
 * the stage's stream, and the decode of a batch into device memory. */
#include <stddef.h>

struct faster_nvj {
	int ordinal;
	/* The stage's own stream (cudaStreamCreateWithFlags,
	 * cudaStreamNonBlocking): every decode, copy and kernel of a batch
	 * is queued on it. A non-blocking stream neither waits for the legacy
	 * default stream nor makes it wait, so a trainer's stream on the same
	 * GPU runs beside the decode. */
	void *stream;
	/* The stream of the rows the CPU makes (Upload), non-blocking too:
	 * a row is copied into a place the batch's work does not touch, so
	 * it need not wait for the batch the hardware decodes meanwhile. */
	void *upload;
	/* The hardware backend (NVJPEG_BACKEND_HARDWARE); hw is NULL where
	 * nvjpegCreateEx refused it (a GPU without JPEG engines). */
	void *hw, *hw_state, *hw_jstream;
	int hw_batch; /* the batch size nvjpegDecodeBatchedInitialize was given */
	void **params; /* one decode-params object per image of a hardware batch */
	int nparams;
	/* The hybrid backend (NVJPEG_BACKEND_HYBRID: Huffman on the host,
	 * the rest on the GPU; it takes progressive JPEGs), decoupled API,
	 * one image at a time; two pinned buffers and JPEG streams used in
	 * turn, so that the host phase of an image never writes the buffer
	 * an earlier image's queued transfer reads (nvJPEG's decoupled-decode
	 * sample). */
	void *hyb, *dec, *dstate, *devbuf, *hparams;
	void *pinned[2], *jstream[2];
	/* The hybrid images' stream (non-blocking): their transfers and
	 * device phases, so that waiting for the previous one before a
	 * transfer does not wait for the hardware batch queued on stream
	 * too; hdone is recorded there after them and stream waits for it,
	 * before the kernels that read every image. */
	void *hstream, *hdone;
};

/* faster_nvj_open makes c's stream and handles on GPU ordinal, the
 * hardware decoder's buffers allocated for batches of up to max_batch
 * images: 0, or the failing call's status with its name in report. */
int faster_nvj_open(struct faster_nvj *c, int ordinal, int max_batch, char *report, size_t cap);
/* faster_nvj_close waits for c's stream, destroys the handles, then the
 * streams. */
void faster_nvj_close(struct faster_nvj *c);

/* faster_nvj_decode queues the decode of n JPEGs on c->stream, image i at
 * data + off[i] (len[i] bytes, pinned host memory that must stay as it is
 * until the stream is synchronised), the region roi[4i..4i+3] (x, y,
 * width, height) as interleaved RGB into device memory dst[i] with
 * pitch[i] bytes a row. route[i] is 0 for the hardware backend, 1 for the
 * hybrid one; on return, what ran: 0, 1 (the hardware refused it:
 * nvjpegDecodeBatchedSupportedEx, or its batch failed), or 2 when neither
 * could (status[i] says why: the caller's CPU fallback). It returns 0 once
 * the work is queued (the caller ends the batch with faster_nvj_sync), or
 * a failing call's status (report names it) when the batch as a whole
 * failed. */
int faster_nvj_decode(struct faster_nvj *c, int n, const unsigned char *data, const size_t *off, const size_t *len,
		      const int *roi, const unsigned long long *dst, const size_t *pitch, int *route, int *status,
		      char *report, size_t cap);

/* faster_nvj_sync waits for c's streams (cudaStreamSynchronize: the
 * hybrid one, then the batch's): what was queued on them is done. 0, or the status with the call named in report. */
int faster_nvj_sync(struct faster_nvj *c, char *report, size_t cap);
