/* inplace.c - where in-place writes meet autograd, as torch's rules. mp_check_inplace refuses
 * what torch refuses (leaves that require grad, views of them, views made under no_grad,
 * overlapping destinations); mp_inplace_commit writes an out-of-place result into the
 * tensor, bumps its storage version, and rebases history: a tensor takes the result's
 * grad_fn; a view makes its base's grad_fn a CopySlices node (gradient of the written region
 * to the result, of the rest to the base's old history). Views whose storage was written
 * since their grad_fn was made are remade lazily from the base (AsStridedBackward0).
 * Geometry is elements on the storage; strides are never negative in mpamp. */
#include <stdlib.h>
#include <string.h>

#include "autograd_hooks.h"
#include "../backend.h"
#include "../chunk.h"
#include "../copy.h"
#include "../elementwise.h"
#include "../ops/ops.h"
#include "../view.h"

/* nodes made from here on belong to the in-place op under way (see protect_saved) */
static _Thread_local uint64_t inplace_since;

/* ---- the geometry of a view relative to its base ---- */

typedef struct {
    int base_ndim, view_ndim;
    int64_t base_shape[MP_MAX_DIMS], base_strides[MP_MAX_DIMS], base_offset;
    int64_t view_shape[MP_MAX_DIMS], view_strides[MP_MAX_DIMS], view_offset;
} geometry;

static mp_status geometry_attach(mp_node *n, const mp_tensor *base, const mp_tensor *view)
{
    geometry *g = malloc(sizeof *g);
    if (!g)
        return mp_error(MP_ERR_NOMEM, "out of memory recording a view's geometry");
    g->base_ndim = base->ndim;
    g->view_ndim = view->ndim;
    memcpy(g->base_shape, base->shape, sizeof g->base_shape);
    memcpy(g->base_strides, base->strides, sizeof g->base_strides);
    memcpy(g->view_shape, view->shape, sizeof g->view_shape);
    memcpy(g->view_strides, view->strides, sizeof g->view_strides);
    g->base_offset = base->offset;
    g->view_offset = view->offset;
    n->ctx = g;
    n->release_ctx = free;
    return MP_OK;
}

/* A zeroed buffer laid out like the base: *whole has the base's shape and strides, *region
 * the view's (both views of one new storage of dtype dt on dev, the gradient's device). */
static mp_status base_buffer(const geometry *g, mp_dtype dt, mp_device dev, mp_tensor **whole,
                             mp_tensor **region)
{
    int64_t span = 1, numel = 1;
    for (int i = 0; i < g->base_ndim; i++) {
        numel *= g->base_shape[i];
        span += g->base_shape[i] > 0 ? (g->base_shape[i] - 1) * g->base_strides[i] : 0;
    }
    mp_tensor *z;
    mp_status st = mp_tensor_full_on(&span, 1, dt, 0.0, dev, &z);
    if (st != MP_OK)
        return st;
    *whole = mp_tensor_on_storage(z->storage, dt, g->base_shape, g->base_strides,
                                  g->base_ndim, 0);
    *region = numel ? mp_tensor_on_storage(z->storage, dt, g->view_shape, g->view_strides,
                                           g->view_ndim, g->view_offset - g->base_offset)
                    : NULL;
    mp_tensor_decref(z);
    if (!*whole || (numel && !*region)) {
        mp_tensor_decref(*whole);
        return MP_ERR_NOMEM;
    }
    return MP_OK;
}

