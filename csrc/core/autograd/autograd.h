/* autograd.h - the tape: nodes recorded by ops, and the engine that runs backward in C.
 * A node knows its backward function, one edge per input (the producer node and which of its
 * outputs, or NULL when that input needs no gradient), saved tensors (detached headers, so
 * no reference cycles) and small op arguments. Leaves get an accumulate node that adds into
 * tensor->grad. Backward walks nodes in reverse creation order (a valid topological order),
 * running each leaf's accumulate node as soon as its last consumer ran. Saved tensors carry
 * the storage version they were saved at (stale ones are refused). Hooks: autograd_hooks.h.
 * Grad mode is thread-local. No Python here: user Functions plug in through `backward`. */
#ifndef MP_AUTOGRAD_H
#define MP_AUTOGRAD_H

#include "../tensor.h"

typedef struct mp_node mp_node;

/* grads_out[n_outputs] (NULL = zero) in; grads_in[n_inputs] out (NULL = no gradient). The
 * function runs with grad mode off; it must produce tensors of the input's shape (any dtype:
 * the engine casts to the input dtype). */
typedef mp_status (*mp_backward_fn)(mp_node *node, mp_tensor **grads_out,
                                    mp_tensor **grads_in);

typedef struct {
    mp_node *node;      /* owned; NULL: this input needs no gradient */
    int output_nr;
} mp_edge;

#define MP_NODE_ARGS 16

struct mp_node {
    int64_t refcount;
    const char *name;               /* e.g. "AddBackward0" (static storage) */
    mp_backward_fn backward;
    int n_inputs, n_outputs;
    mp_edge *next;                  /* n_inputs edges */
    mp_dtype *in_dtypes;            /* dtype each input gradient must have */
    int *in_ndims;                  /* shape of each input (MP_MAX_DIMS per input) */
    int64_t *in_shapes;
    mp_tensor **saved;
    int n_saved;
    int saved_freed;                /* backward ran without retain_graph */
    int64_t iargs[MP_NODE_ARGS];    /* op arguments (dims, flags, ...) */
    double fargs[MP_NODE_ARGS];
    void *ctx;                      /* op-owned extra data, freed by release_ctx */
    void (*release_ctx)(void *ctx);
    mp_tensor *leaf;                /* accumulate nodes: the leaf (owned) */
    uint64_t seq;                   /* creation order */
    int64_t scratch;                /* engine bookkeeping */
    struct mp_hook *hooks;          /* tensor hooks / retain_grad on outputs (owned) */
    int grad_passthrough;           /* backward hands its gradient on as it is (a cast) */
    uint32_t rounded_grads;         /* bit i: gin[i] is wide but holds in_dtypes[i] values */
};

/* For a node running backward: the dtype the gradient of its input i may be handed over in
 * without the engine's cast to in_dtypes[i] - FLOAT32 when that input is a 16-bit cast of an
 * fp32 tensor (a grad_passthrough node: autocast's weight cast, ToCopyBackward0) that nothing
 * else in this backward feeds and no hook or capture watches, so its gradient would only be
 * widened to fp32 on the way to the leaf; else in_dtypes[i]. A backward that takes it
 * computes the gradient rounded to in_dtypes[i] and stored as fp32 (no 16-bit tensor, no
 * widening pass), and says so with mp_node_grad_rounded(n, i) (the engine casts any other
 * wider gradient as before). */
mp_dtype mp_autograd_grad_dtype_for(mp_node *n, int i);
void mp_node_grad_rounded(mp_node *n, int i);

/* Thread-local grad mode (no_grad / enable_grad). */
int mp_grad_enabled(void);
void mp_set_grad_enabled(int enabled);

void mp_node_incref(mp_node *n);
void mp_node_decref(mp_node *n);

/* True when an op with these inputs must record a node. */
int mp_any_requires_grad(mp_tensor *const *inputs, int n);

/* Records a node for an op: edges from the inputs, outputs get grad_fn/requires_grad.
 * *node_out is NULL (and MP_OK returned) when no gradient is needed. Save tensors with
 * mp_node_save; set iargs/fargs directly. */
mp_status mp_autograd_record(const char *name, mp_backward_fn backward,
                             mp_tensor *const *inputs, int n_inputs,
                             mp_tensor *const *outputs, int n_outputs, mp_node **node_out);
/* Shape of input i as recorded (for reducing broadcast gradients). */
const int64_t *mp_node_in_shape(const mp_node *n, int i, int *ndim);
/* Saves a detached header of t (NULL allowed) in slot i (slots grow as needed), with t's
 * storage version. Save after mp_autograd_record so that a saved output names its node. */
mp_status mp_node_save(mp_node *n, int i, mp_tensor *t);
/* Saved tensor i (NULL when none was saved); NULL plus an error when the graph was already
 * freed or the tensor was modified in place after it was saved (torch's message). */
mp_tensor *mp_node_saved(mp_node *n, int i);
/* The next creation number: nodes made from now on have a larger seq. */
uint64_t mp_node_seq_now(void);
/* Records a node whatever the grad mode (inplace.c's history rewrites; views brought up to
 * date lazily): like mp_autograd_record once some input requires grad. */
mp_status mp_autograd_record_always(const char *name, mp_backward_fn backward,
                                    mp_tensor *const *inputs, int n_inputs,
                                    mp_tensor *const *outputs, int n_outputs,
                                    mp_node **node_out);
/* The accumulate node of a leaf that requires grad (a new reference), NULL when out of
 * memory. */
mp_node *mp_leaf_accumulator(mp_tensor *t);
/* Makes a stale view's grad_fn current (inplace.c): after a write into its storage, a view
 * of a base that requires grad gets a node from the base's present history. */
mp_status mp_view_refresh(mp_tensor *t);

/* A new header sharing t's storage and layout, without autograd history. */
mp_tensor *mp_tensor_detach(const mp_tensor *t);

/* Runs backward from roots with the given gradients (NULL = ones for one-element roots).
 * With capture != NULL (autograd.grad), gradients of `capture[i]` are returned in
 * captured[i] (new references, NULL when unreachable) and no leaf .grad is touched. */
mp_status mp_autograd_backward(mp_tensor *const *roots, mp_tensor *const *root_grads,
                               int n_roots, int retain_graph, mp_tensor *const *capture,
                               int n_capture, mp_tensor **captured);

/* Marks out as a view of a (when it shares a's storage) for in-place autograd: out->base is
 * a's base, or a. mp_record_view calls it; a view op that records its own node calls it too
 * (autograd/inplace.c). */
void mp_view_set_base(mp_tensor *out, mp_tensor *a);

#endif
