//go:build cgo && !faster_serveonly && !faster_noonednn

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "shim.h"

extern void omp_set_num_threads(int);

static dnnl_engine_t engine;
static dnnl_primitive_attr_t attr, attr_relu;

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
    // attr_relu adds a ReLU post-op (a convolution fused with the ReLU
    // after it).
    dnnl_post_ops_t po;
    if ((st = dnnl_primitive_attr_clone(&attr_relu, attr)) != dnnl_success) return st;
    if ((st = dnnl_post_ops_create(&po)) != dnnl_success) return st;
    st = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f);
    if (st == dnnl_success) st = dnnl_primitive_attr_set_post_ops(attr_relu, po);
    dnnl_post_ops_destroy(po);
    if (st != dnnl_success) return st;
    return dnnl_engine_create(&engine, dnnl_cpu, 0);
}

const_dnnl_primitive_attr_t shim_attr_relu(void) { return attr_relu; }

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

// ---- reduced precision ----
//
// shim_round_bf16 and shim_round_f16 round n floats to bfloat16 or IEEE
// half precision (round to nearest even) and back to float, from src into
// dst (which may be src). Rounding is element-wise, so it works on any
// memory layout, blocked ones included.

#include <stdint.h>
#include <immintrin.h>

static inline uint32_t bf16_bits(uint32_t b) {
    uint32_t r = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;
    uint32_t q = (b | 0x00400000u) & 0xffff0000u; // NaN stays a (quiet) NaN
    return (b & 0x7fffffffu) > 0x7f800000u ? q : r;
}

static void round_bf16_generic(uint32_t *d, const uint32_t *s, size_t n) {
    for (size_t i = 0; i < n; i++) d[i] = bf16_bits(s[i]);
}

__attribute__((target("avx2")))
static void round_bf16_avx2(uint32_t *d, const uint32_t *s, size_t n) {
    const __m256i half = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1),
        high = _mm256_set1_epi32((int)0xffff0000u), abs = _mm256_set1_epi32(0x7fffffff),
        inf = _mm256_set1_epi32(0x7f800000), quiet = _mm256_set1_epi32(0x00400000);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i b = _mm256_loadu_si256((const __m256i *)(s + i));
        __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), one);
        __m256i r = _mm256_and_si256(_mm256_add_epi32(_mm256_add_epi32(b, half), lsb), high);
        __m256i q = _mm256_and_si256(_mm256_or_si256(b, quiet), high);
        __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(b, abs), inf);
        _mm256_storeu_si256((__m256i *)(d + i), _mm256_blendv_epi8(r, q, nan));
    }
    for (; i < n; i++) d[i] = bf16_bits(s[i]);
}

static inline float f16_scalar(float f) {
    union { float f; uint32_t u; } v = { f };
    uint32_t sign = v.u & 0x80000000u, a = v.u & 0x7fffffffu;
    if (a >= 0x7f800000u) return f; // Inf, NaN
    if (a < 0x38800000u) {          // below 2^-14: a multiple of 2^-24
        // In [0.5, 1) float's spacing is 2^-24, so adding and subtracting
        // 0.5 rounds to the nearest multiple of 2^-24, ties to even.
        union { uint32_t u; float f; } x = { a };
        union { float f; uint32_t u; } o = { (x.f + 0.5f) - 0.5f };
        o.u |= sign;
        return o.f;
    }
    a += 0xfffu + ((a >> 13) & 1u);
    a &= ~0x1fffu;
    if (a >= 0x47800000u) a = 0x7f800000u; // beyond 65504: infinity
    union { uint32_t u; float f; } o = { a | sign };
    return o.f;
}

static void round_f16_generic(float *d, const float *s, size_t n) {
    for (size_t i = 0; i < n; i++) d[i] = f16_scalar(s[i]);
}

__attribute__((target("avx,f16c")))
static void round_f16_f16c(float *d, const float *s, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm256_storeu_ps(d + i, _mm256_cvtph_ps(h));
    }
    for (; i < n; i++) d[i] = f16_scalar(s[i]);
}

static int has_avx2 = -1, has_f16c = -1;

void shim_round(float *dst, const float *src, size_t n, int half, int threads) {
    if (has_avx2 < 0) {
        __builtin_cpu_init();
        has_f16c = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
        has_avx2 = __builtin_cpu_supports("avx2");
    }
    // Chunks of 16 Ki floats, over at most one thread per Mi floats: the
    // loop is memory-bound, and below that a fork and join of busy cores
    // costs more than it saves.
    const size_t chunk = 1 << 14;
    long chunks = (long)((n + chunk - 1) / chunk);
    if ((size_t)threads > n >> 20) threads = (int)(n >> 20);
    if (threads < 1) threads = 1;
    #pragma omp parallel for num_threads(threads) schedule(static)
    for (long c = 0; c < chunks; c++) {
        size_t lo = (size_t)c * chunk, m = n - lo < chunk ? n - lo : chunk;
        if (half) {
            if (has_f16c) round_f16_f16c(dst + lo, src + lo, m);
            else round_f16_generic(dst + lo, src + lo, m);
        } else {
            if (has_avx2) round_bf16_avx2((uint32_t *)dst + lo, (const uint32_t *)src + lo, m);
            else round_bf16_generic((uint32_t *)dst + lo, (const uint32_t *)src + lo, m);
        }
    }
}