/* gradient of a view (overlap from expand summed first) placed into zeros like the base */
static mp_status as_strided_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    const geometry *g = n->ctx;
    mp_tensor *whole, *region, *gv = gout[0];
    mp_dtype dt = mp_dtype_is_float(gv->dtype) ? gv->dtype : MP_DTYPE_FLOAT32;
    mp_status st = base_buffer(g, dt, gv->storage->device, &whole, &region);
    if (st != MP_OK || !region) {
        gin[0] = whole;
        return st;
    }
    uint32_t overlap = 0;
    for (int i = 0; i < g->view_ndim; i++)
        if (g->view_strides[i] == 0 && g->view_shape[i] > 1)
            overlap |= 1u << i;
    mp_tensor *sum = NULL, *r = region;
    if (overlap && (st = mp_op_sum(gv, overlap, 1, -1, &sum)) == MP_OK) {
        r = mp_tensor_on_storage(region->storage, dt, sum->shape, region->strides,
                                 region->ndim, region->offset);
        st = r ? MP_OK : MP_ERR_NOMEM;
    }
    if (st == MP_OK)
        st = mp_tensor_copy_(r, sum ? sum : gv);
    if (r != region)
        mp_tensor_decref(r);
    mp_tensor_decref(sum);
    mp_tensor_decref(region);
    if (st != MP_OK)
        mp_tensor_decref(whole);
    else
        gin[0] = whole;
    return st;
}

/* base gradient: the written region goes to the result, the rest to the old history */
static mp_status copy_slices_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    const geometry *g = n->ctx;
    mp_tensor *whole, *region;
    mp_dtype dt = mp_dtype_is_float(gout[0]->dtype) ? gout[0]->dtype : MP_DTYPE_FLOAT32;
    mp_status st = base_buffer(g, dt, gout[0]->storage->device, &whole, &region);
    if (st == MP_OK)
        st = mp_tensor_copy_(whole, gout[0]);
    if (st == MP_OK && region && n->next[1].node)
        st = mp_tensor_cast(region, dt, &gin[1]);
    if (st == MP_OK && region && n->next[0].node)
        st = mp_tensor_fill_(region, (mp_scalar){0.0, 0, 1});
    if (st == MP_OK && n->next[0].node)
        mp_tensor_incref(gin[0] = whole);
    mp_tensor_decref(region);
    mp_tensor_decref(whole);
    return st;
}

/* ---- views: base links and lazy refresh ---- */

void mp_view_set_base(mp_tensor *view, mp_tensor *of)
{
    if (view == of || view->base || view->storage != of->storage)
        return;
    mp_tensor *root = of->base ? of->base : of;
    mp_tensor_incref(root);
    view->base = root;
    view->view_version = view->storage->version;
    view->view_no_grad = !mp_grad_enabled() || of->view_no_grad;
    view->version_exempt = of->version_exempt;
}

mp_status mp_view_refresh(mp_tensor *t)
{
    mp_tensor *b = t->base;
    t->view_version = t->storage->version;
    if (t->view_no_grad || !b->requires_grad || (t->requires_grad && !t->grad_fn))
        return MP_OK;            /* no history to follow, or a leaf of its own */
    mp_node *node;
    mp_status st = mp_autograd_record_always("AsStridedBackward0", as_strided_backward, &b, 1,
                                             &t, 1, &node);
    if (st == MP_OK && node)
        st = geometry_attach(node, b, t);
    return st == MP_OK ? mp_retain_follow(t) : st;
}

/* ---- the check ---- */

static int internal_overlap(const mp_tensor *a)
{
    for (int i = 0; i < a->ndim; i++)
        if (a->strides[i] == 0 && a->shape[i] > 1)
            return 1;
    return 0;
}

static mp_status no_grad_view_error(void)
{
    return mp_error(MP_ERR_RUNTIME, "A view was created in no_grad mode and is being modified "
                    "inplace with grad mode enabled. Given that this use case is ambiguous and "
                    "error-prone, it is forbidden. You can clarify your code by moving both the "
                    "view and the inplace either both inside the no_grad block (if you don't "
                    "want the inplace to be tracked) or both outside (if you want the inplace "
                    "to be tracked).");
}

