/* copy.c - strided copy-with-conversion, fill and cast (see copy.h). The GIL is released
 * by the caller; nothing here touches Python. */
#include "copy.h"

#include <string.h>

#include "../cpu/copy_bytes.h"
#include "../cpu/dispatch.h"
#include "../cpu/parallel.h"
#include "../shared/mp_half.h"
#include "backend.h"
#include "iter.h"

double mp_load_f64(mp_dtype dt, const char *p)
{
    switch (dt) {
    case MP_DTYPE_FLOAT32: return *(const float *)p;
    case MP_DTYPE_FLOAT16: return mp_half_to_f32(*(const mp_half *)p);
    case MP_DTYPE_BFLOAT16: return mp_bf16_to_f32(*(const mp_bf16 *)p);
    case MP_DTYPE_INT64: return (double)*(const int64_t *)p;
    case MP_DTYPE_BOOL: return *(const uint8_t *)p ? 1.0 : 0.0;
    case MP_DTYPE_UINT8: return (double)*(const uint8_t *)p;
    default: return 0.0;
    }
}

/* Float to int64 truncates toward zero; NaN and out-of-range values give INT64_MIN, as x86's
 * cvttsd2si does (and without the undefined behaviour of a plain C cast). */
static int64_t f64_to_i64(double v)
{
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
        return INT64_MIN;
    return (int64_t)v;
}

int64_t mp_load_i64(mp_dtype dt, const char *p)
{
    if (dt == MP_DTYPE_INT64)
        return *(const int64_t *)p;
    if (dt == MP_DTYPE_BOOL)
        return *(const uint8_t *)p ? 1 : 0;
    if (dt == MP_DTYPE_UINT8)
        return *(const uint8_t *)p;
    return f64_to_i64(mp_load_f64(dt, p));
}

void mp_store_scalar(mp_dtype dt, char *p, mp_scalar v)
{
    double f = v.is_int ? (double)v.i : v.f;
    switch (dt) {
    case MP_DTYPE_FLOAT32: *(float *)p = (float)f; break;
    case MP_DTYPE_FLOAT16: *(mp_half *)p = mp_f32_to_half((float)f); break;
    case MP_DTYPE_BFLOAT16: *(mp_bf16 *)p = mp_f32_to_bf16((float)f); break;
    case MP_DTYPE_INT64: *(int64_t *)p = v.is_int ? v.i : f64_to_i64(f); break;
    case MP_DTYPE_BOOL: *(uint8_t *)p = v.is_int ? v.i != 0 : f != 0.0; break;
    /* uint8 wraps modulo 256 as torch's integer casts do; floats truncate toward zero
     * first, and NaN, inf and values beyond int64 give 0 (torch leaves them undefined) */
    case MP_DTYPE_UINT8:
        *(uint8_t *)p = (uint8_t)((uint64_t)(v.is_int ? v.i : f64_to_i64(f)) & 0xFFu);
        break;
    default: break;
    }
}

static mp_scalar load_scalar(mp_dtype dt, const char *p)
{
    mp_scalar s = {0.0, 0, 0};
    if (mp_dtype_is_integral(dt)) {
        s.is_int = 1;
        s.i = mp_load_i64(dt, p);
    } else {
        s.f = mp_load_f64(dt, p);
    }
    return s;
}

typedef struct {
    mp_dtype dst, src;
    const mp_cpu_kernels *k;
} copy_ctx;

/* Contiguous runs between float dtypes go through the vector kernels. */
static int copy_run_fast(const copy_ctx *c, char *d, const char *s, int64_t n)
{
    size_t m = (size_t)n;
    if (c->dst == c->src) {
        memcpy(d, s, m * mp_dtype_size(c->dst));
    } else if (c->src == MP_DTYPE_FLOAT32 && c->dst == MP_DTYPE_FLOAT16) {
        c->k->f32_to_f16((const float *)s, (mp_half *)d, m);
    } else if (c->src == MP_DTYPE_FLOAT32 && c->dst == MP_DTYPE_BFLOAT16) {
        c->k->f32_to_bf16((const float *)s, (mp_bf16 *)d, m);
    } else if (c->src == MP_DTYPE_FLOAT16 && c->dst == MP_DTYPE_FLOAT32) {
        c->k->f16_to_f32((const mp_half *)s, (float *)d, m);
    } else if (c->src == MP_DTYPE_BFLOAT16 && c->dst == MP_DTYPE_FLOAT32) {
        c->k->bf16_to_f32((const mp_bf16 *)s, (float *)d, m);
    } else {
        return 0;
    }
    return 1;
}

