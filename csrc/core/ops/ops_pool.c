/* ops_pool.c - max_pool1d/2d, avg_pool1d/2d, adaptive_avg_pool1d/2d (ops_cnn.h): torch's
 * checks, output sizes (ceil_mode included) and nodes. The input is made contiguous and seen
 * as planes (every dim but the last nsp), each converted to fp32, pooled by csrc/cpu/pool.c
 * and stored in the input dtype; planes run on parallel threads when there are many. A 1-d
 * pool is a 2-d one of height 1. Gradients are fp32 planes; max pooling saves its indices. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cpu/parallel.h"
#include "../backend.h"
#include "../../cpu/pool.h"
#include "../copy.h"
#include "ops_cnn.h"
#include "../rows.h"

#define POOL_GRAIN_ELEMS 32768

typedef enum { POOL_MAX, POOL_AVG, POOL_ADAPTIVE } pool_kind;

typedef struct {
    pool_kind kind;
    mp_pool_desc d;
    int64_t planes;
} pool_geom;

/* ---- the plane loops ---- */

typedef struct {
    const pool_geom *g;
    mp_dtype dt;                 /* forward: x and y; backward: the incoming gradient */
    const char *in;
    char *out;                   /* forward: y (dt); backward: dx (fp32) */
    int64_t *idx;
    int failed;
} plane_job;

static void fwd_planes(void *vctx, int64_t p0, int64_t p1)
{
    plane_job *j = vctx;
    const mp_pool_desc *d = &j->g->d;
    int64_t hw = d->h * d->w, ohw = d->oh * d->ow;
    int conv = j->dt != MP_DTYPE_FLOAT32;
    float *buf = conv ? malloc(sizeof(float) * (size_t)(hw + ohw + 1)) : NULL;
    if (conv && !buf) {
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t p = p0; p < p1; p++) {
        const float *x = mp_row_load(j->dt, j->in, p, hw, buf);
        float *y = conv ? buf + hw : (float *)j->out + p * ohw;
        if (j->g->kind == POOL_MAX)
            mp_max_pool_plane(d, x, y, j->idx + p * ohw);
        else if (j->g->kind == POOL_AVG)
            mp_avg_pool_plane(d, x, y);
        else
            mp_adaptive_avg_plane(d, x, y);
        if (conv)
            mp_row_store(j->dt, j->out, p, ohw, y);
    }
    free(buf);
}

static void bwd_planes(void *vctx, int64_t p0, int64_t p1)
{
    plane_job *j = vctx;
    const mp_pool_desc *d = &j->g->d;
    int64_t hw = d->h * d->w, ohw = d->oh * d->ow;
    int conv = j->dt != MP_DTYPE_FLOAT32;
    float *buf = conv ? malloc(sizeof(float) * (size_t)(ohw + 1)) : NULL;
    if (conv && !buf) {
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t p = p0; p < p1; p++) {
        const float *gy = mp_row_load(j->dt, j->in, p, ohw, buf);
        float *gx = (float *)j->out + p * hw;
        memset(gx, 0, sizeof(float) * (size_t)hw);
        if (j->g->kind == POOL_MAX)
            mp_max_pool_plane_backward(d, gy, j->idx + p * ohw, gx);
        else if (j->g->kind == POOL_AVG)
            mp_avg_pool_plane_backward(d, gy, gx);
        else
            mp_adaptive_avg_plane_backward(d, gy, gx);
    }
    free(buf);
}

static mp_status run_planes(plane_job *j, mp_range_fn fn)
{
    const mp_pool_desc *d = &j->g->d;
    int64_t per = d->h * d->w + d->oh * d->ow;
    mp_parallel_for(j->g->planes, per > 0 ? POOL_GRAIN_ELEMS / per + 1 : 1, fn, j);
    return j->failed ? mp_error(MP_ERR_NOMEM, "pooling: out of memory for a plane buffer")
                     : MP_OK;
}

/* ---- autograd ---- */

