/* nvj.h: the GPU decoder's C side (nvj.c): nvJPEG's handles for one GPU
 * and the decode of a batch into device memory. */
#include <stddef.h>

struct faster_nvj {
	int ordinal;
	/* The hardware backend (NVJPEG_BACKEND_HARDWARE); hw is NULL where
	 * nvjpegCreateEx refused it (a GPU without JPEG engines). */
	void *hw, *hw_state, *hw_jstream;
	int hw_batch; /* the batch size nvjpegDecodeBatchedInitialize was given */
	void **params; /* one decode-params object per image of a hardware batch */
	int nparams;
	/* The GPU-hybrid backend, decoupled API, one image at a time. */
	void *gpu, *dec, *dstate, *pinned, *devbuf, *jstream, *gparams;
};

/* faster_nvj_open makes c's handles on GPU ordinal: 0, or the failing
 * call's status with its name in report. */
int faster_nvj_open(struct faster_nvj *c, int ordinal, char *report, size_t cap);
void faster_nvj_close(struct faster_nvj *c);

/* faster_nvj_decode decodes n JPEGs, image i at data + off[i] (len[i]
 * bytes, host memory), the region roi[4i..4i+3] (x, y, width, height)
 * as interleaved RGB into device memory dst[i] with pitch[i] bytes a row.
 * route[i] is 0 for the hardware backend, 1 for the GPU-hybrid one; on
 * return, what ran: 0, 1 (the hardware refused it:
 * nvjpegDecodeBatchedSupportedEx, or its batch failed), or 2 when neither
 * could (status[i] says why: the caller's CPU fallback). It returns 0 once
 * the work is done (cudaDeviceSynchronize), or a failing call's status
 * (report names it) when the batch as a whole failed. */
int faster_nvj_decode(struct faster_nvj *c, int n, const unsigned char *data, const size_t *off, const size_t *len,
		      const int *roi, const unsigned long long *dst, const size_t *pitch, int *route, int *status,
		      char *report, size_t cap);
