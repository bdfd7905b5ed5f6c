/* standin_cudart.c: a stand-in of libcudart.so.13 that the tests build with
 * gcc (nvj_test.go). "Device memory" is host memory, and a stream is a
 * queue whose work runs only when the stream is synchronised (or
 * destroyed): the latest a GPU may run it, so work that is read before
 * its stream is synchronised is seen missing. The stand-ins of libnvjpeg
 * and libcuda queue their work here (standin_enqueue), and it checks what
 * the decode stage promises, one line "standin: VIOLATION ..." on stderr
 * for each breach:
 *   - every call that takes a stream gets a live stream that
 *     cudaStreamCreateWithFlags made with cudaStreamNonBlocking, never
 *     NULL (the legacy default stream); such work runs at once;
 *   - no cudaDeviceSynchronize and no synchronous cudaMemcpy (it runs on
 *     the legacy stream), ever;
 *   - host memory that queued work reads stays as it was until the
 *     stream runs that work (a checksum taken when it is queued, compared
 *     when it runs).
 * Events order streams as on a GPU: a stream's wait for an event runs the
 * event's stream through its mark before what follows the wait. 
 * Each queued call is a line "standin: s<N> ran <call>" when it runs. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STREAM_MAGIC 0x5354524du
#define cudaStreamNonBlocking 1u

struct standin_stream {
	unsigned magic, flags;
	int id, live;
};

/* An event: a mark in one stream's queue (cudaEventRecord), done once
 * the stream runs past it. */
struct standin_event {
	struct standin_stream *s; /* the stream of its last record, or NULL */
	int done;
};

