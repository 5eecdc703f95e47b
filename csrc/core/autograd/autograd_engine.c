/* autograd_engine.c - the backward engine (see autograd.h) and the accumulate node of leaves.
 * The engine collects the nodes reachable from the roots, orders them by decreasing creation
 * number (every producer was created before its consumers) with each leaf's accumulate node
 * placed right after its last consumer (gradients become ready, and post-accumulate hooks
 * fire, as early as they can), sums incoming gradients per node output, runs the tensor hooks
 * of that output, calls each node's backward once, and hands the results to the producers. */
#include "autograd.h"

#include <stdlib.h>
#include <string.h>

#include "../amp/autocast.h"
#include "autograd_hooks.h"
#include "../copy.h"
#include "../elementwise.h"
#include "../ops/op_table.h"   /* ops are reached through the table */

extern _Thread_local int mp_grad_off;     /* autograd.c */

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
    mp_status st = mp_op_call(MP_OP_ADD, *slot, g, 1.0, &sum);
    if (st != MP_OK)
        return st;
    mp_tensor_decref(*slot);
    *slot = sum;
    return MP_OK;
}

/* A first gradient can become .grad itself when nothing else can see it: only the engine's
 * buffer holds the tensor and only the tensor holds its storage, which is ours, exactly its
 * size, contiguous, in the leaf's dtype and device, outside any graph. Otherwise .grad is a
 * copy, so a later in-place accumulation cannot change a tensor someone else holds. A tensor
 * hook's result qualifies only when the hook kept no reference to it (refcounts say so). */
static int can_steal(const mp_tensor *g, const mp_tensor *leaf)
{
    const mp_storage *s = g->storage;
    return g->refcount == 1 && s->refcount == 1 && !s->release && g->dtype == leaf->dtype &&
           s->device == leaf->storage->device && g->offset == 0 && !g->grad_fn &&
           !g->requires_grad && !g->wrapped_number && !g->base &&
           mp_tensor_is_contiguous(g) &&
           s->nbytes == (size_t)mp_tensor_numel(g) * mp_dtype_size(g->dtype);
}

mp_status mp_accumulate_backward(mp_node *node, mp_tensor **grads_out, mp_tensor **grads_in)
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
    mp_status st = mp_op_call(MP_OP_ADD, leaf->grad, g, 1.0, &sum);
    if (st != MP_OK)
        return st;
    st = mp_tensor_copy_(leaf->grad, sum);     /* in place: keeps .grad's identity */
    mp_tensor_decref(sum);
    return st;
}

/* ---- the engine ---- */

typedef struct {
    mp_node *node;
    uint64_t key;      /* sort key, largest first: 2 seq + 1; accumulators 2 (min consumer) */
    int64_t ord;       /* discovery order: ties keep it */
    int uses;          /* edges into the node from the collected graph */
} entry;

typedef struct {
    entry *e;
    int n, cap;
} node_list;

static int list_push(node_list *l, mp_node *n)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        entry *p = realloc(l->e, sizeof *p * (size_t)cap);
        if (!p)
            return -1;
        l->e = p;
        l->cap = cap;
    }
    l->e[l->n] = (entry){n, n->leaf ? UINT64_MAX : 2 * n->seq + 1, l->n, 0};
    n->scratch = ++l->n;       /* index + 1 while collecting */
    return 0;
}

/* An accumulate node sorts right after its earliest-created (so last-run) consumer. */
static void note_consumer(node_list *l, mp_node *c, const mp_node *consumer)
{
    entry *e = &l->e[c->scratch - 1];
    e->uses++;
    if (c->leaf && 2 * consumer->seq < e->key)
        e->key = 2 * consumer->seq;
}

/* Depth-first collection of every node reachable from `start` (scratch = index + 1). */
static mp_status collect(mp_node *start, node_list *out)
{
    int64_t *stack = NULL;
    int top = 0, cap = 0;
    if (!start || start->scratch)
        return MP_OK;
    if (list_push(out, start) < 0)
        goto oom;
    for (int64_t at = start->scratch - 1;; at = stack[--top]) {
        mp_node *n = out->e[at].node;
        for (int i = 0; i < n->n_inputs; i++) {
            mp_node *c = n->next[i].node;
            if (!c)
                continue;
            if (!c->scratch) {
                if (top == cap) {
                    int64_t *p = realloc(stack, sizeof *p * (size_t)(cap = cap ? 2 * cap : 64));
                    if (!p)
                        goto oom;
                    stack = p;
                }
                if (list_push(out, c) < 0)
                    goto oom;
                stack[top++] = c->scratch - 1;
            }
            note_consumer(out, c, n);
        }
        if (!top)
            break;
    }
    free(stack);
    return MP_OK;
oom:
    free(stack);
    return mp_error(MP_ERR_NOMEM, "out of memory walking the autograd graph");
}

