// Small C helpers for the Go wrappers: the engine, memory allocated by the
// library, and execution (with the OpenMP thread count set per call, since
// OpenMP's setting is per OS thread).
#ifndef FASTER_ONEDNN_SHIM_H
#define FASTER_ONEDNN_SHIM_H
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

dnnl_status_t shim_init(void);
dnnl_engine_t shim_engine(void);
const_dnnl_primitive_attr_t shim_attr(void);
const_dnnl_primitive_attr_t shim_attr_relu(void);
dnnl_status_t shim_stream_create(dnnl_stream_t *s);
dnnl_status_t shim_memory_create(dnnl_memory_t *m, const dnnl_memory_desc_t *md);
dnnl_status_t shim_execute(const_dnnl_primitive_t p, dnnl_stream_t s, int nargs,
        const dnnl_exec_arg_t *args, int threads);
void *shim_data(const_dnnl_memory_t m);
size_t shim_md_size(const dnnl_memory_desc_t *md);
int shim_md_equal(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b);
dnnl_memory_desc_t shim_query_md(const_dnnl_primitive_desc_t pd, int arg);
const char *shim_status(dnnl_status_t s);
// shim_set_threads sets the calling thread's OpenMP thread count: oneDNN
// plans a primitive's work split for the count in force when the
// primitive is created, so it must be the count it will run with.
void shim_set_threads(int threads);
void shim_round(float *dst, const float *src, size_t n, int half, int threads);
int shim_md_layout(const dnnl_memory_desc_t *md, char *buf, int len);
const char *shim_impl(const_dnnl_primitive_desc_t pd);
void shim_bn_fwd16(const float *x, float *y, const float *gamma, const float *beta, float eps,
        float *mean, float *var, int N, int C, int HW, int threads);
void shim_bn_bwd16(const float *x, const float *dy, float *dx, const float *mean, const float *var,
        const float *gamma, float eps, float *dgamma, float *dbeta, int N, int C, int HW, int threads);
#endif