static mp_status pool_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    const pool_geom *g = n->ctx;
    mp_tensor *idx = g->kind == POOL_MAX ? mp_node_saved(n, 0) : NULL, *gc = NULL;
    if (g->kind == POOL_MAX && !idx)
        return MP_ERR_RUNTIME;
    int nd;
    const int64_t *shape = mp_node_in_shape(n, 0, &nd);
    mp_status st = mp_tensor_contiguous(gout[0], &gc);
    if (st == MP_OK)
        st = mp_tensor_empty(shape, nd, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &gin[0]);
    if (st == MP_OK) {
        plane_job j = {g, gc->dtype, mp_tensor_data(gc), mp_tensor_data(gin[0]),
                       idx ? mp_tensor_data(idx) : NULL, 0};
        st = run_planes(&j, bwd_planes);
    }
    mp_tensor_decref(gc);
    return st;
}

static const char *node_name(pool_kind k)
{
    return k == POOL_MAX ? "MaxPool2DWithIndicesBackward0"
           : k == POOL_AVG ? "AvgPool2DBackward0" : "AdaptiveAvgPool2DBackward0";
}

/* out (and idx for max pooling) of x's leading dims plus (oh, ow) / (ow); records the node. */
static mp_status pool_run(mp_tensor *x, int nsp, const pool_geom *g, mp_tensor **out,
                          mp_tensor **indices)
{
    int64_t shape[MP_MAX_DIMS];
    int nd = x->ndim;
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)nd);
    if (nsp == 2)
        shape[nd - 2] = g->d.oh;
    shape[nd - 1] = g->d.ow;
    mp_tensor *xc = NULL, *idx = NULL;
    mp_status st = mp_tensor_contiguous(x, &xc);
    if (st == MP_OK)
        st = mp_tensor_empty(shape, nd, x->dtype, MP_DEVICE_CPU, out);
    if (st == MP_OK && g->kind == POOL_MAX)
        st = mp_tensor_empty(shape, nd, MP_DTYPE_INT64, MP_DEVICE_CPU, &idx);
    if (st == MP_OK) {
        plane_job j = {g, x->dtype, mp_tensor_data(xc), mp_tensor_data(*out),
                       idx ? mp_tensor_data(idx) : NULL, 0};
        st = run_planes(&j, fwd_planes);
    }
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record(node_name(g->kind), pool_backward, &x, 1, out, 1, &node);
    pool_geom *copy = node ? malloc(sizeof *copy) : NULL;
    if (node && !copy)
        st = mp_error(MP_ERR_NOMEM, "out of memory recording a pooling node");
    if (copy) {
        *copy = *g;
        node->ctx = copy;
        node->release_ctx = free;
        if (idx)
            st = mp_node_save(node, 0, idx);
    }
    mp_tensor_decref(xc);
    if (st == MP_OK && indices)
        *indices = idx;
    else
        mp_tensor_decref(idx);
    return st;
}

/* ---- checks ---- */

/* Rank and empty-dim checks of torch's max/avg pooling (adaptive: see below). */
static mp_status check_input(mp_tensor *x, int nsp, const char *op)
{
    char s[256];
    mp_format_shape(s, sizeof s, x->shape, x->ndim);
    int rank_ok = x->ndim == nsp + 1 || x->ndim == nsp + 2, empty = 0;
    for (int d = x->ndim == nsp + 2; rank_ok && d < x->ndim; d++)
        empty |= x->shape[d] == 0;
    if (nsp == 2 && !rank_ok)
        return mp_error(MP_ERR_RUNTIME, "non-empty 3D or 4D (batch mode) tensor expected for "
                        "input");
    if (nsp == 2 && empty)
        return mp_error(MP_ERR_RUNTIME, "Expected 3D or 4D (batch mode) tensor with optional 0 "
                        "dim batch size for input, but got:%s", s);
    if (!rank_ok || empty)
        return mp_error(MP_ERR_RUNTIME, "%s: Expected 2D or 3D (batch mode) tensor with optional "
                        "0 dim batch size for input, but got:%s", op, s);
    if (!mp_dtype_is_float(x->dtype))
        return mp_error(MP_ERR_TYPE, "\"%s\" not implemented for '%s'", op,
                        mp_dtype_torch_name(x->dtype));
    return MP_OK;
}