static int by_key_desc(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? 1 : -1;
    return x->ord < y->ord ? -1 : x->ord > y->ord;
}

typedef struct {
    node_list order;
    mp_tensor **bufs;          /* per node output; a collected node's scratch is offset + 1 */
    int *uses;                 /* per node, at its first slot: edges into it */
    int retain, capturing;
} engine;

static _Thread_local engine *running;     /* the backward this thread is running, if any */

mp_dtype mp_autograd_grad_dtype_for(mp_node *n, int i)
{
    const engine *e = running;
    const mp_node *d = n->next[i].node;
    mp_dtype want = n->in_dtypes[i];
    if (!e || e->capturing || !d || !d->grad_passthrough || d->hooks || d->n_inputs != 1 ||
        d->n_outputs != 1 || (want != MP_DTYPE_FLOAT16 && want != MP_DTYPE_BFLOAT16) ||
        d->in_dtypes[0] != MP_DTYPE_FLOAT32 || !d->scratch || e->uses[d->scratch - 1] != 1)
        return want;
    return MP_DTYPE_FLOAT32;
}

void mp_node_grad_rounded(mp_node *n, int i)
{
    if (i >= 0 && i < 32)
        n->rounded_grads |= 1u << i;
}

static mp_tensor **slot_of(engine *e, mp_node *n, int output_nr)
{
    return &e->bufs[n->scratch - 1 + output_nr];
}

/* Casts g to the dtype and shape checks of input i of node n. */
static mp_status fit_grad(mp_node *n, int i, mp_tensor *g, mp_tensor **out)
{
    int rounded = i < 32 && (n->rounded_grads >> i & 1u) &&
                  g->dtype == mp_autograd_grad_dtype_for(n, i);
    if (g->dtype == n->in_dtypes[i] || rounded) {     /* rounded: already the cast's values */
        mp_tensor_incref(g);
        *out = g;
        return MP_OK;
    }
    return mp_tensor_cast(g, n->in_dtypes[i], out);
}

/* Tensor hooks and retain_grad of each output, on the summed gradient (in its slot). */
static mp_status run_pre_hooks(mp_node *n, mp_tensor **gout)
{
    mp_hook *list = n->leaf ? n->leaf->hooks : n->hooks;
    mp_status st = MP_OK;
    for (int k = 0; list && k < n->n_outputs && st == MP_OK; k++)
        if (gout[k])
            st = mp_hooks_run_grad(list, k, &gout[k]);
    return st;
}

static mp_status send_grads(mp_node *n, mp_tensor **gin, engine *e)
{
    mp_status st = MP_OK;
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
    n->rounded_grads = 0;           /* a promise about this run's gradients only */
    return st;
}