static void copy_run(char **ptrs, const int64_t *strides, int64_t n, void *ctx)
{
    const copy_ctx *c = ctx;
    if (strides[0] == 1 && strides[1] == 1 && copy_run_fast(c, ptrs[0], ptrs[1], n))
        return;
    int64_t ds = strides[0] * (int64_t)mp_dtype_size(c->dst);
    int64_t ss = strides[1] * (int64_t)mp_dtype_size(c->src);
    char *d = ptrs[0];
    const char *s = ptrs[1];
    if (c->dst == c->src) {
        size_t sz = mp_dtype_size(c->dst);
        for (int64_t i = 0; i < n; i++, d += ds, s += ss)
            memcpy(d, s, sz);
        return;
    }
    for (int64_t i = 0; i < n; i++, d += ds, s += ss)
        mp_store_scalar(c->dst, d, load_scalar(c->src, s));
}

/* Large contiguous copies are split over the cores: one core cannot saturate memory
 * bandwidth with a conversion in the loop (benchmarks/bench_cast.py). */
#define MP_COPY_GRAIN (1 << 20)

typedef struct {
    copy_ctx c;
    char *d;
    const char *s;
} flat_copy;

static void copy_range(void *ctx, int64_t begin, int64_t end)
{
    flat_copy *f = ctx;
    char *ptrs[2] = {f->d + begin * (int64_t)mp_dtype_size(f->c.dst),
                     (char *)f->s + begin * (int64_t)mp_dtype_size(f->c.src)};
    const int64_t unit[2] = {1, 1};
    copy_run(ptrs, unit, end - begin, &f->c);
}

#define SHORT_ROW_BYTES 512

/* A same-dtype copy whose runs are short and unit-stride on both sides (transpose +
 * contiguous of attention heads, cat, split's backward): the two innermost dims as a loop
 * of inline row copies, the outer dims by an odometer. 0 when the walk is not of that kind. */
static int copy_short_rows(const mp_iter *it, size_t sz)
{
    int in = it->ndim - 1, mid = in - 1;
    size_t bytes = (size_t)it->shape[in] * sz;
    if (it->ndim < 2 || it->strides[0][in] != 1 || it->strides[1][in] != 1 ||
        bytes > SHORT_ROW_BYTES)
        return 0;
    int64_t rows = it->shape[mid], outer = it->numel / (rows * it->shape[in]);
    int64_t dstep = it->strides[0][mid] * (int64_t)sz, sstep = it->strides[1][mid] * (int64_t)sz;
    int64_t idx[MP_MAX_DIMS] = {0};
    for (int64_t o = 0; o < outer; o++) {
        int64_t doff = 0, soff = 0;
        for (int d = 0; d < mid; d++)
            doff += idx[d] * it->strides[0][d], soff += idx[d] * it->strides[1][d];
        char *dp = it->base[0] + doff * (int64_t)sz;
        const char *sp = it->base[1] + soff * (int64_t)sz;
        for (int64_t r = 0; r < rows; r++, dp += dstep, sp += sstep)
            mp_copy_bytes(dp, sp, bytes);
        for (int d = mid - 1; d >= 0 && ++idx[d] == it->shape[d]; d--)
            idx[d] = 0;
    }
    return 1;
}

mp_status mp_cpu_copy_kernel(const mp_iter *it, mp_dtype dst, mp_dtype src, mp_msg *msg)
{
    (void)msg;
    copy_ctx c = {dst, src, mp_cpu()};
    int64_t n = it->numel;
    if (dst == src && n > 0 && copy_short_rows(it, mp_dtype_size(dst)))
        return MP_OK;
    if (n >= 2 * MP_COPY_GRAIN && it->ndim == 1 && it->strides[0][0] == 1 &&
        it->strides[1][0] == 1) {
        flat_copy f = {c, it->base[0], it->base[1]};
        mp_parallel_for(n, MP_COPY_GRAIN, copy_range, &f);
        return MP_OK;
    }
    mp_iter_run(it, copy_run, &c);
    return MP_OK;
}

