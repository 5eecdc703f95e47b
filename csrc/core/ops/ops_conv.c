/* ops_conv.c - conv1d / conv2d (ops_cnn.h): torch's argument checks and messages, the output
 * shape (padding "same" split as torch: the odd unit after), the ConvolutionBackward0 node.
 * The arithmetic is conv_run.c; the geometry it needs travels in the node's ctx. Unbatched
 * inputs are batches of one and a 1-d conv is a 2-d one of height 1: only the strides the
 * kernels read change, so no view is made and the node's inputs are the caller's tensors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../amp/autocast.h"
#include "../../cpu/im2col.h"
#include "../backend.h"
#include "conv_core.h"
#include "../copy.h"
#include "ops_cnn.h"
#include "../rows.h"

static const char *tensor_type_name(mp_dtype dt)
{
    switch (dt) {
    case MP_DTYPE_FLOAT16: return "torch.HalfTensor";
    case MP_DTYPE_BFLOAT16: return "torch.BFloat16Tensor";
    case MP_DTYPE_INT64: return "torch.LongTensor";
    case MP_DTYPE_BOOL: return "torch.BoolTensor";
    case MP_DTYPE_UINT8: return "torch.ByteTensor";
    default: return "torch.FloatTensor";
    }
}

static const char *scalar_type_name(mp_dtype dt)
{
    switch (dt) {
    case MP_DTYPE_FLOAT16: return "c10::Half";
    case MP_DTYPE_BFLOAT16: return "c10::BFloat16";
    case MP_DTYPE_INT64: return "long int";
    case MP_DTYPE_BOOL: return "bool";
    case MP_DTYPE_UINT8: return "unsigned char";
    default: return "float";
    }
}

static mp_status check_ranks(mp_tensor *x, mp_tensor *w, int nsp, const int64_t *stride,
                             const char *op)
{
    char s[256];
    if (x->ndim != nsp + 1 && x->ndim != nsp + 2) {
        mp_format_shape(s, sizeof s, x->shape, x->ndim);
        return mp_error(MP_ERR_RUNTIME, "Expected %dD (unbatched) or %dD (batched) input to "
                        "%s, but got input of size: %s", nsp + 1, nsp + 2, op, s);
    }
    if (w->ndim < 3)
        return mp_error(MP_ERR_RUNTIME, "weight should have at least three dimensions");
    if (w->ndim != nsp + 2) {
        mp_format_shape(s, sizeof s, stride, nsp);
        return mp_error(MP_ERR_RUNTIME, "expected stride to be a single integer value or a "
                        "list of %d values to match the convolution dimensions, but got "
                        "stride=%s", w->ndim - 2, s);
    }
    if (!mp_dtype_is_float(x->dtype))
        return mp_error(MP_ERR_TYPE, "\"slow_conv2d_cpu\" not implemented for '%s'",
                        mp_dtype_torch_name(x->dtype));
    return MP_OK;
}

static mp_status check_dtypes(mp_tensor *x, mp_tensor *w, mp_tensor *bias)
{
    if (x->dtype != w->dtype)
        return mp_error(MP_ERR_RUNTIME, "Input type (%s) and weight type (%s) should be the "
                        "same", tensor_type_name(x->dtype), tensor_type_name(w->dtype));
    if (bias && bias->dtype != x->dtype)
        return mp_error(MP_ERR_RUNTIME, "Input type (%s) and bias type (%s) should be the "
                        "same", scalar_type_name(x->dtype), scalar_type_name(bias->dtype));
    return MP_OK;
}

static mp_status check_values(int nsp, const int64_t *stride, const int64_t *padding,
                              int pad_same, const int64_t *dilation, int64_t groups)
{
    for (int d = 0; d < nsp; d++) {
        if (stride[d] <= 0)
            return mp_error(MP_ERR_RUNTIME, "non-positive stride is not supported");
        if (!pad_same && padding[d] < 0)
            return mp_error(MP_ERR_RUNTIME, "negative padding is not supported");
        if (dilation[d] <= 0)
            return mp_error(MP_ERR_RUNTIME, "non-positive dilation is not supported");
        if (pad_same && stride[d] != 1)
            return mp_error(MP_ERR_RUNTIME, "padding='same' is not supported for strided "
                            "convolutions");
    }
    if (groups <= 0)
        return mp_error(MP_ERR_RUNTIME, "non-positive groups is not supported");
    return MP_OK;
}

/* weight, bias and input channels against each other; cin: the input's channel count,
 * bshape: the input's shape with a batch dim. */
