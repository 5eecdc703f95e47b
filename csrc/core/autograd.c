/* autograd.c - node lifetime, recording, and the backward engine (see autograd.h).
 * The engine collects the nodes reachable from the roots, orders them by decreasing creation
 * number (every producer was created before its consumers), sums incoming gradients per node
 * output, calls each node's backward once, and hands the results to the producers. */
#include "autograd.h"

#include <stdlib.h>
#include <string.h>

#include "autocast.h"
#include "copy.h"
#include "elementwise.h"
#include "ops.h"

static _Thread_local int mp_grad_off;     /* 0: enabled (the default) */
static uint64_t mp_next_seq;

int mp_grad_enabled(void) { return !mp_grad_off; }
void mp_set_grad_enabled(int enabled) { mp_grad_off = !enabled; }

void mp_node_incref(mp_node *n)
{
    if (n)
        __atomic_add_fetch(&n->refcount, 1, __ATOMIC_RELAXED);
}

static void free_saved(mp_node *n)
{
    for (int i = 0; i < n->n_saved; i++)
        mp_tensor_decref(n->saved[i]);
    free(n->saved);
    n->saved = NULL;
    n->n_saved = 0;
}

void mp_node_decref(mp_node *n)
{
    /* iterative: a long chain of nodes must not recurse once per node */
    while (n && __atomic_sub_fetch(&n->refcount, 1, __ATOMIC_ACQ_REL) == 0) {
        mp_node *next_to_free = NULL;
        for (int i = 0; i < n->n_inputs; i++) {
            mp_node *child = n->next[i].node;
            if (!child)
                continue;
            if (!next_to_free && child->refcount == 1)
                next_to_free = child;          /* freed by the loop, not by recursion */
            else
                mp_node_decref(child);
        }
        free_saved(n);
        if (n->release_ctx)
            n->release_ctx(n->ctx);
        if (n->leaf) {
            if (n->leaf->grad_accumulator == n)
                n->leaf->grad_accumulator = NULL;
            mp_tensor_decref(n->leaf);
        }
        free(n);                       /* the arrays live in the same block */
        n = next_to_free;
    }
}

mp_tensor *mp_tensor_detach(const mp_tensor *t)
{
    return mp_tensor_on_storage(t->storage, t->dtype, t->shape, t->strides, t->ndim,
                                t->offset);
}

int mp_any_requires_grad(mp_tensor *const *inputs, int n)
{
    if (mp_grad_off)
        return 0;
    for (int i = 0; i < n; i++)
        if (inputs[i] && inputs[i]->requires_grad)
            return 1;
    return 0;
}

/* One allocation holds the node and its per-input arrays (nodes are made on every op). */
static mp_node *node_new(const char *name, mp_backward_fn backward, int n_inputs,
                         int n_outputs)
{
    size_t k = (size_t)(n_inputs ? n_inputs : 1);
    size_t size = sizeof(mp_node) + k * (sizeof(mp_edge) + MP_MAX_DIMS * sizeof(int64_t) +
                                         sizeof(mp_dtype) + sizeof(int));
    mp_node *n = calloc(1, size);
    if (!n)
        return NULL;
    char *p = (char *)(n + 1);          /* largest alignment first */
    n->next = (mp_edge *)p;
    p += k * sizeof(mp_edge);
    n->in_shapes = (int64_t *)p;
    p += k * MP_MAX_DIMS * sizeof(int64_t);
    n->in_dtypes = (mp_dtype *)p;
    p += k * sizeof(mp_dtype);
    n->in_ndims = (int *)p;
    n->refcount = 1;
    n->name = name;
    n->backward = backward;
    n->n_inputs = n_inputs;
    n->n_outputs = n_outputs;
    n->seq = __atomic_add_fetch(&mp_next_seq, 1, __ATOMIC_RELAXED);
    return n;
}

static mp_status accumulate_backward(mp_node *node, mp_tensor **grads_out,
                                     mp_tensor **grads_in);

/* The node that receives gradients for leaf t (created once, cached weakly on t). */
static mp_node *leaf_accumulator(mp_tensor *t)
{
    if (t->grad_accumulator) {
        mp_node_incref(t->grad_accumulator);
        return t->grad_accumulator;
    }
    mp_node *n = node_new("AccumulateGrad", accumulate_backward, 0, 1);
    if (!n)
        return NULL;
    mp_tensor_incref(t);
    n->leaf = t;
    n->seq = 0;     /* created lazily after its consumers: must sort last, and may (no inputs) */
    t->grad_accumulator = n;
    return n;
}