struct op {
	struct op *next;
	struct standin_stream *s;
	const char *call;
	void (*run)(void *);
	void *arg;
	/* wait: a cudaStreamWaitEvent: before what follows on s, the
	 * event's stream runs through its mark. */
	struct standin_event *wait;
	const unsigned char *src; /* host memory the work reads, or NULL */
	size_t n;
	unsigned long long sum;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct op *head, **tail = &head;
static int nstreams;

void standin_violation(const char *format, ...) {
	va_list ap;
	va_start(ap, format);
	fprintf(stderr, "standin: VIOLATION ");
	vfprintf(stderr, format, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

/* sum is FNV-1a over n bytes. */
static unsigned long long sum(const unsigned char *p, size_t n) {
	unsigned long long h = 14695981039346656037ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

/* live says whether stream is one to queue call's work on, naming what is
 * wrong otherwise. */
static int live(void *stream, const char *call) {
	struct standin_stream *s = stream;
	if (!s) {
		standin_violation("%s on the NULL stream (the legacy default stream)", call);
		return 0;
	}
	if (s->magic != STREAM_MAGIC || !s->live) {
		standin_violation("%s on %p, not a live stream of cudaStreamCreateWithFlags", call, stream);
		return 0;
	}
	if (!(s->flags & cudaStreamNonBlocking))
		standin_violation("%s on s%d, made without cudaStreamNonBlocking (flags %u)", call, s->id, s->flags);
	return 1;
}

/* standin_enqueue queues run(arg) on stream as call's work; src..src+n is
 * host memory it reads (src NULL: none). arg is malloc'd; it is freed
 * once run. */
void standin_enqueue(void *stream, const char *call, void (*run)(void *), void *arg, const void *src, size_t n) {
	if (!live(stream, call)) {
		run(arg);
		free(arg);
		return;
	}
	struct op *o = calloc(1, sizeof *o);
	o->s = stream;
	o->call = call;
	o->run = run;
	o->arg = arg;
	o->src = src;
	o->n = n;
	if (src)
		o->sum = sum(src, n);
	pthread_mutex_lock(&mu);
	*tail = o;
	tail = &o->next;
	pthread_mutex_unlock(&mu);
}

static void drain_locked(struct standin_stream *s);

/* drain runs s's queued work in order (s NULL: every stream's). */
static void drain(struct standin_stream *s) {
	pthread_mutex_lock(&mu);
	drain_locked(s);
	pthread_mutex_unlock(&mu);
}

/* drain_locked is drain with mu held: a wait runs the event's stream
 * through its mark first, as a GPU would before what follows it. */
static void drain_locked(struct standin_stream *s) {
	struct op **p = &head;
	while (*p) {
		struct op *o = *p;
		if (s && o->s != s) {
			p = &o->next;
			continue;
		}
		*p = o->next;
		if (!*p)
			tail = p; /* o was the last */
		if (o->src && sum(o->src, o->n) != o->sum)
			standin_violation("%s: the host memory it reads changed between the call and the stream's running it",
					  o->call);
		fprintf(stderr, "standin: s%d ran %s\n", o->s->id, o->call);
		if (o->wait) {
			struct standin_event *e = o->wait;
			free(o);
			if (!e->done && e->s) {
				drain_locked(e->s);
				p = &head; /* the list changed under p: from its start again */
			}
			continue;
		}
		o->run(o->arg);
		free(o->arg);
		free(o);
	}
}

int cudaStreamCreateWithFlags(void **stream, unsigned int flags) {
	struct standin_stream *s = calloc(1, sizeof *s);
	s->magic = STREAM_MAGIC;
	s->flags = flags;
	s->live = 1;
	pthread_mutex_lock(&mu);
	s->id = ++nstreams;
	pthread_mutex_unlock(&mu);
	fprintf(stderr, "standin: cudaStreamCreateWithFlags(flags %u) made s%d\n", flags, s->id);
	*stream = s;
	return 0;
}

int cudaStreamSynchronize(void *stream) {
	if (!live(stream, "cudaStreamSynchronize"))
		return 400; /* cudaErrorInvalidResourceHandle */
	drain(stream);
	fprintf(stderr, "standin: cudaStreamSynchronize(s%d)\n", ((struct standin_stream *)stream)->id);
	return 0;
}

int cudaStreamDestroy(void *stream) {
	if (!live(stream, "cudaStreamDestroy"))
		return 400;
	struct standin_stream *s = stream;
	drain(s);
	s->live = 0; /* never freed: a later use is seen */
	fprintf(stderr, "standin: cudaStreamDestroy(s%d)\n", s->id);
	return 0;
}

struct copy {
	void *dst;
	const void *src;
	size_t n;
};

static void run_copy(void *arg) {
	struct copy *c = arg;
	memcpy(c->dst, c->src, c->n);
}

int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *stream) {
	if (kind != 1 && kind != 2)
		return 21; /* cudaErrorInvalidMemcpyDirection */
	struct copy *c = malloc(sizeof *c);
	c->dst = dst;
	c->src = src;
	c->n = n;
	/* A copy from the host reads host memory when it runs. */
	standin_enqueue(stream, kind == 1 ? "cudaMemcpyAsync(to the device)" : "cudaMemcpyAsync(to the host)", run_copy, c,
			kind == 1 ? src : NULL, n);
	return 0;
}

int cudaMemcpy(void *dst, const void *src, size_t n, int kind) {
	standin_violation("cudaMemcpy: a copy on the legacy default stream");
	memcpy(dst, src, n);
	return 0;
}

int cudaDeviceSynchronize(void) {
	standin_violation("cudaDeviceSynchronize: waits for every stream of the device, a trainer's too");
	drain(NULL);
	return 0;
}

int cudaRuntimeGetVersion(int *v) {
	*v = 13000;
	return 0;
}
int cudaGetDeviceCount(int *n) {
	*n = 1;
	return 0;
}
int cudaSetDevice(int d) { return d == 0 ? 0 : 101; /* cudaErrorInvalidDevice */ }
const char *cudaGetErrorString(int e) { return "stub error"; }
/* Device memory and pinned host memory are fenced: FENCE bytes of 0xff
 * before and after each buffer (its size kept in front of the first),
 * checked when it is freed, so a write past a buffer (on the GPU another
 * buffer's bytes, or an illegal address; in pinned memory another
 * allocation's bytes, which a DMA would then carry) is a violation; a read
 * there gives NaN or 0xff. The buffer starts 256-byte aligned, as
 * cudaMalloc's. */
#define FENCE 256
static int fenced_alloc(void **p, size_t n) {
	unsigned char *b = aligned_alloc(FENCE, (n + 3 * FENCE - 1) / FENCE * FENCE);
	if (!b)
		return 2; /* cudaErrorMemoryAllocation */
	memset(b, 0xff, FENCE);
	memcpy(b, &n, sizeof n);
	memset(b + FENCE + n, 0xff, FENCE);
	*p = b + FENCE;
	return 0;
}
static void fenced_free(const char *call, void *p) {
	if (!p)
		return;
	unsigned char *b = (unsigned char *)p - FENCE;
	size_t n;
	memcpy(&n, b, sizeof n);
	for (size_t i = sizeof n; i < FENCE; i++)
		if (b[i] != 0xff) {
			standin_violation("%s(%p): byte %ld before the buffer of %zu bytes was written", call, p, (long)i - FENCE, n);
			break;
		}
	for (size_t i = 0; i < FENCE; i++)
		if (b[FENCE + n + i] != 0xff) {
			standin_violation("%s(%p): byte %zu of the buffer of %zu bytes (past its end) was written", call, p, n + i, n);
			break;
		}
	free(b);
}
int cudaMalloc(void **p, size_t n) { return fenced_alloc(p, n); }
int cudaFree(void *p) {
	fenced_free("cudaFree", p);
	return 0;
}
int cudaHostAlloc(void **p, size_t n, unsigned int f) { return fenced_alloc(p, n); }
int cudaFreeHost(void *p) {
	fenced_free("cudaFreeHost", p);
	return 0;
}
int cudaIpcGetMemHandle(void *h, void *p) {
	memset(h, 0, 64);
	memcpy(h, &p, sizeof p);
	return 0;
}

/* Events: cudaEventRecord queues a mark on the stream, done when the
 * stream runs it; cudaStreamWaitEvent queues on another stream a wait
 * that, when that stream runs it, first runs the event's stream through
 * the mark. */
static void run_mark(void *arg) { (*(struct standin_event **)arg)->done = 1; }

int cudaEventCreateWithFlags(void **ev, unsigned int flags) {
	struct standin_event *e = calloc(1, sizeof *e);
	e->done = 1; /* never recorded: nothing to wait for */
	*ev = e;
	return 0;
}

int cudaEventDestroy(void *ev) {
	free(ev); /* a mark still queued would run after this: the tests sync first */
	return 0;
}

int cudaEventRecord(void *ev, void *stream) {
	if (!live(stream, "cudaEventRecord"))
		return 400;
	struct standin_event *e = ev;
	pthread_mutex_lock(&mu);
	e->s = stream;
	e->done = 0;
	pthread_mutex_unlock(&mu);
	struct standin_event **arg = malloc(sizeof *arg);
	*arg = e;
	standin_enqueue(stream, "cudaEventRecord", run_mark, arg, NULL, 0);
	return 0;
}

int cudaStreamWaitEvent(void *stream, void *ev, unsigned int flags) {
	if (!live(stream, "cudaStreamWaitEvent"))
		return 400;
	struct op *o = calloc(1, sizeof *o);
	o->s = stream;
	o->call = "cudaStreamWaitEvent";
	o->wait = ev;
	pthread_mutex_lock(&mu);
	*tail = o;
	tail = &o->next;
	pthread_mutex_unlock(&mu);
	return 0;
}