/* dst and src on one device: that device's copy kernel. */
static mp_status copy_same_device(mp_tensor *dst, mp_tensor *src)
{
    mp_tensor *ops[2] = {dst, src};
    mp_iter it;
    mp_iter_init(&it, ops, 2);
    if (dst->storage->device == MP_DEVICE_CPU)
        return mp_cpu_copy_kernel(&it, dst->dtype, src->dtype, NULL);
    const mp_backend *b = mp_backend_get(dst->storage->device);
    if (!b)
        return MP_ERR_NO_CUDA;
    mp_msg msg;
    mp_status st = b->copy(&it, dst->dtype, src->dtype, &msg);
    return st == MP_OK ? MP_OK : mp_backend_error(st, &msg);
}

static mp_status copy_bytes(mp_tensor *dst, mp_tensor *src)
{
    return mp_backend_copy_bytes(dst->storage->device, mp_tensor_data(dst),
                                 src->storage->device, mp_tensor_data(src),
                                 (size_t)mp_tensor_numel(dst) * mp_dtype_size(dst->dtype));
}

/* Between devices: the conversion and the strided walk happen on one side, the transfer is
 * one contiguous block of dst's dtype. */
static mp_status copy_across(mp_tensor *dst, mp_tensor *src)
{
    if (dst->dtype == src->dtype && mp_tensor_is_contiguous(dst) &&
        mp_tensor_is_contiguous(src))
        return copy_bytes(dst, src);
    mp_tensor *packed = NULL, *landing = NULL;
    mp_status st = MP_OK;
    if (src->dtype == dst->dtype && mp_tensor_is_contiguous(src)) {
        mp_tensor_incref(src);
        packed = src;
    } else {
        st = mp_tensor_cast(src, dst->dtype, &packed);   /* on src's device */
    }
    if (st == MP_OK && mp_tensor_is_contiguous(dst)) {
        st = copy_bytes(dst, packed);
    } else if (st == MP_OK &&
               (st = mp_tensor_empty(dst->shape, dst->ndim, dst->dtype, dst->storage->device,
                                     &landing)) == MP_OK &&
               (st = copy_bytes(landing, packed)) == MP_OK) {
        st = copy_same_device(dst, landing);
    }
    if (packed)
        mp_tensor_decref(packed);
    if (landing)
        mp_tensor_decref(landing);
    return st;
}

mp_status mp_tensor_copy_(mp_tensor *dst, mp_tensor *src)
{
    if (dst->ndim != src->ndim || memcmp(dst->shape, src->shape, sizeof(int64_t) *
                                         (size_t)dst->ndim) != 0) {
        char a[256], b[256];
        mp_format_shape(a, sizeof a, dst->shape, dst->ndim);
        mp_format_shape(b, sizeof b, src->shape, src->ndim);
        return mp_error(MP_ERR_SHAPE, "copy_: the shape of the source %s does not match the "
                        "destination's %s", b, a);
    }
    if (mp_tensor_numel(dst) == 0)
        return MP_OK;
    if (dst->storage->device != src->storage->device)
        return copy_across(dst, src);
    return copy_same_device(dst, src);
}

typedef struct {
    char pattern[8];   /* the value encoded once in the tensor's dtype */
    size_t size;
    int zero;          /* every byte of the pattern is 0 */
} fill_ctx;

/* Stores of a constant size (a memcpy call of a run-time size per element cost ~4 ns: 4 ms
 * to zero a 1M-element gradient; a fixed-size memcpy is one move, alignment-safe for
 * external buffers); memset when the run is dense and all zero. */
#define FILL_LOOP(type)                                                        \
    do {                                                                       \
        type v;                                                                \
        memcpy(&v, c->pattern, sizeof v);                                      \
        for (int64_t i = 0; i < n; i++)                                        \
            memcpy(ptrs[0] + i * strides[0] * (int64_t)sizeof v, &v, sizeof v); \
    } while (0)