mp_status mp_autograd_record(const char *name, mp_backward_fn backward,
                             mp_tensor *const *inputs, int n_inputs,
                             mp_tensor *const *outputs, int n_outputs, mp_node **node_out)
{
    *node_out = NULL;
    if (!mp_any_requires_grad(inputs, n_inputs))
        return MP_OK;
    mp_node *n = node_new(name, backward, n_inputs, n_outputs);
    if (!n)
        return mp_error(MP_ERR_NOMEM, "out of memory recording an autograd node");
    for (int i = 0; i < n_inputs; i++) {
        mp_tensor *in = inputs[i];
        if (!in)
            continue;
        n->in_dtypes[i] = in->dtype;
        n->in_ndims[i] = in->ndim;
        memcpy(n->in_shapes + (size_t)i * MP_MAX_DIMS, in->shape,
               sizeof(int64_t) * (size_t)in->ndim);
        if (!in->requires_grad)
            continue;
        if (in->grad_fn) {
            mp_node_incref(in->grad_fn);
            n->next[i].node = in->grad_fn;
            n->next[i].output_nr = in->output_nr;
        } else if (!(n->next[i].node = leaf_accumulator(in))) {
            mp_node_decref(n);
            return mp_error(MP_ERR_NOMEM, "out of memory recording an autograd node");
        }
    }
    for (int i = 0; i < n_outputs; i++) {
        mp_tensor *o = outputs[i];
        if (!o || !mp_dtype_is_float(o->dtype))
            continue;                  /* integer outputs (indices) carry no gradient */
        mp_node_incref(n);
        mp_node_decref(o->grad_fn);
        o->grad_fn = n;
        o->output_nr = i;
        o->requires_grad = 1;
    }
    *node_out = n;
    mp_node_decref(n);                 /* the outputs hold it now */
    return MP_OK;
}

const int64_t *mp_node_in_shape(const mp_node *n, int i, int *ndim)
{
    *ndim = n->in_ndims[i];
    return n->in_shapes + (size_t)i * MP_MAX_DIMS;
}

mp_status mp_node_save(mp_node *n, int i, mp_tensor *t)
{
    if (i >= n->n_saved) {
        mp_tensor **s = realloc(n->saved, sizeof *s * (size_t)(i + 1));
        if (!s)
            return mp_error(MP_ERR_NOMEM, "out of memory saving a tensor for backward");
        for (int k = n->n_saved; k <= i; k++)
            s[k] = NULL;
        n->saved = s;
        n->n_saved = i + 1;
    }
    mp_tensor *d = t ? mp_tensor_detach(t) : NULL;
    if (t && !d)
        return MP_ERR_NOMEM;
    mp_tensor_decref(n->saved[i]);
    n->saved[i] = d;
    return MP_OK;
}

mp_tensor *mp_node_saved(mp_node *n, int i)
{
    if (n->saved_freed) {
        mp_error(MP_ERR_RUNTIME, "Trying to backward through the graph a second time (or "
                 "directly access saved tensors after they have already been freed). Saved "
                 "intermediate values of the graph are freed when you call .backward() or "
                 "autograd.grad(). Specify retain_graph=True if you need to backward through "
                 "the graph a second time or if you need to access saved tensors after "
                 "calling backward.");
        return NULL;
    }
    return i < n->n_saved ? n->saved[i] : NULL;
}

/* ---- accumulation into leaves ---- */

/* *slot += g, out of place (g and *slot may be shared with other owners). */
static mp_status add_into(mp_tensor **slot, mp_tensor *g)
{
    if (!*slot) {
        mp_tensor_incref(g);
        *slot = g;
        return MP_OK;
    }
    mp_tensor *sum;
    mp_status st = mp_op_add(*slot, g, 1.0, &sum);
    if (st != MP_OK)
        return st;
    mp_tensor_decref(*slot);
    *slot = sum;
    return MP_OK;
}

/* A first gradient can become .grad itself when nothing else can see it: only the engine's
 * buffer holds the tensor and only the tensor holds its storage, which is ours, exactly its
 * size, contiguous, in the leaf's dtype and device, outside any graph. Otherwise .grad is a
 * copy, so a later in-place accumulation cannot change a tensor someone else holds. */
static int can_steal(const mp_tensor *g, const mp_tensor *leaf)
{
    const mp_storage *s = g->storage;
    return g->refcount == 1 && s->refcount == 1 && !s->release && g->dtype == leaf->dtype &&
           s->device == leaf->storage->device && g->offset == 0 && !g->grad_fn &&
           !g->requires_grad && !g->wrapped_number && mp_tensor_is_contiguous(g) &&
           s->nbytes == (size_t)mp_tensor_numel(g) * mp_dtype_size(g->dtype);
}

