//go:build cgo

#include <stddef.h>
#include <string.h>
#include "shim.h"

extern void omp_set_num_threads(int);

static dnnl_engine_t engine;
static dnnl_primitive_attr_t attr;

// Every primitive is created with a user-managed scratchpad: oneDNN's
// default (library) scratchpad is thread-local and sized on the creating
// thread, but Go runs a goroutine on any OS thread, so a primitive created
// on one thread and executed on another could overrun a smaller buffer.
dnnl_status_t shim_init(void) {
    if (engine) return dnnl_success;
    dnnl_status_t st = dnnl_primitive_attr_create(&attr);
    if (st != dnnl_success) return st;
    st = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (st != dnnl_success) return st;
    return dnnl_engine_create(&engine, dnnl_cpu, 0);
}

dnnl_engine_t shim_engine(void) { return engine; }

const_dnnl_primitive_attr_t shim_attr(void) { return attr; }

dnnl_status_t shim_stream_create(dnnl_stream_t *s) {
    return dnnl_stream_create(s, engine, dnnl_stream_default_flags);
}

dnnl_status_t shim_memory_create(dnnl_memory_t *m, const dnnl_memory_desc_t *md) {
    return dnnl_memory_create(m, md, engine, DNNL_MEMORY_ALLOCATE);
}

dnnl_status_t shim_execute(const_dnnl_primitive_t p, dnnl_stream_t s, int nargs,
        const dnnl_exec_arg_t *args, int threads) {
    if (threads > 0) omp_set_num_threads(threads);
    dnnl_status_t st = dnnl_primitive_execute(p, s, nargs, args);
    if (st != dnnl_success) return st;
    return dnnl_stream_wait(s);
}

void *shim_data(const_dnnl_memory_t m) {
    void *h = NULL;
    if (dnnl_memory_get_data_handle(m, &h) != dnnl_success) return NULL;
    return h;
}

size_t shim_md_size(const dnnl_memory_desc_t *md) { return dnnl_memory_desc_get_size(md); }

int shim_md_equal(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b) {
    return dnnl_memory_desc_equal(a, b);
}

dnnl_memory_desc_t shim_query_md(const_dnnl_primitive_desc_t pd, int arg) {
    dnnl_memory_desc_t md;
    memset(&md, 0, sizeof md);
    const dnnl_memory_desc_t *q = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
    if (q) md = *q;
    return md;
}

const char *shim_status(dnnl_status_t s) { return dnnl_status2str(s); }