static mp_status run_node(engine *e, mp_node *n)
{
    mp_tensor **gout = slot_of(e, n, 0);
    int any = 0;
    for (int k = 0; k < n->n_outputs; k++)
        any |= gout[k] != NULL;
    if (!any)
        return MP_OK;
    mp_status st = run_pre_hooks(n, gout);
    if (st != MP_OK || (e->capturing && n->leaf))
        return st;          /* autograd.grad: a leaf's gradient is captured, not accumulated */
    mp_tensor *stack_in[8], **gin = stack_in;
    if (n->n_inputs > 8 && !(gin = calloc((size_t)n->n_inputs, sizeof *gin)))
        return mp_error(MP_ERR_NOMEM, "out of memory in backward");
    memset(gin, 0, sizeof *gin * (size_t)(n->n_inputs < 8 ? 8 : n->n_inputs));
    st = n->backward(n, gout, gin);
    if (st == MP_OK)
        st = send_grads(n, gin, e);
    for (int i = 0; i < n->n_inputs; i++)
        mp_tensor_decref(gin[i]);
    if (gin != stack_in)
        free(gin);
    if (!e->capturing)        /* consumed: free it now (a passed-on gradient becomes the only
                                 reference, which AccumulateGrad then keeps without a copy) */
        for (int k = 0; k < n->n_outputs; k++) {
            mp_tensor_decref(gout[k]);
            gout[k] = NULL;
        }
    if (st == MP_OK && n->leaf && n->leaf->hooks)
        st = mp_hooks_run_post(n->leaf->hooks, n->leaf);
    if (st == MP_OK && !e->retain) {
        for (int i = 0; i < n->n_saved; i++)
            mp_tensor_decref(n->saved[i]);
        free(n->saved);
        n->saved = NULL;
        n->n_saved = 0;
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
        mp_status st = mp_view_stale(roots[r]) ? mp_view_refresh(roots[r]) : MP_OK;
        if (st != MP_OK)
            return st;
        if (!roots[r]->requires_grad)
            return mp_error(MP_ERR_RUNTIME, "element %d of tensors does not require grad and "
                            "does not have a grad_fn", r);
        if (roots[r]->grad_fn)
            mp_node_incref(nodes[r] = roots[r]->grad_fn);
        else if (!(nodes[r] = mp_leaf_accumulator(roots[r])))
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
            mp_status st = mp_tensor_full_on(root->shape, root->ndim, root->dtype, 1.0,
                                             root->storage->device, &own);
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

/* Orders the collected nodes and gives each its slots (scratch = first slot + 1). */
static mp_status plan(engine *e, int64_t *total)
{
    qsort(e->order.e, (size_t)e->order.n, sizeof *e->order.e, by_key_desc);
    *total = 0;
    for (int i = 0; i < e->order.n; i++) {
        e->order.e[i].node->scratch = *total + 1;
        *total += e->order.e[i].node->n_outputs;
    }
    e->bufs = calloc((size_t)(*total ? *total : 1), sizeof *e->bufs);
    e->uses = calloc((size_t)(*total ? *total : 1), sizeof *e->uses);
    if (!e->bufs || !e->uses)
        return mp_error(MP_ERR_NOMEM, "out of memory in backward");
    for (int i = 0; i < e->order.n; i++)
        e->uses[e->order.e[i].node->scratch - 1] = e->order.e[i].uses;
    return MP_OK;
}

mp_status mp_autograd_backward(mp_tensor *const *roots, mp_tensor *const *root_grads,
                               int n_roots, int retain_graph, mp_tensor *const *capture,
                               int n_capture, mp_tensor **captured)
{
    engine e = {{0}, NULL, NULL, retain_graph, capture != NULL};
    mp_node **nodes = calloc((size_t)(n_roots ? n_roots : 1), sizeof *nodes);
    if (!nodes)
        return mp_error(MP_ERR_NOMEM, "out of memory in backward");
    mp_status st = root_nodes(roots, n_roots, nodes);
    for (int c = 0; c < n_capture && st == MP_OK; c++)
        st = mp_view_stale(capture[c]) ? mp_view_refresh(capture[c]) : MP_OK;
    for (int r = 0; r < n_roots && st == MP_OK; r++)
        st = collect(nodes[r], &e.order);
    int64_t total = 0;
    if (st == MP_OK)
        st = plan(&e, &total);
    /* backward runs without grad recording and without autocast (as torch's engine
     * threads): each node computes in the dtypes its forward used */
    int was_off = mp_grad_off;
    mp_autocast_saved ac;
    mp_grad_off = 1;
    mp_autocast_suspend(&ac);
    if (st == MP_OK)
        st = seed_roots(&e, roots, root_grads, nodes, n_roots);
    engine *outer = running;        /* a hook may run a backward of its own */
    running = &e;
    for (int i = 0; i < e.order.n && st == MP_OK; i++)
        st = run_node(&e, e.order.e[i].node);
    running = outer;
    mp_autocast_restore(&ac);
    mp_grad_off = was_off;
    if (st == MP_OK && capture)
        capture_results(&e, capture, n_capture, captured);
    for (int64_t i = 0; i < total; i++)
        mp_tensor_decref(e.bufs[i]);
    for (int i = 0; i < e.order.n; i++)
        e.order.e[i].node->scratch = 0;
    for (int r = 0; r < n_roots; r++)
        mp_node_decref(nodes[r]);
    free(nodes);
    free(e.bufs);
    free(e.uses);
    free(e.order.e);
    return st;
}