// shim_md_layout writes a short name of md's layout in oneDNN's tag
// notation ("abcd", "acdb", "aBcd8b") into buf and returns its length.
int shim_md_layout(const dnnl_memory_desc_t *md, char *buf, int len) {
    if (len < 32) return 0;
    if (md->format_kind == dnnl_format_kind_any) return snprintf(buf, len, "any");
    if (md->format_kind != dnnl_blocked) return snprintf(buf, len, "opaque");
    const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
    int nd = md->ndims, order[DNNL_MAX_NDIMS], blocked[DNNL_MAX_NDIMS] = {0};
    for (int i = 0; i < nd; i++) order[i] = i;
    for (int i = 1; i < nd; i++) // stable insertion sort, outermost first
        for (int j = i; j > 0 && b->strides[order[j]] > b->strides[order[j - 1]]; j--) {
            int t = order[j]; order[j] = order[j - 1]; order[j - 1] = t;
        }
    for (int k = 0; k < b->inner_nblks; k++) blocked[b->inner_idxs[k]] = 1;
    int n = 0;
    for (int i = 0; i < nd; i++) buf[n++] = (char)((blocked[order[i]] ? 'A' : 'a') + order[i]);
    for (int k = 0; k < b->inner_nblks && n < len - 24; k++)
        n += snprintf(buf + n, len - n, "%lld%c", (long long)b->inner_blks[k], (char)('a' + b->inner_idxs[k]));
    buf[n] = 0;
    return n;
}

// shim_impl names the implementation oneDNN chose for pd ("jit:avx2").
const char *shim_impl(const_dnnl_primitive_desc_t pd) {
    const char *s = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s) != dnnl_success || !s) return "?";
    return s;
}

void shim_set_threads(int threads) {
    if (threads > 0) omp_set_num_threads(threads);
}

// ---- batch normalisation backward over a ReLU's output ----
//
// shim_bn_bwd16 is BatchNorm's backward pass for x in oneDNN's aBcd16b
// layout (N, C/16, H·W, 16; C a multiple of 16) with the ReLU before it
// fused in: x is the ReLU's output, and dx is the gradient with respect to
// the ReLU's input, that is BatchNorm's dx where x > 0 and 0 elsewhere. It
// makes two passes: per-channel sums of dy and dy·(x − mean) (float over
// one image's plane, double across images), then
// dx = γ/σ·(dy − Σdy/M − x̂·Σdy·x̂/M), masked, with σ = √(var + eps) and
// M = N·H·W; dgamma = Σdy·x̂, dbeta = Σdy.
#include <math.h>
#include <omp.h>

// The loops over the 16 lanes of a block vectorise; target_clones builds
// them for AVX-512 as well as the baseline, chosen at load time.
__attribute__((target_clones("avx512f", "default"), optimize("O3")))
static void bn_sums16(const float *xs, const float *g, const float *mean16, int HW, float *s1, float *s2) {
    float m[16];
    for (int l = 0; l < 16; l++) m[l] = mean16[l], s1[l] = 0, s2[l] = 0;
    for (int i = 0; i < HW; i++)
        for (int l = 0; l < 16; l++) {
            float gv = g[i * 16 + l];
            s1[l] += gv;
            s2[l] += gv * (xs[i * 16 + l] - m[l]);
        }
}

__attribute__((target_clones("avx512f", "default"), optimize("O3")))
static void bn_dx16(const float *xs, const float *g, float *d, const float *k, const float *a, const float *b,
        const float *mean16, int HW) {
    float kl[16], al[16], bl[16], m[16];
    for (int l = 0; l < 16; l++) kl[l] = k[l], al[l] = a[l], bl[l] = b[l], m[l] = mean16[l];
    for (int i = 0; i < HW; i++)
        for (int l = 0; l < 16; l++) {
            float xv = xs[i * 16 + l];
            float v = kl[l] * g[i * 16 + l] + al[l] * (xv - m[l]) + bl[l];
            d[i * 16 + l] = xv > 0 ? v : 0;
        }
}

