/* autograd.c - node lifetime, recording, and saved tensors with their version check (see
 * autograd.h). The backward engine is in autograd_engine.c, hooks in autograd_hooks.c,
 * in-place history rewrites (and stale views) in inplace.c. */
#include "autograd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd_hooks.h"

_Thread_local int mp_grad_off;            /* 0: enabled (the default); the engine sets it */
static uint64_t mp_next_seq;

int mp_grad_enabled(void) { return !mp_grad_off; }
void mp_set_grad_enabled(int enabled) { mp_grad_off = !enabled; }

uint64_t mp_node_seq_now(void) { return __atomic_load_n(&mp_next_seq, __ATOMIC_RELAXED); }

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
        if (n->hooks)
            mp_hook_list_release(&n->hooks);
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
    for (int i = 0; i < n; i++) {
        mp_tensor *t = inputs[i];
        if (!t)
            continue;
        /* a failed refresh answers 1: mp_autograd_record refreshes again and reports it */
        if (mp_view_stale(t) && mp_view_refresh(t) != MP_OK)
            return 1;
        if (t->requires_grad)
            return 1;
    }
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

mp_status mp_accumulate_backward(mp_node *node, mp_tensor **grads_out, mp_tensor **grads_in);

/* The node that receives gradients for leaf t (created once, cached weakly on t). */
mp_node *mp_leaf_accumulator(mp_tensor *t)
{
    if (t->grad_accumulator) {
        mp_node_incref(t->grad_accumulator);
        return t->grad_accumulator;
    }
    mp_node *n = node_new("AccumulateGrad", mp_accumulate_backward, 0, 1);
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
    return mp_autograd_record_always(name, backward, inputs, n_inputs, outputs, n_outputs,
                                     node_out);
}

mp_status mp_autograd_record_always(const char *name, mp_backward_fn backward,
                                    mp_tensor *const *inputs, int n_inputs,
                                    mp_tensor *const *outputs, int n_outputs,
                                    mp_node **node_out)
{
    *node_out = NULL;
    for (int i = 0; i < n_inputs; i++) {
        mp_status st = inputs[i] && mp_view_stale(inputs[i]) ? mp_view_refresh(inputs[i])
                                                             : MP_OK;
        if (st != MP_OK)
            return st;
    }
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
        } else if (!(n->next[i].node = mp_leaf_accumulator(in))) {
            mp_node_decref(n);
            return mp_error(MP_ERR_NOMEM, "out of memory recording an autograd node");
        }
    }
    for (int i = 0; i < n_outputs; i++) {
        mp_tensor *o = outputs[i];
        if (!o || !mp_dtype_is_float(o->dtype))
            continue;                  /* integer outputs (indices) carry no gradient */
        for (int k = 0; k < n_inputs && !o->base; k++)   /* an output sharing an input's */
            if (inputs[k] && inputs[k] != o && inputs[k]->storage == o->storage)
                mp_view_set_base(o, inputs[k]);        /* memory is a view of it */
        mp_node_incref(n);
        mp_node_decref(o->grad_fn);
        o->grad_fn = n;
        o->output_nr = i;
        o->requires_grad = 1;
    }
    *node_out = n->refcount > 1 ? n : NULL;     /* no float output: the node goes */
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
    if (d) {
        d->saved_version = t->storage->version;
        d->saved_output_nr = t->output_nr;
        /* only a node the saver keeps alive may be named later: itself or a producer */
        int kept = t->grad_fn == n;
        for (int k = 0; k < n->n_inputs && !kept && t->grad_fn; k++)
            kept = n->next[k].node == t->grad_fn;
        d->saved_fn = kept ? t->grad_fn : NULL;
    }
    mp_tensor_decref(n->saved[i]);
    n->saved[i] = d;
    return MP_OK;
}

/* torch's legacy type name of a dtype, with mpamp's package name */
static const char *type_name(mp_dtype dt)
{
    switch (dt) {
    case MP_DTYPE_FLOAT16: return "mpamp.HalfTensor";
    case MP_DTYPE_BFLOAT16: return "mpamp.BFloat16Tensor";
    case MP_DTYPE_INT64: return "mpamp.LongTensor";
    case MP_DTYPE_BOOL: return "mpamp.BoolTensor";
    case MP_DTYPE_UINT8: return "mpamp.ByteTensor";
    default: return "mpamp.FloatTensor";
    }
}

/* torch names the producer without its "Backward<N>" suffix (ReluBackward0 -> Relu) */
static int short_name_len(const char *name)
{
    int len = (int)strlen(name), end = len;
    while (end > 0 && name[end - 1] >= '0' && name[end - 1] <= '9')
        end--;
    if (end >= 8 && strncmp(name + end - 8, "Backward", 8) == 0 && end > 8)
        return end - 8;
    return len;
}

static void stale_error(const mp_tensor *s)
{
    char shape[256], which[192] = "";
    mp_format_shape(shape, sizeof shape, s->shape, s->ndim);
    if (s->saved_fn)
        snprintf(which, sizeof which, ", which is output %d of %.*s,", s->saved_output_nr,
                 short_name_len(s->saved_fn->name), s->saved_fn->name);
    mp_error(MP_ERR_RUNTIME, "one of the variables needed for gradient computation has been "
             "modified by an inplace operation: [%s %s]%s is at version %lld; expected version "
             "%lld instead. Hint: the operation that modified it ran after the tensor was "
             "saved for backward; use its out-of-place form, or modify a clone() instead.",
             type_name(s->dtype), shape, which, (long long)s->storage->version,
             (long long)s->saved_version);
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
    mp_tensor *s = i < n->n_saved ? n->saved[i] : NULL;
    if (s && s->storage->version != s->saved_version) {
        stale_error(s);
        return NULL;
    }
    return s;
}

