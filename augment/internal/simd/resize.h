//go:build cgo

#ifndef FASTER_SIMD_RESIZE_H
#define FASTER_SIMD_RESIZE_H

#include <stdint.h>

// job is one resize: the horizontal pass of source rows [ylo, yhi) into
// tmp, then the vertical pass into dst. All pointers are borrowed for the
// duration of one call.
typedef struct {
	uint8_t *dst;
	int dstStride, dstH;
	const uint8_t *src;
	long srcLen;
	int srcStride, ch;
	int hn, hk; // horizontal table: hn outputs, hk weights each
	const int32_t *hstart, *hcount, *hw;
	int vk; // vertical table: dstH outputs, vk weights each
	const int32_t *vstart, *vcount, *vw;
	int ylo, yhi;
	void *tmp; // uint16_t when wide, else uint8_t; (yhi-ylo)*hn*ch + 4 samples
	int wide;
	int hshift, hmax, vshift;
	int16_t *wq; // scratch for the rearranged horizontal weights
	long wqLen;
	int split; // set by faster_resize
} job;

int faster_resize(job *j);

// faster_set_level_cap limits the instruction set the kernels use: 0 none
// (faster_resize reports 0), 1 SSSE3, 2 AVX2. Tests only; not safe while
// resizing.
void faster_set_level_cap(int cap);

#endif