void shim_bn_bwd16(const float *x, const float *dy, float *dx, const float *mean, const float *var,
        const float *gamma, float eps, float *dgamma, float *dbeta, int N, int C, int HW, int threads) {
    const int CB = C / 16;
    if (threads < 1) threads = 1;
    // Each thread sums into its own row; the rows are added in thread
    // order afterwards, so a given thread count always gives the same bits.
    double parts[threads][2 * C];
    memset(parts, 0, sizeof parts);
    #pragma omp parallel num_threads(threads)
    {
        double *part = parts[omp_get_thread_num()];
        #pragma omp for schedule(static)
        for (long nb = 0; nb < (long)N * CB; nb++) {
            const int cb = (int)(nb % CB);
            float s1[16], s2[16];
            bn_sums16(x + nb * HW * 16, dy + nb * HW * 16, mean + cb * 16, HW, s1, s2);
            for (int l = 0; l < 16; l++) {
                part[cb * 16 + l] += s1[l];
                part[C + cb * 16 + l] += s2[l];
            }
        }
    }
    double sums[2 * C];
    for (int i = 0; i < 2 * C; i++) {
        sums[i] = 0;
        for (int t = 0; t < threads; t++) sums[i] += parts[t][i];
    }
    const double M = (double)N * HW;
    float k[C], a[C], b[C];
    for (int c = 0; c < C; c++) {
        double inv = 1 / sqrt((double)var[c] + eps);
        dbeta[c] = (float)sums[c];
        dgamma[c] = (float)(sums[C + c] * inv);
        // dx = k·(dy − Σdy/M − (x − mean)·inv²·Σdy(x − mean)/M)
        //    = k·dy + a·(x − mean) + b
        double kk = gamma[c] * inv, s1 = sums[c] / M, s2 = sums[C + c] * inv * inv / M;
        k[c] = (float)kk;
        a[c] = (float)(-kk * s2);
        b[c] = (float)(-kk * s1);
    }
    #pragma omp parallel for num_threads(threads) schedule(static)
    for (long nb = 0; nb < (long)N * CB; nb++) {
        const int cb = (int)(nb % CB);
        bn_dx16(x + nb * HW * 16, dy + nb * HW * 16, dx + nb * HW * 16, k + cb * 16, a + cb * 16, b + cb * 16, mean + cb * 16, HW);
    }
}

// shim_bn_fwd16 is BatchNorm's training forward pass for x in aBcd16b
// layout (C a multiple of 16) in two passes instead of oneDNN's three:
// per-channel sums of x − shift and (x − shift)² (float over one image's
// plane, double across images; shift, the first image's mean, keeps the
// variance free of cancellation and depends on this batch only), then
// y = γ·(x − mean)/√(var + eps) + β. It writes the batch mean and biased
// variance into mean and var.
__attribute__((target_clones("avx512f", "default"), optimize("O3")))
static void bn_moments16(const float *xs, const float *shift16, int HW, float *s1, float *s2) {
    float m[16];
    for (int l = 0; l < 16; l++) m[l] = shift16[l], s1[l] = 0, s2[l] = 0;
    for (int i = 0; i < HW; i++)
        for (int l = 0; l < 16; l++) {
            float d = xs[i * 16 + l] - m[l];
            s1[l] += d;
            s2[l] += d * d;
        }
}

__attribute__((target_clones("avx512f", "default"), optimize("O3")))
static void bn_norm16(const float *xs, float *y, const float *mean16, const float *k, const float *b, int HW) {
    float kl[16], bl[16], m[16];
    for (int l = 0; l < 16; l++) kl[l] = k[l], bl[l] = b[l], m[l] = mean16[l];
    for (int i = 0; i < HW; i++)
        for (int l = 0; l < 16; l++) y[i * 16 + l] = kl[l] * (xs[i * 16 + l] - m[l]) + bl[l];
}

void shim_bn_fwd16(const float *x, float *y, const float *gamma, const float *beta, float eps,
        float *mean, float *var, int N, int C, int HW, int threads) {
    const int CB = C / 16;
    if (threads < 1) threads = 1;
    float shift[C], zero[16] = {0};
    for (int cb = 0; cb < CB; cb++) {
        float s1[16], s2[16];
        bn_moments16(x + (long)cb * HW * 16, zero, HW, s1, s2);
        for (int l = 0; l < 16; l++) shift[cb * 16 + l] = s1[l] / HW;
    }
    double parts[threads][2 * C];
    memset(parts, 0, sizeof parts);
    #pragma omp parallel num_threads(threads)
    {
        double *part = parts[omp_get_thread_num()];
        #pragma omp for schedule(static)
        for (long nb = 0; nb < (long)N * CB; nb++) {
            const int cb = (int)(nb % CB);
            float s1[16], s2[16];
            bn_moments16(x + nb * HW * 16, shift + cb * 16, HW, s1, s2);
            for (int l = 0; l < 16; l++) {
                part[cb * 16 + l] += s1[l];
                part[C + cb * 16 + l] += s2[l];
            }
        }
    }
    const double M = (double)N * HW;
    float k[C], b[C];
    for (int c = 0; c < C; c++) {
        double s1 = 0, s2 = 0;
        for (int t = 0; t < threads; t++) s1 += parts[t][c], s2 += parts[t][C + c];
        double d = s1 / M, v = s2 / M - d * d;
        if (v < 0) v = 0;
        mean[c] = (float)(shift[c] + d);
        var[c] = (float)v;
        double kk = gamma[c] / sqrt(v + eps);
        k[c] = (float)kk;
        b[c] = (float)(beta[c] - kk * (shift[c] + d - mean[c])); // the rounding of mean, compensated
    }
    #pragma omp parallel for num_threads(threads) schedule(static)
    for (long nb = 0; nb < (long)N * CB; nb++) {
        const int cb = (int)(nb % CB);
        bn_norm16(x + nb * HW * 16, y + nb * HW * 16, mean + cb * 16, k + cb * 16, b + cb * 16, HW);
    }
}