mp_status mp_check_inplace(mp_tensor *a, const char *op_name)
{
    (void)op_name;
    inplace_since = mp_node_seq_now();
    if (internal_overlap(a))
        return mp_error(MP_ERR_RUNTIME, "unsupported operation: more than one element of the "
                        "written-to tensor refers to a single memory location. Please clone() "
                        "the tensor before performing the operation.");
    if (!mp_grad_enabled())
        return MP_OK;
    mp_tensor *b = a->base;
    if (b && b->requires_grad) {
        if (a->view_no_grad)
            return no_grad_view_error();
        if (!b->grad_fn)
            return mp_error(MP_ERR_RUNTIME, "a view of a leaf Variable that requires grad is "
                            "being used in an in-place operation.");
    } else if (a->requires_grad && !a->grad_fn) {
        return mp_error(MP_ERR_RUNTIME, "a leaf Variable that requires grad is being used in "
                        "an in-place operation.");
    }
    return MP_OK;
}

/* ---- the commit ---- */

#define WALK_MAX 64

typedef struct {
    mp_node *nodes[WALK_MAX];
    int n;
} walk;

/* The nodes the in-place op under way made (created after mp_check_inplace), from res back;
 * a few at most, so a bounded list is enough (a longer chain is left as it is: its saved
 * tensors are still checked by version). */
static void walk_op_nodes(mp_node *start, uint64_t since, walk *w)
{
    w->n = 0;
    if (!start || start->seq <= since)
        return;
    w->nodes[w->n++] = start;
    for (int at = 0; at < w->n; at++) {
        mp_node *n = w->nodes[at];
        for (int i = 0; i < n->n_inputs && w->n < WALK_MAX; i++) {
            mp_node *c = n->next[i].node;
            int seen = !c || c->seq <= since;
            for (int k = 0; k < w->n && !seen; k++)
                seen = w->nodes[k] == c;
            if (!seen)
                w->nodes[w->n++] = c;
        }
    }
}

/* Tensors the op saved from a's storage hold values the write is about to replace: they get
 * a copy of their own (as torch saves the original self of mul_, div_, ...). */
static mp_status protect_saved(walk *w, const mp_tensor *a)
{
    for (int k = 0; k < w->n; k++) {
        mp_node *n = w->nodes[k];
        for (int i = 0; i < n->n_saved; i++) {
            mp_tensor *s = n->saved[i], *c;
            if (!s || s->storage != a->storage || s->saved_version != a->storage->version)
                continue;
            mp_status st = mp_tensor_cast(s, s->dtype, &c);
            if (st != MP_OK)
                return st;
            c->saved_version = c->storage->version;
            c->saved_output_nr = s->saved_output_nr;
            c->saved_fn = s->saved_fn;
            n->saved[i] = c;
            mp_tensor_decref(s);
        }
    }
    return MP_OK;
}

static int same_layout(const mp_tensor *x, const mp_tensor *y)
{
    size_t nd = sizeof(int64_t) * (size_t)x->ndim;
    return x->dtype == y->dtype && x->ndim == y->ndim && x->offset == y->offset &&
           !memcmp(x->shape, y->shape, nd) && !memcmp(x->strides, y->strides, nd);
}

/* The op's saved result now lives in a: point the saved header there (res's memory can go)
 * at a's new version, so a later write into a is caught, as torch's saved self of relu_. */
static void retarget_saved(walk *w, const mp_tensor *res, mp_tensor *a)
{
    for (int k = 0; k < w->n; k++) {
        mp_node *n = w->nodes[k];
        for (int i = 0; i < n->n_saved; i++) {
            mp_tensor *s = n->saved[i];
            if (!s || s->storage != res->storage || !same_layout(s, res))
                continue;
            mp_storage_incref(a->storage);
            mp_storage_decref(s->storage);
            s->storage = a->storage;
            memcpy(s->strides, a->strides, sizeof s->strides);
            s->offset = a->offset;
            s->saved_version = a->storage->version;
        }
    }
}

/* an expanded single value (fill_, zero_, t[i] = 3) is a fill */
static int is_broadcast_value(const mp_tensor *res)
{
    for (int i = 0; i < res->ndim; i++)
        if (res->strides[i] != 0 && res->shape[i] != 1)
            return 0;
    return mp_tensor_numel(res) > 0;
}

