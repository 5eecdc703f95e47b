/* ops_view.c - autograd for views and dtype casts. A view's backward maps the gradient back
 * onto the input's shape: reshape it, permute it back, sum expanded dims, or scatter it into
 * zeros at the sliced / selected positions. A cast's backward is the identity: the engine
 * converts every gradient to its input's dtype. */
#include <string.h>

#include "../copy.h"
#include "../backend.h"
#include "../elementwise.h"
#include "ops.h"
#include "../view.h"

static const char *const view_names[] = {"ViewBackward0", "PermuteBackward0",
                                         "ExpandBackward0", "SliceBackward0",
                                         "SelectBackward0", "UnsqueezeBackward0",
                                         "SqueezeBackward0"};

/* zeros of the input's shape in g's dtype on g's device, with g copied into the region the view covered */
static mp_status scatter_back(mp_node *n, mp_tensor *g, mp_tensor **out)
{
    int nd;
    const int64_t *shape = mp_node_in_shape(n, 0, &nd);
    mp_tensor *z, *region = NULL;
    mp_status st = mp_tensor_full_on(shape, nd, g->dtype, 0.0, g->storage->device, &z);
    if (st != MP_OK)
        return st;
    if (n->iargs[0] == MP_VIEWOP_SLICE)
        st = mp_view_slice(z, n->iargs[1], n->iargs[2], n->iargs[3], n->iargs[4], &region);
    else
        st = mp_view_select(z, n->iargs[1], n->iargs[2], &region);
    if (st == MP_OK)
        st = mp_tensor_copy_(region, g);
    mp_tensor_decref(region);
    if (st != MP_OK) {
        mp_tensor_decref(z);
        return st;
    }
    *out = z;
    return MP_OK;
}

static mp_status view_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *g = gout[0];
    int nd;
    const int64_t *shape = mp_node_in_shape(n, 0, &nd);
    switch ((mp_view_op)n->iargs[0]) {
    case MP_VIEWOP_RESHAPE:
    case MP_VIEWOP_UNSQUEEZE:
    case MP_VIEWOP_SQUEEZE:
        return mp_view_reshape(g, shape, nd, 0, &gin[0]);
    case MP_VIEWOP_PERMUTE: {
        int64_t inv[MP_MAX_DIMS];
        for (int i = 0; i < nd; i++)
            inv[n->iargs[1 + i]] = i;
        return mp_view_permute(g, inv, nd, &gin[0]);
    }
    case MP_VIEWOP_EXPAND:
        return mp_sum_to_shape(g, shape, nd, &gin[0]);
    case MP_VIEWOP_SLICE:
    case MP_VIEWOP_SELECT:
        return scatter_back(n, g, &gin[0]);
    }
    return mp_error(MP_ERR_RUNTIME, "unknown view kind in backward");
}

mp_status mp_record_view(mp_view_op kind, mp_tensor *a, mp_tensor *out, const int64_t *args,
                         int nargs)
{
    mp_node *node;
    if (nargs > MP_NODE_ARGS - 1)
        return mp_error(MP_ERR_VALUE, "too many view arguments");
    mp_view_set_base(out, a);
    mp_status st = mp_autograd_record(view_names[kind], view_backward, &a, 1, &out, 1, &node);
    if (st != MP_OK || !node)
        return st;
    node->iargs[0] = kind;
    for (int i = 0; i < nargs; i++)
        node->iargs[1 + i] = args[i];
    return MP_OK;
}

static mp_status identity_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    (void)n;
    mp_tensor_incref(gout[0]);
    gin[0] = gout[0];
    return MP_OK;
}

mp_status mp_op_to_dtype(mp_tensor *a, mp_dtype dtype, int copy, mp_tensor **out)
{
    if (a->dtype == dtype && !copy) {
        mp_tensor_incref(a);
        *out = a;
        return MP_OK;
    }
    mp_status st = mp_tensor_cast(a, dtype, out);
    if (st != MP_OK)
        return st;
    mp_node *node;    /* integer results get no grad_fn (mp_autograd_record skips them) */
    st = mp_autograd_record(a->dtype == dtype ? "CloneBackward0" : "ToCopyBackward0",
                            identity_backward, &a, 1, out, 1, &node);
    if (st == MP_OK && node)
        node->grad_passthrough = 1;      /* the engine widens the gradient to a's dtype */
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