static mp_status check_window(const mp_pool_desc *d)
{
    if (d->sh == 0 || d->sw == 0)
        return mp_error(MP_ERR_RUNTIME, "stride should not be zero");
    if (d->sh < 0 || d->sw < 0)
        return mp_error(MP_ERR_RUNTIME, "stride should be greater than zero, but got dH: %lld "
                        "dW: %lld", (long long)d->sh, (long long)d->sw);
    if (d->kh <= 0 || d->kw <= 0)
        return mp_error(MP_ERR_RUNTIME, "kernel size should be greater than zero, but got kH: "
                        "%lld kW: %lld", (long long)d->kh, (long long)d->kw);
    if (d->dh <= 0 || d->dw <= 0)
        return mp_error(MP_ERR_RUNTIME, "dilation should be greater than zero, but got "
                        "dilationH: %lld dilationW: %lld", (long long)d->dh, (long long)d->dw);
    int64_t pads[2] = {d->ph, d->pw}, ks[2] = {d->kh, d->kw}, ds[2] = {d->dh, d->dw};
    for (int i = 0; i < 2; i++) {
        if (pads[i] < 0)
            return mp_error(MP_ERR_RUNTIME, "pad must be non-negative, but got pad: %lld",
                            (long long)pads[i]);
        if (pads[i] > ((ks[i] - 1) * ds[i] + 1) / 2)
            return mp_error(MP_ERR_RUNTIME, "pad should be at most half of effective kernel "
                            "size, but got pad=%lld, kernel_size=%lld and dilation=%lld",
                            (long long)pads[i], (long long)ks[i], (long long)ds[i]);
    }
    return MP_OK;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int64_t out_size(int64_t in, int64_t k, int64_t pad, int64_t s, int64_t dil, int ceil)
{
    int64_t o = floor_div(in + 2 * pad - dil * (k - 1) - 1 + (ceil ? s - 1 : 0), s) + 1;
    if (ceil && (o - 1) * s >= in + pad)
        o--;
    return o;
}

/* Fills d (2-d view of an nsp-d pool) and the output size; errors as torch. */
static mp_status window_geom(mp_tensor *x, int nsp, const int64_t *k, const int64_t *s,
                             const int64_t *p, const int64_t *dil, int ceil, pool_geom *g)
{
    mp_pool_desc *d = &g->d;
    int b = nsp == 2;             /* index of the width entry in the caller's lists */
    d->h = nsp == 2 ? x->shape[x->ndim - 2] : 1, d->w = x->shape[x->ndim - 1];
    d->kh = b ? k[0] : 1, d->kw = k[b], d->sh = b ? s[0] : 1, d->sw = s[b];
    d->ph = b ? p[0] : 0, d->pw = p[b], d->dh = b ? dil[0] : 1, d->dw = dil[b];
    mp_status st = check_window(d);
    if (st != MP_OK)
        return st;
    d->oh = out_size(d->h, d->kh, d->ph, d->sh, d->dh, ceil);
    d->ow = out_size(d->w, d->kw, d->pw, d->sw, d->dw, ceil);
    int64_t c = x->shape[x->ndim - nsp - 1];
    if (d->oh < 1 || d->ow < 1)
        return mp_error(MP_ERR_RUNTIME, "Given input size: (%lldx%lldx%lld). Calculated output "
                        "size: (%lldx%lldx%lld). Output size is too small", (long long)c,
                        (long long)d->h, (long long)d->w, (long long)c, (long long)d->oh,
                        (long long)d->ow);
    g->planes = d->h * d->w > 0 ? mp_tensor_numel(x) / (d->h * d->w) : 0;
    return MP_OK;
}

mp_status mp_op_max_pool(mp_tensor *x, int nsp, const int64_t *kernel, const int64_t *stride,
                         const int64_t *padding, const int64_t *dilation, int ceil_mode,
                         mp_tensor **out, mp_tensor **indices)
{
    MP_HOST_ONLY("max_pool", x);
    *out = NULL;
    if (indices)
        *indices = NULL;
    pool_geom g = {POOL_MAX, {0}, 0};
    mp_status st = check_input(x, nsp, nsp == 1 ? "max_pool1d" : "max_pool2d");
    if (st == MP_OK)
        st = window_geom(x, nsp, kernel, stride, padding, dilation, ceil_mode, &g);
    if (st == MP_OK)
        st = pool_run(x, nsp, &g, out, indices);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

mp_status mp_op_avg_pool(mp_tensor *x, int nsp, const int64_t *kernel, const int64_t *stride,
                         const int64_t *padding, int ceil_mode, int count_include_pad,
                         int64_t divisor, mp_tensor **out)
{
    MP_HOST_ONLY("avg_pool", x);
    *out = NULL;
    const int64_t ones[2] = {1, 1};
    pool_geom g = {POOL_AVG, {0}, 0};
    mp_status st = MP_OK;
    if (nsp == 1 && x->ndim != 2 && x->ndim != 3)
        st = mp_error(MP_ERR_RUNTIME, "Expected 2 to 3 dimensions, but got %d-dimensional "
                      "tensor for argument #1 'self' (while checking arguments for avg_pool1d)",
                      x->ndim);
    if (st == MP_OK)
        st = check_input(x, nsp, nsp == 1 ? "avg_pool1d" : "avg_pool2d");
    if (st == MP_OK)
        st = window_geom(x, nsp, kernel, stride, padding, ones, ceil_mode, &g);
    g.d.count_include_pad = count_include_pad;
    g.d.divisor = divisor;
    if (st == MP_OK)
        st = pool_run(x, nsp, &g, out, NULL);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

static mp_status check_adaptive(mp_tensor *x, int nsp, const int64_t *osize)
{
    char s[256];
    mp_format_shape(s, sizeof s, x->shape, x->ndim);
    if (x->ndim != nsp + 1 && x->ndim != nsp + 2) {
        if (nsp == 2)
            return mp_error(MP_ERR_RUNTIME, "adaptive_avg_pool2d(): Expected 3D or 4D tensor, "
                            "but got %s", s);
        return mp_error(MP_ERR_RUNTIME, "Expected 2 to 3 dimensions, but got %d-dimensional "
                        "tensor for argument #1 'self' (while checking arguments for "
                        "adaptive_avg_pool1d)", x->ndim);
    }
    for (int d = 1; d < x->ndim; d++)
        if (x->shape[d] == 0)
            return mp_error(MP_ERR_RUNTIME, "adaptive_avg_pool%dd(): Expected input to have "
                            "non-zero size for non-batch dimensions, but input has sizes %s "
                            "with dimension %d being empty", nsp, s, d);
    for (int i = 0; i < nsp; i++)
        if (osize[i] < 0 && osize[i] != MP_POOL_KEEP) {
            char o[64];
            if (nsp == 2)
                snprintf(o, sizeof o, "%lld, %lld", (long long)osize[0], (long long)osize[1]);
            else
                snprintf(o, sizeof o, "%lld", (long long)osize[0]);
            return mp_error(MP_ERR_RUNTIME, "adaptive_avg_pool%dd: elements of output_size "
                            "must be greater than or equal to 0 but received {%s}", nsp, o);
        }
    if (!mp_dtype_is_float(x->dtype))
        return mp_error(MP_ERR_TYPE, "\"adaptive_avg_pool%dd\" not implemented for '%s'", nsp,
                        mp_dtype_torch_name(x->dtype));
    return MP_OK;
}

mp_status mp_op_adaptive_avg_pool(mp_tensor *x, int nsp, const int64_t *output_size,
                                  mp_tensor **out)
{
    MP_HOST_ONLY("adaptive_avg_pool", x);
    *out = NULL;
    mp_status st = check_adaptive(x, nsp, output_size);
    if (st != MP_OK)
        return st;
    pool_geom g = {POOL_ADAPTIVE, {0}, 0};
    g.d.h = nsp == 2 ? x->shape[x->ndim - 2] : 1, g.d.w = x->shape[x->ndim - 1];
    g.d.oh = nsp == 2 ? (output_size[0] == MP_POOL_KEEP ? g.d.h : output_size[0]) : 1;
    g.d.ow = output_size[nsp - 1] == MP_POOL_KEEP ? g.d.w : output_size[nsp - 1];
    g.planes = mp_tensor_numel(x) / (g.d.h * g.d.w);
    st = pool_run(x, nsp, &g, out, NULL);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