static void fill_run(char **ptrs, const int64_t *strides, int64_t n, void *ctx)
{
    const fill_ctx *c = ctx;
    if (strides[0] == 1 && c->zero) {
        memset(ptrs[0], 0, (size_t)n * c->size);
        return;
    }
    switch (c->size) {
    case 8: FILL_LOOP(uint64_t); break;
    case 4: FILL_LOOP(uint32_t); break;
    case 2: FILL_LOOP(uint16_t); break;
    default: FILL_LOOP(uint8_t); break;
    }
}

mp_status mp_cpu_fill_kernel(const mp_iter *it, mp_dtype dt, const void *pattern, mp_msg *msg)
{
    (void)msg;
    fill_ctx ctx;
    ctx.size = mp_dtype_size(dt);
    memset(ctx.pattern, 0, sizeof ctx.pattern);
    memcpy(ctx.pattern, pattern, ctx.size);
    static const char zeros[sizeof ctx.pattern];
    ctx.zero = memcmp(ctx.pattern, zeros, sizeof zeros) == 0;
    mp_iter_run(it, fill_run, &ctx);
    return MP_OK;
}

mp_status mp_tensor_fill_(mp_tensor *t, mp_scalar value)
{
    char pattern[8] = {0};
    mp_store_scalar(t->dtype, pattern, value);
    mp_iter it;
    mp_iter_init(&it, &t, 1);
    if (t->storage->device == MP_DEVICE_CPU)
        return mp_cpu_fill_kernel(&it, t->dtype, pattern, NULL);
    const mp_backend *b = mp_backend_get(t->storage->device);
    if (!b)
        return MP_ERR_NO_CUDA;
    mp_msg msg;
    mp_status st = b->fill(&it, t->dtype, pattern, &msg);
    return st == MP_OK ? MP_OK : mp_backend_error(st, &msg);
}

mp_status mp_tensor_arange_(mp_tensor *t, mp_scalar start, mp_scalar step)
{
    if (!mp_tensor_is_contiguous(t))
        return mp_error(MP_ERR_VALUE, "arange needs a contiguous output");
    mp_status hs = mp_require_host("arange", t);
    if (hs != MP_OK)
        return hs;
    int64_t n = mp_tensor_numel(t);
    size_t sz = mp_dtype_size(t->dtype);
    char *p = mp_tensor_data(t);
    int ints = start.is_int && step.is_int;
    double f0 = start.is_int ? (double)start.i : start.f;
    double fs = step.is_int ? (double)step.i : step.f;
    for (int64_t i = 0; i < n; i++) {
        mp_scalar v = {f0 + (double)i * fs, start.i + i * step.i, ints};
        mp_store_scalar(t->dtype, p + (size_t)i * sz, v);
    }
    return MP_OK;
}

mp_status mp_tensor_cast(mp_tensor *src, mp_dtype dtype, mp_tensor **out)
{
    mp_status st = mp_tensor_empty(src->shape, src->ndim, dtype, src->storage->device, out);
    if (st != MP_OK)
        return st;
    st = mp_tensor_copy_(*out, src);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

mp_status mp_tensor_contiguous(mp_tensor *src, mp_tensor **out)
{
    if (mp_tensor_is_contiguous(src)) {
        mp_tensor_incref(src);
        *out = src;
        return MP_OK;
    }
    return mp_tensor_cast(src, src->dtype, out);
}

mp_scalar mp_tensor_get_item(const mp_tensor *t, int64_t flat_index)
{
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        off += (flat_index % t->shape[d]) * t->strides[d];
        flat_index /= t->shape[d];
    }
    const char *p = (const char *)mp_tensor_data(t) + off * (int64_t)mp_dtype_size(t->dtype);
    if (t->storage->device != MP_DEVICE_CPU) {
        char host[8] = {0};
        if (mp_backend_copy_bytes(MP_DEVICE_CPU, host, t->storage->device, p,
                                  mp_dtype_size(t->dtype)) != MP_OK)
            return (mp_scalar){0.0, 0, 0};   /* only in a forked child: the error stays set */
        return load_scalar(t->dtype, host);
    }
    return load_scalar(t->dtype, p);
}
