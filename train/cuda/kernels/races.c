//go:build cgo

/* races.c: four small kernels, each with a race a GPU could show and, with
 * fixed set, without it: the tests' proof that the schedules of
 * prelude_cpu.h find each kind (schedule_test.go). Not part of kernels.cu:
 * nothing launches them on the GPU. */
#pragma GCC optimize("fp-contract=off")
#include "prelude_cpu.h"
#include "cpu.h"

#define RB 256

/* race_phase: each thread writes its value and, in the same phase, reads its
 * neighbour's (fixed: a SYNC between). */
static void race_phase(const float *in, float *out, int fixed) {
	SHARED(float, sh, [RB]);
	if (fixed) {
		THREADS(t)
		sh[t] = in[BLOCK_IDX * BLOCK_DIM + t];
		END_THREADS
		SYNC
		THREADS(t)
		out[BLOCK_IDX * BLOCK_DIM + t] = sh[(t + 1) % BLOCK_DIM];
		END_THREADS
		return;
	}
	THREADS(t)
	sh[t] = in[BLOCK_IDX * BLOCK_DIM + t];
	out[BLOCK_IDX * BLOCK_DIM + t] = sh[(t + 1) % BLOCK_DIM];
	END_THREADS
}

/* race_nosync: two phases, the second reading what the first wrote for
 * another thread, with no SYNC between (fixed: with it). */
static void race_nosync(const float *in, float *out, int fixed) {
	SHARED(float, sh, [RB]);
	THREADS(t)
	sh[t] = in[BLOCK_IDX * BLOCK_DIM + t] * 2.0f;
	END_THREADS
	if (fixed) {
		SYNC
	}
	THREADS(t)
	out[BLOCK_IDX * BLOCK_DIM + t] = sh[BLOCK_DIM - 1 - t];
	END_THREADS
}

/* race_loop: a loop over tiles, each loaded into SHARED memory, SYNC, then
 * read reversed; without the SYNC at the loop's end (fixed: with it), a
 * thread loads the next tile over one another thread still reads. */
static void race_loop(const float *in, float *out, int tiles, int fixed) {
	SHARED(float, sh, [RB]);
	for (int k = 0; k < tiles; k++) {
		THREADS(t)
		sh[t] = in[((i64)BLOCK_IDX * tiles + k) * BLOCK_DIM + t];
		END_THREADS
		SYNC
		THREADS(t)
		out[((i64)BLOCK_IDX * tiles + k) * BLOCK_DIM + t] = sh[BLOCK_DIM - 1 - t];
		END_THREADS
		if (fixed) {
			SYNC
		}
	}
}

/* race_blocks: each block adds the previous block's output to its input, a
 * dependence between blocks of one launch (fixed: on the input only). */
static void race_blocks(const float *in, float *out, int fixed) {
	THREADS(t)
	const i64 i = BLOCK_IDX * BLOCK_DIM + t;
	out[i] = in[i] + (BLOCK_IDX > 0 ? (fixed ? in[i - BLOCK_DIM] : out[i - BLOCK_DIM]) : 0.0f);
	END_THREADS
}

int cpu_race(int kind, int g, int b, const float *in, float *out, int tiles, int fixed) {
	if (b > RB)
		return -1;
	switch (kind) {
	case 0:
		CPU_LAUNCH(g, b, race_phase(in, out, fixed));
		return 0;
	case 1:
		CPU_LAUNCH(g, b, race_nosync(in, out, fixed));
		return 0;
	case 2:
		CPU_LAUNCH(g, b, race_loop(in, out, tiles, fixed));
		return 0;
	case 3:
		CPU_LAUNCH(g, b, race_blocks(in, out, fixed));
		return 0;
	}
	return -1;
}