static mp_status accumulate_backward(mp_node *node, mp_tensor **grads_out,
                                     mp_tensor **grads_in)
{
    (void)grads_in;
    mp_tensor *leaf = node->leaf, *g = grads_out[0];
    if (!g)
        return MP_OK;
    if (!leaf->grad) {
        if (can_steal(g, leaf)) {          /* as torch's AccumulateGrad: no copy */
            mp_tensor_incref(g);
            leaf->grad = g;
            return MP_OK;
        }
        /* a fresh, contiguous tensor of the leaf's dtype (never an alias of g) */
        return mp_tensor_cast(g, leaf->dtype, &leaf->grad);
    }
    mp_tensor *sum;
    mp_status st = mp_op_add(leaf->grad, g, 1.0, &sum);
    if (st != MP_OK)
        return st;
    st = mp_tensor_copy_(leaf->grad, sum);     /* in place: keeps .grad's identity */
    mp_tensor_decref(sum);
    return st;
}

/* ---- the engine ---- */

typedef struct {
    mp_node **nodes;
    int n, cap;
} node_list;

static int list_push(node_list *l, mp_node *n)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        mp_node **p = realloc(l->nodes, sizeof *p * (size_t)cap);
        if (!p)
            return -1;
        l->nodes = p;
        l->cap = cap;
    }
    l->nodes[l->n++] = n;
    return 0;
}

/* Depth-first collection of every node reachable from `start` (marks scratch = -1). */
static mp_status collect(mp_node *start, node_list *out)
{
    node_list stack = {0};
    if (!start || start->scratch)
        return MP_OK;
    start->scratch = -1;
    if (list_push(&stack, start) < 0 || list_push(out, start) < 0)
        goto oom;
    while (stack.n) {
        mp_node *n = stack.nodes[--stack.n];
        for (int i = 0; i < n->n_inputs; i++) {
            mp_node *c = n->next[i].node;
            if (!c || c->scratch)
                continue;
            c->scratch = -1;
            if (list_push(&stack, c) < 0 || list_push(out, c) < 0)
                goto oom;
        }
    }
    free(stack.nodes);
    return MP_OK;
oom:
    free(stack.nodes);
    return mp_error(MP_ERR_NOMEM, "out of memory walking the autograd graph");
}

static int by_seq_desc(const void *a, const void *b)
{
    uint64_t x = (*(mp_node *const *)a)->seq, y = (*(mp_node *const *)b)->seq;
    return x < y ? 1 : x > y ? -1 : 0;
}

typedef struct {
    node_list order;
    mp_tensor **bufs;          /* per node output; a collected node's scratch is offset + 1 */
    int retain, capturing;
} engine;

static mp_tensor **slot_of(engine *e, mp_node *n, int output_nr)
{
    return &e->bufs[n->scratch - 1 + output_nr];
}

/* Casts g to the dtype and shape checks of input i of node n. */
static mp_status fit_grad(mp_node *n, int i, mp_tensor *g, mp_tensor **out)
{
    if (g->dtype == n->in_dtypes[i]) {
        mp_tensor_incref(g);
        *out = g;
        return MP_OK;
    }
    return mp_tensor_cast(g, n->in_dtypes[i], out);
}

static mp_status run_node(engine *e, mp_node *n)
{
    mp_tensor **gout = slot_of(e, n, 0);
    int any = 0;
    for (int k = 0; k < n->n_outputs; k++)
        any |= gout[k] != NULL;
    if (!any || (e->capturing && n->leaf))
        return MP_OK;
    mp_tensor *stack_in[8], **gin = stack_in;
    if (n->n_inputs > 8 && !(gin = calloc((size_t)n->n_inputs, sizeof *gin)))
        return mp_error(MP_ERR_NOMEM, "out of memory in backward");
    memset(gin, 0, sizeof *gin * (size_t)(n->n_inputs < 8 ? 8 : n->n_inputs));
    mp_status st = n->backward(n, gout, gin);
    for (int i = 0; i < n->n_inputs && st == MP_OK; i++) {
        mp_node *dst = n->next[i].node;
        if (!gin[i] || !dst)
            continue;
        mp_tensor *g;
        st = fit_grad(n, i, gin[i], &g);
        if (st == MP_OK) {
            st = add_into(slot_of(e, dst, n->next[i].output_nr), g);
            mp_tensor_decref(g);
        }
    }
    for (int i = 0; i < n->n_inputs; i++)
        mp_tensor_decref(gin[i]);
    if (gin != stack_in)
        free(gin);
    if (st == MP_OK && !e->retain) {
        free_saved(n);
        n->saved_freed = 1;
    }
    return st;
}