static mp_status check_shapes(mp_tensor *w, mp_tensor *bias, int64_t groups, int64_t cin,
                              const int64_t *bshape, int bnd)
{
    char sw[256], sx[256], sb[256];
    mp_format_shape(sw, sizeof sw, w->shape, w->ndim);
    int64_t o = w->shape[0];
    if (o < groups)
        return mp_error(MP_ERR_RUNTIME, "Given groups=%lld, expected weight to be at least "
                        "%lld at dimension 0, but got weight of size %s instead",
                        (long long)groups, (long long)groups, sw);
    if (o % groups)
        return mp_error(MP_ERR_RUNTIME, "Given groups=%lld, expected weight to be divisible by "
                        "%lld at dimension 0, but got weight of size [%s] instead",
                        (long long)groups, (long long)groups, sw);
    if (cin != w->shape[1] * groups) {
        mp_format_shape(sx, sizeof sx, bshape, bnd);
        return mp_error(MP_ERR_RUNTIME, "Given groups=%lld, weight of size %s, expected input%s "
                        "to have %lld channels, but got %lld channels instead",
                        (long long)groups, sw, sx, (long long)(w->shape[1] * groups),
                        (long long)cin);
    }
    for (int d = 2; d < w->ndim; d++)
        if (w->shape[d] < 1)
            return mp_error(MP_ERR_RUNTIME, "Given weight of size %s, expected every kernel "
                            "size to be at least 1", sw);
    if (bias && (bias->ndim != 1 || bias->shape[0] != o)) {
        mp_format_shape(sb, sizeof sb, bias->shape, bias->ndim);
        return mp_error(MP_ERR_RUNTIME, "Given weight of size %s, expected bias to be "
                        "1-dimensional with %lld elements, but got bias of size %s instead",
                        sw, (long long)o, sb);
    }
    return MP_OK;
}

/* Input sizes and kernel taps as (height, width) pairs; a 1-d op has height 1. */
static void spatial_pairs(mp_tensor *x, mp_tensor *w, int nsp, int64_t *in, int64_t *k)
{
    in[0] = nsp == 2 ? x->shape[x->ndim - 2] : 1;
    in[1] = x->shape[x->ndim - 1];
    k[0] = nsp == 2 ? w->shape[2] : 1;
    k[1] = w->shape[w->ndim - 1];
}

