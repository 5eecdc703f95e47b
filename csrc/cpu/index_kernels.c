/* index_kernels.c - the index walk (see index_kernels.h). The outer dims are walked with an
 * odometer that keeps running offsets; along the innermost dim either no index operand moves
 * (a strided run of data elements: one memcpy when both runs are dense) or every element
 * computes its own data address. Arithmetic of ADD/MUL is done in fp32 for fp16/bf16 and
 * rounded once per element, exactly in int64 and uint8 (modulo 256), and as or/and for
 * bool. */
#include "index_kernels.h"

#include <string.h>

#include "../shared/mp_half.h"

static inline void copy_elem(char *dst, const char *src, size_t isz)
{
    switch (isz) {   /* fixed-size moves: alignment-safe, one instruction each */
    case 1: memcpy(dst, src, 1); break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    default: memcpy(dst, src, 8); break;
    }
}

static inline float load_f(mp_dtype dt, const char *p)
{
    if (dt == MP_DTYPE_FLOAT32) {
        float v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    mp_half h;
    memcpy(&h, p, sizeof h);
    if (dt == MP_DTYPE_FLOAT16)
        return mp_half_to_f32(h);
    mp_bf16 b;
    memcpy(&b, p, sizeof b);
    return mp_bf16_to_f32(b);
}

static inline void store_f(mp_dtype dt, char *p, float v)
{
    if (dt == MP_DTYPE_FLOAT32) {
        memcpy(p, &v, sizeof v);
    } else if (dt == MP_DTYPE_FLOAT16) {
        mp_half h = mp_f32_to_half(v);
        memcpy(p, &h, sizeof h);
    } else {
        mp_bf16 b = mp_f32_to_bf16(v);
        memcpy(p, &b, sizeof b);
    }
}

/* data (op)= other for one element */
static inline void combine(mp_index_mode mode, mp_dtype dt, char *d, const char *o,
                           double alpha)
{
    if (dt == MP_DTYPE_INT64) {
        int64_t a, b;
        memcpy(&a, d, sizeof a);
        memcpy(&b, o, sizeof b);
        /* unsigned arithmetic: wraps on overflow as torch's does, without undefined behaviour */
        uint64_t r = mode == MP_IDX_ADD ? (uint64_t)a + (uint64_t)(int64_t)alpha * (uint64_t)b
                                        : (uint64_t)a * (uint64_t)b;
        memcpy(d, &r, sizeof r);
    } else if (dt == MP_DTYPE_BOOL) {
        uint8_t a = (uint8_t)*d, b = (uint8_t)*o;
        *d = (char)(mode == MP_IDX_ADD ? (a || b) : (a && b));
    } else if (dt == MP_DTYPE_UINT8) {
        /* modulo 256 as torch; alpha is an integer here (the core refuses a float one) */
        uint8_t a = (uint8_t)*d, b = (uint8_t)*o;
        uint64_t r = mode == MP_IDX_ADD ? a + (uint64_t)(int64_t)alpha * b : (uint64_t)a * b;
        *d = (char)(uint8_t)r;
    } else {
        float a = load_f(dt, d), b = load_f(dt, o);
        if (mode == MP_IDX_ADD)
            a = alpha == 1.0 ? a + b : a + (float)alpha * b;
        else
            a *= b;
        store_f(dt, d, a);
    }
}

/* n elements: data at d (stride ds), other at o (stride os), strides in elements */
static void run(const mp_index_walk *w, mp_index_mode mode, char *d, int64_t ds, char *o,
                int64_t os, int64_t n)
{
    size_t isz = mp_dtype_size(w->dtype);
    int64_t db = ds * (int64_t)isz, ob = os * (int64_t)isz;
    if (mode == MP_IDX_GATHER || mode == MP_IDX_PUT) {
        char *dst = mode == MP_IDX_GATHER ? o : d;
        const char *src = mode == MP_IDX_GATHER ? d : o;
        int64_t dstb = mode == MP_IDX_GATHER ? ob : db, srcb = mode == MP_IDX_GATHER ? db : ob;
        if (dstb == (int64_t)isz && srcb == (int64_t)isz) {
            memcpy(dst, src, (size_t)n * isz);
            return;
        }
        for (int64_t i = 0; i < n; i++, dst += dstb, src += srcb)
            copy_elem(dst, src, isz);
        return;
    }
    for (int64_t i = 0; i < n; i++, d += db, o += ob)
        combine(mode, w->dtype, d, o, w->alpha);
}

static inline int64_t wrapped(const mp_index_walk *w, int k, int64_t off)
{
    int64_t v = w->idx[k][off];
    return (v < 0 ? v + w->size[k] : v) * w->mul[k];
}

/* One row along the innermost dim, starting at the running offsets. */
static void row(const mp_index_walk *w, mp_index_mode mode, int vary, int64_t doff,
                int64_t ooff, const int64_t *ioff)
{
    int in = w->ndim - 1;
    size_t isz = mp_dtype_size(w->dtype);
    if (!vary) {
        for (int k = 0; k < w->n_idx; k++)
            doff += wrapped(w, k, ioff[k]);
        run(w, mode, w->data + doff * (int64_t)isz, w->dstr[in], w->other + ooff *
            (int64_t)isz, w->ostr[in], w->shape[in]);
        return;
    }
    for (int64_t j = 0; j < w->shape[in]; j++) {
        int64_t at = doff + j * w->dstr[in];
        for (int k = 0; k < w->n_idx; k++)
            at += wrapped(w, k, ioff[k] + j * w->istr[k][in]);
        run(w, mode, w->data + at * (int64_t)isz, 0, w->other + (ooff + j * w->ostr[in]) *
            (int64_t)isz, 0, 1);
    }
}

void mp_index_run(const mp_index_walk *w, mp_index_mode mode)
{
    int in = w->ndim - 1, vary = 0;
    int64_t rows = 1, pos[MP_INDEX_MAX] = {0}, ioff[MP_INDEX_MAX] = {0}, doff = 0, ooff = 0;
    for (int d = 0; d < w->ndim; d++)
        rows *= w->shape[d];
    if (rows == 0)
        return;
    rows /= w->shape[in];
    for (int k = 0; k < w->n_idx; k++)
        vary |= w->istr[k][in] != 0;
    for (int64_t r = 0; r < rows; r++) {
        row(w, mode, vary, doff, ooff, ioff);
        for (int d = in - 1; d >= 0; d--) {
            doff += w->dstr[d];
            ooff += w->ostr[d];
            for (int k = 0; k < w->n_idx; k++)
                ioff[k] += w->istr[k][d];
            if (++pos[d] < w->shape[d])
                break;
            doff -= w->dstr[d] * w->shape[d];
            ooff -= w->ostr[d] * w->shape[d];
            for (int k = 0; k < w->n_idx; k++)
                ioff[k] -= w->istr[k][d] * w->shape[d];
            pos[d] = 0;
        }
    }
}