/* The node each root's gradient enters: its grad_fn, or its accumulator for a leaf (new
 * references, released by the caller). */
static mp_status root_nodes(mp_tensor *const *roots, int n_roots, mp_node **nodes)
{
    for (int r = 0; r < n_roots; r++) {
        nodes[r] = NULL;
        if (!roots[r]->requires_grad)
            return mp_error(MP_ERR_RUNTIME, "element %d of tensors does not require grad and "
                            "does not have a grad_fn", r);
        if (roots[r]->grad_fn)
            mp_node_incref(nodes[r] = roots[r]->grad_fn);
        else if (!(nodes[r] = leaf_accumulator(roots[r])))
            return mp_error(MP_ERR_NOMEM, "out of memory");
    }
    return MP_OK;
}

static mp_status seed_roots(engine *e, mp_tensor *const *roots, mp_tensor *const *root_grads,
                            mp_node **nodes, int n_roots)
{
    for (int r = 0; r < n_roots; r++) {
        mp_tensor *root = roots[r], *g = root_grads ? root_grads[r] : NULL, *own = NULL;
        if (!g) {
            if (mp_tensor_numel(root) != 1)
                return mp_error(MP_ERR_RUNTIME, "grad can be implicitly created only for "
                                "scalar outputs");
            mp_status st = mp_tensor_full(root->shape, root->ndim, root->dtype, 1.0, &own);
            if (st != MP_OK)
                return st;
            g = own;
        }
        mp_status st = add_into(slot_of(e, nodes[r], root->grad_fn ? root->output_nr : 0), g);
        mp_tensor_decref(own);
        if (st != MP_OK)
            return st;
    }
    return MP_OK;
}

static void capture_results(engine *e, mp_tensor *const *capture, int n_capture,
                            mp_tensor **captured)
{
    for (int c = 0; c < n_capture; c++) {
        mp_tensor *t = capture[c];
        mp_node *n = t->grad_fn ? t->grad_fn : t->grad_accumulator;
        captured[c] = NULL;
        if (n && n->scratch > 0) {
            mp_tensor **slot = slot_of(e, n, t->grad_fn ? t->output_nr : 0);
            if (*slot)
                mp_tensor_incref(captured[c] = *slot);
        }
    }
}

mp_status mp_autograd_backward(mp_tensor *const *roots, mp_tensor *const *root_grads,
                               int n_roots, int retain_graph, mp_tensor *const *capture,
                               int n_capture, mp_tensor **captured)
{
    engine e = {{0}, NULL, retain_graph, capture != NULL};
    mp_node **nodes = calloc((size_t)(n_roots ? n_roots : 1), sizeof *nodes);
    if (!nodes)
        return mp_error(MP_ERR_NOMEM, "out of memory in backward");
    mp_status st = root_nodes(roots, n_roots, nodes);
    for (int r = 0; r < n_roots && st == MP_OK; r++)
        st = collect(nodes[r], &e.order);
    int64_t total = 0;
    if (st == MP_OK) {
        qsort(e.order.nodes, (size_t)e.order.n, sizeof *e.order.nodes, by_seq_desc);
        for (int i = 0; i < e.order.n; i++) {
            e.order.nodes[i]->scratch = total + 1;
            total += e.order.nodes[i]->n_outputs;
        }
        e.bufs = calloc((size_t)(total ? total : 1), sizeof *e.bufs);
        if (!e.bufs)
            st = mp_error(MP_ERR_NOMEM, "out of memory in backward");
    }
    /* backward runs without grad recording and without autocast (as torch's engine
     * threads): each node computes in the dtypes its forward used */
    int was_off = mp_grad_off;
    mp_autocast_saved ac;
    mp_grad_off = 1;
    mp_autocast_suspend(&ac);
    if (st == MP_OK)
        st = seed_roots(&e, roots, root_grads, nodes, n_roots);
    for (int i = 0; i < e.order.n && st == MP_OK; i++)
        st = run_node(&e, e.order.nodes[i]);
    mp_autocast_restore(&ac);
    mp_grad_off = was_off;
    if (st == MP_OK && capture)
        capture_results(&e, capture, n_capture, captured);
    for (int64_t i = 0; i < total; i++)
        mp_tensor_decref(e.bufs[i]);
    for (int i = 0; i < e.order.n; i++)
        e.order.nodes[i]->scratch = 0;
    for (int r = 0; r < n_roots; r++)
        mp_node_decref(nodes[r]);
    free(nodes);
    free(e.bufs);
    free(e.order.nodes);
    return st;
}