static mp_status check_padded(const mp_conv_geom *g, int nsp, mp_tensor *x)
{
    int64_t in[2] = {g->h, g->w}, k[2] = {g->kh, g->kw};
    int ok = 1;
    for (int d = 2 - nsp; d < 2; d++)
        ok &= in[d] + g->pad_lo[d] + g->pad_hi[d] >= g->dil[d] * (k[d] - 1) + 1;
    if (!ok) {
        int64_t p0 = in[0] + g->pad_lo[0] + g->pad_hi[0], p1 = in[1] + g->pad_lo[1] + g->pad_hi[1];
        int64_t e0 = g->dil[0] * (k[0] - 1) + 1, e1 = g->dil[1] * (k[1] - 1) + 1;
        char a[96], b[96];
        if (nsp == 2) {
            snprintf(a, sizeof a, "%lld x %lld", (long long)p0, (long long)p1);
            snprintf(b, sizeof b, "%lld x %lld", (long long)e0, (long long)e1);
        } else {
            snprintf(a, sizeof a, "%lld", (long long)p1);
            snprintf(b, sizeof b, "%lld", (long long)e1);
        }
        return mp_error(MP_ERR_RUNTIME, "Calculated padded input size per channel: (%s). Kernel "
                        "size: (%s). Kernel size can't be greater than actual input size", a, b);
    }
    for (int d = 1; d >= 2 - nsp && g->mode != MP_PAD_ZEROS; d--) {
        int64_t lo = g->pad_lo[d], hi = g->pad_hi[d];
        char s[256];
        if (g->mode == MP_PAD_REFLECT && (lo >= in[d] || hi >= in[d])) {
            mp_format_shape(s, sizeof s, x->shape, x->ndim);
            return mp_error(MP_ERR_RUNTIME, "Argument #4: Padding size should be less than the "
                            "corresponding input dimension, but got: padding (%lld, %lld) at "
                            "dimension %d of input %s", (long long)lo, (long long)hi,
                            x->ndim - 2 + d, s);
        }
        if (g->mode == MP_PAD_CIRCULAR && (lo > in[d] || hi > in[d]))
            return mp_error(MP_ERR_RUNTIME, "Padding value causes wrapping around more than "
                            "once.");
    }
    return MP_OK;
}

/* Fills everything but dtype/mode from the checked arguments. */
static void make_geom(mp_conv_geom *g, mp_tensor *x, mp_tensor *w, int nsp,
                      const int64_t *stride, const int64_t *padding, int pad_same,
                      const int64_t *dilation, int64_t groups)
{
    int batched = x->ndim == nsp + 2, cd = batched ? 1 : 0;
    int64_t in[2], k[2];
    spatial_pairs(x, w, nsp, in, k);
    g->n = batched ? x->shape[0] : 1;
    g->c = x->shape[cd];
    g->h = in[0], g->w = in[1];
    g->sn = batched ? x->strides[0] : 0;
    g->sc = x->strides[cd];
    g->sh = nsp == 2 ? x->strides[cd + 1] : 0;
    g->sw = x->strides[x->ndim - 1];
    g->o = w->shape[0], g->groups = groups, g->kh = k[0], g->kw = k[1];
    for (int d = 0; d < 2; d++) {
        int s = d - (2 - nsp);               /* index into the caller's nsp-long lists */
        g->stride[d] = s >= 0 ? stride[s] : 1;
        g->dil[d] = s >= 0 ? dilation[s] : 1;
        int64_t total = g->dil[d] * (k[d] - 1);
        g->pad_lo[d] = s < 0 ? 0 : pad_same ? total / 2 : padding[s];
        g->pad_hi[d] = s < 0 ? 0 : pad_same ? total - total / 2 : padding[s];
    }
}

static void output_shape(const mp_conv_geom *g, mp_tensor *x, int nsp, int64_t *shape, int *nd)
{
    int n = 0;
    if (x->ndim == nsp + 2)
        shape[n++] = g->n;
    shape[n++] = g->o;
    if (nsp == 2)
        shape[n++] = g->oh;
    shape[n++] = g->ow;
    *nd = n;
}

static mp_status conv_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    const mp_conv_geom *g = n->ctx;
    mp_tensor *x = mp_node_saved(n, 0), *w = mp_node_saved(n, 1), *dy = NULL;
    if (!x || !w)
        return MP_ERR_RUNTIME;
    mp_status st = mp_tensor_contiguous(gout[0], &dy);
    int nd;
    const int64_t *shape;
    for (int i = 0; i < 3 && st == MP_OK; i++) {
        if (!n->next[i].node)
            continue;
        shape = mp_node_in_shape(n, i, &nd);
        st = mp_tensor_empty(shape, nd, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &gin[i]);
    }
    if (st == MP_OK)
        st = mp_conv_backward(g, mp_tensor_data(x), mp_tensor_data(w), mp_tensor_data(dy),
                              dy->dtype, gin[0] ? mp_tensor_data(gin[0]) : NULL,
                              gin[1] ? mp_tensor_data(gin[1]) : NULL,
                              gin[2] ? mp_tensor_data(gin[2]) : NULL);
    mp_tensor_decref(dy);
    return st;
}