static mp_status write_bump(mp_tensor *a, mp_tensor *res)
{
    /* a broadcast host value is a fill; a device one is copied there (reading it on the host
     * would cost a device-to-host copy) */
    mp_status st = is_broadcast_value(res) && res->dtype == a->dtype &&
                           res->storage->device == MP_DEVICE_CPU
                       ? mp_tensor_fill_(a, mp_tensor_get_item(res, 0))
                       : mp_tensor_copy_(a, res);
    if (st == MP_OK && !a->version_exempt)
        a->storage->version++;
    return st;
}

/* a source sharing a's memory is copied first (a write could overwrite what it still reads) */
static mp_status write_untracked(mp_tensor *a, mp_tensor *res)
{
    if (res->storage != a->storage || same_layout(a, res))
        return write_bump(a, res);
    mp_tensor *tmp = NULL;
    mp_status st = mp_tensor_cast(res, res->dtype, &tmp);
    if (st == MP_OK)
        st = write_bump(a, tmp);
    mp_tensor_decref(tmp);
    return st;
}

/* The old value was overwritten: its history gets zeros (torch's zeros_like(grad), so a
 * parameter behind a filled tensor ends with a zero gradient, not None); a leaf source that
 * requires grad (copy_) gets the gradient itself. */
static mp_status overwrite_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *g = gout[0];
    if (!g)
        return MP_OK;
    mp_status st = mp_tensor_empty(g->shape, g->ndim, g->dtype, g->storage->device, &gin[0]);
    if (st == MP_OK && (st = mp_tensor_fill_(gin[0], (mp_scalar){0.0, 0, 1})) != MP_OK) {
        mp_tensor_decref(gin[0]);
        gin[0] = NULL;
    }
    if (st == MP_OK && n->n_inputs > 1)
        mp_tensor_incref(gin[1] = g);
    return st;
}

/* torch's grad_fn of an in-place op that overwrites every element with values that carry no
 * history of the old ones (op_name as the bindings give it) */
static const char *overwrite_node_name(const char *op_name)
{
    static const struct {
        const char *op, *node;
    } names[] = {{"fill_", "FillBackward2"}, {"zero_", "ZeroBackward0"},
                 {"uniform_", "UniformBackward0"}, {"normal_", "NormalBackward0"},
                 {"exponential_", "ExponentialBackward0"}, {"bernoulli_", "BernoulliBackward2"},
                 {"random_", "RandomBackward0"}};
    for (size_t i = 0; op_name && i < sizeof names / sizeof names[0]; i++)
        if (strcmp(op_name, names[i].op) == 0)
            return names[i].node;
    return "CopyBackwards";
}

/* a (not a view) takes res's history; an overwrite (or a result without history) ends the
 * old history, which then receives zeros, as torch's CopyBackwards / FillBackward2 / ... */
static mp_status rebase(mp_tensor *a, mp_tensor *res, const char *op_name)
{
    mp_node *node;
    mp_status st = MP_OK;
    /* copy_ and the fills overwrite a with values computed without its old history */
    int overwrite = op_name && (strcmp(op_name, "copy_") == 0 ||
                                strcmp(overwrite_node_name(op_name), "CopyBackwards") != 0);
    if (res->grad_fn && !overwrite) {
        mp_node_incref(res->grad_fn);
        mp_node_decref(a->grad_fn);
        a->grad_fn = res->grad_fn;
        a->output_nr = res->output_nr;
        a->requires_grad = 1;
    } else {
        mp_tensor *ins[2] = {a, res};
        st = mp_autograd_record_always(res->requires_grad ? "CopyBackwards"
                                                          : overwrite_node_name(op_name),
                                       overwrite_backward, ins, res->requires_grad ? 2 : 1,
                                       &a, 1, &node);
    }
    return st == MP_OK ? mp_retain_follow(a) : st;
}

