/* autograd_hooks.c - hook lists on tensors and nodes (see autograd_hooks.h): registration
 * with torch's checks, removal through handles, retain_grad's link from a node to its tensor,
 * and running the hooks for the engine. Hooks are refcounted so that a handle outliving its
 * owner stays valid; the callback's context is released once, at removal or owner death. */
#include "autograd_hooks.h"

#include <stdlib.h>

#include "../copy.h"
#include "../ops/op_table.h"   /* ops are reached through the table */

void mp_hook_decref(mp_hook *h)
{
    if (h && --h->refcount == 0)
        free(h);
}

void mp_hook_remove(mp_hook *h)
{
    if (!h || h->removed)
        return;
    h->removed = 1;
    h->tensor = NULL;
    if (h->release)
        h->release(h->ctx);
    h->ctx = NULL;
}

static _Thread_local int running;       /* hooks being run: lists must not be pruned */

static mp_status append(mp_hook **list, int kind, int output_nr, mp_hook_fn fn, void *ctx,
                        void (*release)(void *), mp_hook **handle)
{
    mp_hook *h = calloc(1, sizeof *h);
    if (!h)
        return mp_error(MP_ERR_NOMEM, "out of memory registering a hook");
    *h = (mp_hook){NULL, handle ? 2 : 1, kind, output_nr, 0, fn, ctx, release, NULL};
    while (*list) {
        mp_hook *at = *list;
        if (at->removed && !running) {      /* registering and removing in a loop stays flat */
            *list = at->next;
            mp_hook_decref(at);
        } else {
            list = &at->next;
        }
    }
    *list = h;
    if (handle)
        *handle = h;
    return MP_OK;
}

mp_status mp_tensor_add_hook(mp_tensor *t, int kind, mp_hook_fn fn, void *ctx,
                             void (*release)(void *), mp_hook **handle)
{
    mp_status st = mp_view_stale(t) ? mp_view_refresh(t) : MP_OK;
    if (st != MP_OK)
        return st;
    if (kind == MP_HOOK_POST_ACCUMULATE && t->grad_fn)
        return mp_error(MP_ERR_RUNTIME, "post accumulate grad hooks cannot be registered on "
                        "non-leaf tensors");
    if (!t->requires_grad)
        return mp_error(MP_ERR_RUNTIME, "cannot register a hook on a tensor that doesn't "
                        "require gradient");
    if (t->grad_fn)
        return append(&t->grad_fn->hooks, kind, t->output_nr, fn, ctx, release, handle);
    return append(&t->hooks, kind, 0, fn, ctx, release, handle);
}

/* ---- retain_grad ---- */

static mp_status link_retain(mp_tensor *t)
{
    mp_hook *h = NULL;
    mp_status st = append(&t->grad_fn->hooks, MP_HOOK_RETAIN, t->output_nr, NULL, NULL, NULL,
                          NULL);
    if (st != MP_OK)
        return st;
    for (h = t->grad_fn->hooks; h->next; h = h->next)
        ;
    h->tensor = t;
    mp_node_incref(t->retain_node = t->grad_fn);
    return MP_OK;
}

static void unlink_retain(mp_tensor *t)
{
    for (mp_hook *h = t->retain_node->hooks; h; h = h->next)
        if (h->kind == MP_HOOK_RETAIN && h->tensor == t)
            mp_hook_remove(h);
    mp_node_decref(t->retain_node);
    t->retain_node = NULL;
}

mp_status mp_tensor_retain_grad(mp_tensor *t)
{
    mp_status st = mp_view_stale(t) ? mp_view_refresh(t) : MP_OK;
    if (st != MP_OK)
        return st;
    if (!t->requires_grad)
        return mp_error(MP_ERR_RUNTIME, "can't retain_grad on Tensor that has "
                        "requires_grad=False");
    if (!t->grad_fn || t->retains_grad)
        return MP_OK;                      /* leaves keep their gradient anyway */
    t->retains_grad = 1;
    return link_retain(t);
}

mp_status mp_retain_follow(mp_tensor *t)
{
    if (!t->retains_grad || t->retain_node == t->grad_fn)
        return MP_OK;
    if (t->retain_node)
        unlink_retain(t);
    return t->grad_fn ? link_retain(t) : MP_OK;
}

/* .grad of a non-leaf that retains it: the first gradient copied, later ones added */
static mp_status retain_store(mp_tensor *t, mp_tensor *g)
{
    mp_tensor *sum;
    mp_status st = t->grad ? mp_op_call(MP_OP_ADD, t->grad, g, 1.0, &sum)
                           : mp_tensor_cast(g, t->dtype, &sum);
    if (st != MP_OK)
        return st;
    mp_tensor_decref(t->grad);
    t->grad = sum;
    return MP_OK;
}

/* ---- running ---- */

mp_status mp_hooks_run_grad(mp_hook *list, int k, mp_tensor **grad)
{
    mp_status st = MP_OK;
    running++;
    for (mp_hook *h = list; h && st == MP_OK; h = h->next)
        if (h->kind == MP_HOOK_TENSOR && !h->removed && h->output_nr == k)
            st = h->fn(h->ctx, NULL, grad);
    for (mp_hook *h = list; h && st == MP_OK; h = h->next)
        if (h->kind == MP_HOOK_RETAIN && !h->removed && h->output_nr == k && h->tensor)
            st = retain_store(h->tensor, *grad);
    running--;
    return st;
}

mp_status mp_hooks_run_post(mp_hook *list, mp_tensor *leaf)
{
    mp_status st = MP_OK;
    running++;
    for (mp_hook *h = list; h && st == MP_OK; h = h->next)
        if (h->kind == MP_HOOK_POST_ACCUMULATE && !h->removed)
            st = h->fn(h->ctx, leaf, NULL);
    running--;
    return st;
}

/* ---- owners dying ---- */

void mp_hook_list_release(mp_hook **list)
{
    mp_hook *h = *list;
    *list = NULL;
    while (h) {
        mp_hook *next = h->next;
        mp_hook_remove(h);
        mp_hook_decref(h);
        h = next;
    }
}

void mp_tensor_release_hooks(mp_tensor *t)
{
    if (t->retain_node)
        unlink_retain(t);
    mp_hook_list_release(&t->hooks);
}