static mp_status record(mp_tensor *x, mp_tensor *w, mp_tensor *wc, mp_tensor *bias,
                        const mp_conv_geom *g, mp_tensor **out)
{
    mp_tensor *ins[3] = {x, w, bias};
    mp_node *node = NULL;
    mp_status st = mp_autograd_record("ConvolutionBackward0", conv_backward, ins, 3, out, 1,
                                      &node);
    if (st != MP_OK || !node)
        return st;
    mp_conv_geom *copy = malloc(sizeof *copy);
    if (!copy)
        return mp_error(MP_ERR_NOMEM, "out of memory recording a convolution");
    *copy = *g;
    node->ctx = copy;
    node->release_ctx = free;
    st = mp_node_save(node, 0, x);
    return st == MP_OK ? mp_node_save(node, 1, wc) : st;
}

static mp_status conv_run(mp_tensor *x, mp_tensor *w, mp_tensor *bias, int nsp,
                          const mp_conv_geom *g, mp_tensor **out)
{
    int64_t shape[4];
    int nd;
    output_shape(g, x, nsp, shape, &nd);
    mp_tensor *wc = NULL, *bf = NULL;
    mp_status st = mp_tensor_contiguous(w, &wc);
    if (st == MP_OK && bias)
        st = mp_tensor_cast(bias, MP_DTYPE_FLOAT32, &bf);
    if (st == MP_OK)
        st = mp_tensor_empty(shape, nd, g->dt, MP_DEVICE_CPU, out);
    if (st == MP_OK && mp_tensor_numel(*out) > 0)
        st = mp_conv_forward(g, mp_tensor_data(x), mp_tensor_data(wc),
                             bf ? mp_tensor_data(bf) : NULL, mp_tensor_data(*out));
    if (st == MP_OK)
        st = record(x, w, wc, bias, g, out);
    mp_tensor_decref(wc);
    mp_tensor_decref(bf);
    return st;
}

mp_status mp_op_conv(mp_tensor *x, mp_tensor *w, mp_tensor *bias, int nsp,
                     const int64_t *stride, const int64_t *padding, int pad_same,
                     const int64_t *dilation, int64_t groups, int mode, mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(nsp == 1 ? MP_OP_CONV1D : MP_OP_CONV2D,
                      mp_op_conv(ac_[0], ac_[1], ac_[2], nsp, stride, padding, pad_same,
                                 dilation, groups, mode, out),
                      x, w, bias);
    MP_HOST_ONLY("conv", x, w, bias);
    const char *op = nsp == 1 ? "conv1d" : "conv2d";
    *out = NULL;
    mp_status st = check_ranks(x, w, nsp, stride, op);
    if (st == MP_OK)
        st = check_dtypes(x, w, bias);
    if (st == MP_OK)
        st = check_values(nsp, stride, padding, pad_same, dilation, groups);
    int64_t bshape[MP_MAX_DIMS];
    int batched = x->ndim == nsp + 2;
    if (st == MP_OK) {
        bshape[0] = 1;
        memcpy(bshape + !batched, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        st = check_shapes(w, bias, groups, x->shape[batched], bshape, nsp + 2);
    }
    mp_conv_geom g;
    if (st == MP_OK) {
        make_geom(&g, x, w, nsp, stride, padding, pad_same, dilation, groups);
        g.mode = mode;
        g.dt = x->dtype;
        st = check_padded(&g, nsp, x);
    }
    if (st != MP_OK)
        return st;
    g.oh = (g.h + g.pad_lo[0] + g.pad_hi[0] - g.dil[0] * (g.kh - 1) - 1) / g.stride[0] + 1;
    g.ow = (g.w + g.pad_lo[1] + g.pad_hi[1] - g.dil[1] * (g.kw - 1) - 1) / g.stride[1] + 1;
    st = conv_run(x, w, bias, nsp, &g, out);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
