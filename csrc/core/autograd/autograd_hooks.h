/* autograd_hooks.h - hooks on gradients, as torch's: tensor hooks (register_hook) that see and
 * may replace the gradient flowing into a tensor, retain_grad() on non-leaves, and
 * post-accumulate hooks on leaves (called with the leaf once its .grad is updated). A leaf's
 * hooks live on the tensor; a non-leaf's on its grad_fn, keyed by output number, so hooks
 * registered before an in-place op see the gradient of the value they were registered on.
 * Hooks run in registration order; retain_grad's runs after the tensor hooks of its output. */
#ifndef MP_AUTOGRAD_HOOKS_H
#define MP_AUTOGRAD_HOOKS_H

#include "autograd.h"

enum { MP_HOOK_TENSOR, MP_HOOK_RETAIN, MP_HOOK_POST_ACCUMULATE };

/* TENSOR: *grad is the gradient (a reference the caller owns); to replace it, decref it and
 * store a new reference. POST_ACCUMULATE: t is the leaf, grad NULL. A failure stops backward
 * with the status (the bindings keep a Python exception set). */
typedef mp_status (*mp_hook_fn)(void *ctx, mp_tensor *t, mp_tensor **grad);

typedef struct mp_hook {
    struct mp_hook *next;
    int64_t refcount;           /* the list's, and each handle's */
    int kind, output_nr, removed;
    mp_hook_fn fn;
    void *ctx;
    void (*release)(void *ctx); /* called once, when removed or when its owner dies */
    mp_tensor *tensor;          /* RETAIN: whose .grad is set (not owned; it unlinks itself) */
} mp_hook;

/* Adds a TENSOR or POST_ACCUMULATE hook to t with torch's checks; *handle (may be NULL)
 * receives a new reference for mp_hook_remove. On error ctx is not taken. */
mp_status mp_tensor_add_hook(mp_tensor *t, int kind, mp_hook_fn fn, void *ctx,
                             void (*release)(void *), mp_hook **handle);
void mp_hook_remove(mp_hook *h);        /* idempotent; releases ctx */
void mp_hook_decref(mp_hook *h);
/* retain_grad(): non-leaves keep their gradient in .grad (a no-op on leaves). */
mp_status mp_tensor_retain_grad(mp_tensor *t);
/* After t->grad_fn changed (in-place, view refresh): retain_grad follows the new node. */
mp_status mp_retain_follow(mp_tensor *t);

/* Engine: the TENSOR then RETAIN hooks of output k on *grad; POST_ACCUMULATE hooks. */
mp_status mp_hooks_run_grad(mp_hook *list, int k, mp_tensor **grad);
mp_status mp_hooks_run_post(mp_hook *list, mp_tensor *leaf);

/* Owners dying: a node's list, a tensor's hooks and retain link. */
void mp_hook_list_release(mp_hook **list);
void mp_tensor_release_hooks(mp_tensor *t);

#endif