/* view a of base b was written: b's history becomes CopySlices(old history, res) */
static mp_status copy_slices(mp_tensor *b, mp_tensor *a, mp_tensor *res)
{
    mp_tensor *ins[2] = {b, res};
    mp_node *node;
    mp_status st = mp_autograd_record_always("CopySlices", copy_slices_backward, ins, 2, &b, 1,
                                             &node);
    if (st == MP_OK && node)
        st = geometry_attach(node, b, a);
    return st == MP_OK ? mp_retain_follow(b) : st;
}

static int tracked(const mp_tensor *a, const mp_tensor *res)
{
    return res->requires_grad || a->requires_grad || (a->base && a->base->requires_grad);
}

static mp_status shape_check(const mp_tensor *a, const mp_tensor *res)
{
    if (res->ndim == a->ndim && !memcmp(res->shape, a->shape, sizeof(int64_t) *
                                        (size_t)a->ndim))
        return MP_OK;
    char sa[256], sr[256];
    mp_format_shape(sa, sizeof sa, a->shape, a->ndim);
    mp_format_shape(sr, sizeof sr, res->shape, res->ndim);
    return mp_error(MP_ERR_SHAPE, "output with shape %s doesn't match the broadcast shape %s",
                    sa, sr);
}

/* res in a's dtype, never sharing a's memory (a copy from an overlapping source would read
 * what it already wrote); recorded, so gradients convert back */
static mp_status fit_result(mp_tensor *a, mp_tensor *res, mp_tensor **out)
{
    int alias = res->storage == a->storage;
    if (res->dtype == a->dtype && !alias) {
        mp_tensor_incref(*out = res);
        return MP_OK;
    }
    return mp_op_to_dtype(res, a->dtype, alias, out);
}

mp_status mp_inplace_commit(mp_tensor *a, mp_tensor *res, const char *op_name)
{
    uint64_t since = inplace_since ? inplace_since : UINT64_MAX;
    inplace_since = 0;
    mp_status st = shape_check(a, res);
    if (st != MP_OK)
        return st;
    if (!mp_grad_enabled() || !tracked(a, res))
        return write_untracked(a, res);
    if (a->base && a->view_no_grad)
        return no_grad_view_error();
    mp_tensor *val;
    if ((st = fit_result(a, res, &val)) != MP_OK)
        return st;
    if (!tracked(a, val)) {          /* e.g. a float result written into an integer tensor */
        st = write_untracked(a, val);
        mp_tensor_decref(val);
        return st;
    }
    walk w;
    walk_op_nodes(val->grad_fn, since, &w);
    if ((st = protect_saved(&w, a)) == MP_OK && (st = write_bump(a, val)) == MP_OK) {
        retarget_saved(&w, val, a);
        st = a->base ? copy_slices(a->base, a, val) : rebase(a, val, op_name);
    }
    mp_tensor_decref(val);
    return st;
}

mp_status mp_inplace_fill(mp_tensor *a, mp_scalar value, const char *op_name)
{
    mp_status st = mp_check_inplace(a, op_name);
    if (st != MP_OK || (st = mp_check_scalar_fits(a->dtype, value)) != MP_OK)
        return st;
    if (!mp_grad_enabled() || !tracked(a, a)) {       /* the common case: no allocation */
        inplace_since = 0;
        return (st = mp_tensor_fill_(a, value)) == MP_OK && !a->version_exempt
                   ? (a->storage->version++, MP_OK) : st;
    }
    mp_tensor *z = NULL, *ex = NULL;                  /* the value, expanded: a commit */
    if ((st = mp_tensor_empty(NULL, 0, a->dtype, a->storage->device, &z)) == MP_OK &&
        (st = mp_tensor_fill_(z, value)) == MP_OK &&
        (st = mp_view_expand(z, a->shape, a->ndim, &ex)) == MP_OK)
        st = mp_inplace_commit(a, ex, op_name);
    mp_tensor_decref(ex);
    mp_tensor_decref(z);
    return st;
}
