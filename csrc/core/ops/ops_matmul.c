/* ops_matmul.c - mm, bmm, matmul, addmm, baddbmm and linear: each checks its arguments (torch's
 * messages, naming the op and both shapes), then describes itself as a batched product
 * A' @ B' (+ bias) over views of its inputs - 1-D operands gain a unit dim, linear's weight is
 * transposed - so one forward and one backward serve all five. The arithmetic is
 * matmul_core.c; gradients are products too, with transposes as views and broadcast batch
 * dims summed inside the product. */
#include <string.h>

#include "../amp/autocast.h"
#include "../elementwise.h"
#include "../backend.h"
#include "matmul_core.h"
#include "ops.h"
#include "../view.h"

enum { MM_A_VEC = 1, MM_B_VEC = 2, MM_B_T = 4 };

typedef struct {
    const char *op, *node;
    mp_tensor *a, *b, *bias;
    int flags;
    double alpha, beta;
    int pos[3];                  /* node input index of a, b and bias (-1: no bias) */
} mm_spec;

/* A' as a view: a 1-D a becomes (1, K). */
static mp_status prime_a(mp_tensor *a, int flags, mp_tensor **ap)
{
    if (flags & MM_A_VEC)
        return mp_view_unsqueeze(a, 0, ap);
    mp_tensor_incref(*ap = a);
    return MP_OK;
}

/* B' as a view: MM_B_T transposes the (2-D) weight; a 1-D b becomes (K, 1). */
static mp_status prime_b(mp_tensor *b, int flags, mp_tensor **bp)
{
    if (flags & MM_B_T)
        return mp_view_transpose(b, 0, 1, bp);
    if (flags & MM_B_VEC)
        return mp_view_unsqueeze(b, 1, bp);
    mp_tensor_incref(*bp = b);
    return MP_OK;
}

/* full: the product's shape (batch..., M, N); fin: the result's (unit dims of 1-D operands
 * dropped). */
static mp_status result_shapes(mp_tensor *ap, mp_tensor *bp, int flags, const char *op,
                               int64_t *full, int *nfull, int64_t *fin, int *nfin)
{
    int nb, n;
    mp_status st = mp_matmul_batch_shape(ap, bp, op, full, &nb);
    if (st != MP_OK)
        return st;
    full[nb] = ap->shape[ap->ndim - 2];
    full[nb + 1] = bp->shape[bp->ndim - 1];
    *nfull = nb + 2;
    memcpy(fin, full, sizeof(int64_t) * (size_t)nb);
    n = nb;
    if (!(flags & MM_A_VEC))
        fin[n++] = full[nb];
    if (!(flags & MM_B_VEC))
        fin[n++] = full[nb + 1];
    *nfin = n;
    return MP_OK;
}

/* The shape of input i with the unit dim its spec adds (1-D a or b). */
static void primed_shape(mp_node *n, int i, int add_front, int add_back, int64_t *shape,
                         int *nd)
{
    int k;
    const int64_t *s = mp_node_in_shape(n, i, &k);
    *nd = 0;
    if (add_front)
        shape[(*nd)++] = 1;
    for (int d = 0; d < k; d++)
        shape[(*nd)++] = s[d];
    if (add_back)
        shape[(*nd)++] = 1;
}

static mp_status grad_bias(mp_node *n, int i, mp_tensor *g, double beta, mp_tensor **out)
{
    int nd;
    const int64_t *shape = mp_node_in_shape(n, i, &nd);
    mp_tensor *s = NULL, *k = NULL;
    mp_status st = mp_sum_to_shape(g, shape, nd, &s);
    if (st != MP_OK || beta == 1.0) {
        *out = s;
        return st;
    }
    if ((st = mp_scalar_tensor(beta, MP_DTYPE_FLOAT32, &k)) == MP_OK)
        st = mp_op_mul(s, k, out);
    mp_tensor_decref(s);
    mp_tensor_decref(k);
    return st;
}

/* grad of a = g' @ B'^T, grad of b = A'^T @ g' (for a transposed weight: g'^T @ A'), each
 * summed over the batch dims its input broadcast along. */
static mp_status grads_ab(mp_node *n, mp_tensor *gf, mp_tensor *ap, mp_tensor *bp, int flags,
                          mp_tensor **ga, mp_tensor **gb)
{
    int pa = (int)n->iargs[0], pb = (int)n->iargs[1], nd, ond;
    int64_t shape[MP_MAX_DIMS];
    const int64_t *oshape;
    double alpha = n->fargs[0];
    mp_tensor *t1 = NULL, *t2 = NULL;
    mp_status st = MP_OK;
    if (ga && (st = mp_view_transpose(bp, -1, -2, &t1)) == MP_OK) {
        primed_shape(n, pa, flags & MM_A_VEC, 0, shape, &nd);
        oshape = mp_node_in_shape(n, pa, &ond);
        st = mp_matmul_product(gf, t1, NULL, alpha, 0.0, oshape, ond, shape, nd,
                               n->in_dtypes[pa], "matmul backward", ga);
    }
    if (st == MP_OK && gb) {
        oshape = mp_node_in_shape(n, pb, &ond);
        /* a 16-bit weight that is a cast of an fp32 one (autocast's): its gradient goes
         * straight into fp32, rounded as the 16-bit product would be (autograd.h) */
        mp_dtype gdt = n->in_dtypes[pb];
        int wide = alpha == 1.0 && mp_autograd_grad_dtype_for(n, pb) != gdt;
        mp_tensor *x = NULL, *y = NULL;
        const int64_t *ps = oshape;
        int pnd = ond;
        if (flags & MM_B_T) {
            st = mp_view_transpose(gf, -1, -2, &t2);
            x = t2, y = ap;
        } else if ((st = mp_view_transpose(ap, -1, -2, &t2)) == MP_OK) {
            primed_shape(n, pb, 0, flags & MM_B_VEC, shape, &nd);
            x = t2, y = gf, ps = shape, pnd = nd;
        }
        if (st == MP_OK && wide) {
            st = mp_matmul_product_rounded(x, y, oshape, ond, ps, pnd, gdt, "matmul backward",
                                           gb);
            if (st == MP_OK)
                mp_node_grad_rounded(n, pb);
        } else if (st == MP_OK) {
            st = mp_matmul_product(x, y, NULL, alpha, 0.0, oshape, ond, ps, pnd, gdt,
                                   "matmul backward", gb);
        }
    }
    mp_tensor_decref(t1);
    mp_tensor_decref(t2);
    return st;
}

static mp_status mm_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    int pa = (int)n->iargs[0], pb = (int)n->iargs[1], pbias = (int)n->iargs[2];
    int flags = (int)n->iargs[3], need_a = n->next[pa].node != NULL;
    int need_b = n->next[pb].node != NULL;
    mp_tensor *a = need_b ? mp_node_saved(n, 0) : NULL, *b = need_a ? mp_node_saved(n, 1) : NULL;
    mp_tensor *ap = NULL, *bp = NULL, *gf = NULL, *g = gout[0];
    if ((need_b && !a) || (need_a && !b))
        return MP_ERR_RUNTIME;
    mp_status st = MP_OK;
    if (pbias >= 0 && n->next[pbias].node)
        st = grad_bias(n, pbias, g, n->fargs[1], &gin[pbias]);
    if (st != MP_OK || (!need_a && !need_b))
        return st;
    int64_t full[MP_MAX_DIMS];
    int nb = g->ndim - !(flags & MM_A_VEC) - !(flags & MM_B_VEC);
    memcpy(full, g->shape, sizeof(int64_t) * (size_t)nb);
    full[nb] = flags & MM_A_VEC ? 1 : g->shape[nb];
    full[nb + 1] = flags & MM_B_VEC ? 1 : g->shape[g->ndim - 1];
    st = mp_view_reshape(g, full, nb + 2, 0, &gf);
    if (st == MP_OK && a)
        st = prime_a(a, flags, &ap);
    if (st == MP_OK && b)
        st = prime_b(b, flags, &bp);
    if (st == MP_OK)
        st = grads_ab(n, gf, ap, bp, flags, need_a ? &gin[pa] : NULL, need_b ? &gin[pb] : NULL);
    mp_tensor_decref(ap);
    mp_tensor_decref(bp);
    mp_tensor_decref(gf);
    return st;
}

static mp_status record(const mm_spec *s, mp_tensor **out)
{
    mp_tensor *ins[3] = {NULL, NULL, NULL};
    int n_in = s->bias ? 3 : 2;
    ins[s->pos[0]] = s->a;
    ins[s->pos[1]] = s->b;
    if (s->bias)
        ins[s->pos[2]] = s->bias;
    mp_node *node;
    mp_status st = mp_autograd_record(s->node, mm_backward, ins, n_in, out, 1, &node);
    if (st != MP_OK || !node)
        return st;
    for (int i = 0; i < 3; i++)
        node->iargs[i] = s->bias || i < 2 ? s->pos[i] : -1;
    node->iargs[3] = s->flags;
    node->fargs[0] = s->alpha;
    node->fargs[1] = s->beta;
    /* grad of a needs b and vice versa: save only what a requested gradient reads */
    if (node->next[s->pos[1]].node)
        st = mp_node_save(node, 0, s->a);
    if (st == MP_OK && node->next[s->pos[0]].node)
        st = mp_node_save(node, 1, s->b);
    return st;
}

static mp_status run(const mm_spec *s, mp_tensor **out)
{
    mp_tensor *ap = NULL, *bp = NULL;
    int64_t full[MP_MAX_DIMS], fin[MP_MAX_DIMS];
    int nfull, nfin;
    *out = NULL;
    mp_status st = prime_a(s->a, s->flags, &ap);
    if (st == MP_OK)
        st = prime_b(s->b, s->flags, &bp);
    if (st == MP_OK)
        st = result_shapes(ap, bp, s->flags, s->op, full, &nfull, fin, &nfin);
    if (st == MP_OK)
        st = mp_matmul_product(ap, bp, s->bias, s->alpha, s->beta, fin, nfin, full, nfull,
                               s->a->dtype, s->op, out);
    mp_tensor_decref(ap);
    mp_tensor_decref(bp);
    if (st == MP_OK && (st = record(s, out)) != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

/* ---- argument checks ---- */

static mp_status check_dtypes(const char *op, const mp_tensor *a, const mp_tensor *b,
                              const mp_tensor *bias)
{
    if (a->dtype != b->dtype)
        return mp_error(MP_ERR_RUNTIME, "%s: expected m1 and m2 to have the same dtype, but "
                        "got: %s != %s", op, mp_dtype_name(a->dtype),
                        mp_dtype_name(b->dtype));
    if (bias && bias->dtype != a->dtype)
        return mp_error(MP_ERR_RUNTIME, "%s: self and mat2 must have the same dtype, but got "
                        "%s and %s", op, mp_dtype_name(bias->dtype),
                        mp_dtype_name(b->dtype));
    if (a->dtype == MP_DTYPE_BOOL)
        return mp_error(MP_ERR_TYPE, "%s: \"addmm_impl_cpu_\" not implemented for 'Bool' "
                        "(matrix products take float32, float16, bfloat16 or int64)", op);
    return MP_OK;
}

static mp_status check_matrix(const char *op, const char *name, const mp_tensor *t, int nd)
{
    if (t->ndim == nd)
        return MP_OK;
    if (nd == 3)
        return mp_error(MP_ERR_RUNTIME, "%s: %s must be a 3D tensor, got %d-D tensor", op,
                        name, t->ndim);
    return mp_error(MP_ERR_RUNTIME, "%s: %s must be a matrix, got %d-D tensor", op, name,
                    t->ndim);
}

static mp_status cannot_multiply(const char *op, int64_t m, int64_t k, int64_t k2, int64_t n)
{
    return mp_error(MP_ERR_SHAPE, "%s: mat1 and mat2 shapes cannot be multiplied (%lldx%lld "
                    "and %lldx%lld)", op, (long long)m, (long long)k, (long long)k2,
                    (long long)n);
}

/* ---- entry points ---- */

mp_status mp_op_mm(mp_tensor *a, mp_tensor *b, mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_MM, mp_op_mm(ac_[0], ac_[1], out), a, b);
    mp_status st = check_matrix("mm", "self", a, 2);
    if (st == MP_OK)
        st = check_matrix("mm", "mat2", b, 2);
    if (st == MP_OK)
        st = check_dtypes("mm", a, b, NULL);
    if (st != MP_OK)
        return st;
    if (a->shape[1] != b->shape[0])
        return cannot_multiply("mm", a->shape[0], a->shape[1], b->shape[0], b->shape[1]);
    mm_spec s = {"mm", "MmBackward0", a, b, NULL, 0, 1.0, 0.0, {0, 1, -1}};
    return run(&s, out);
}

mp_status mp_op_bmm(mp_tensor *a, mp_tensor *b, mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_BMM, mp_op_bmm(ac_[0], ac_[1], out), a, b);
    mp_status st = check_matrix("bmm", "batch1", a, 3);
    if (st == MP_OK)
        st = check_matrix("bmm", "batch2", b, 3);
    if (st == MP_OK)
        st = check_dtypes("bmm", a, b, NULL);
    if (st != MP_OK)
        return st;
    if (a->shape[0] != b->shape[0] || a->shape[2] != b->shape[1])
        return mp_error(MP_ERR_SHAPE, "bmm: Expected size for first two dimensions of batch2 "
                        "tensor to be: [%lld, %lld] but got: [%lld, %lld].",
                        (long long)a->shape[0], (long long)a->shape[2], (long long)b->shape[0],
                        (long long)b->shape[1]);
    mm_spec s = {"bmm", "BmmBackward0", a, b, NULL, 0, 1.0, 0.0, {0, 1, -1}};
    return run(&s, out);
}

static const char *matmul_node(int na, int nb)
{
    if (na == 1 && nb == 1)
        return "DotBackward0";
    if (na == 2 && nb == 1)
        return "MvBackward0";
    return na == 2 && nb == 2 ? "MmBackward0" : "MatmulBackward0";
}

mp_status mp_op_matmul(mp_tensor *a, mp_tensor *b, mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_MATMUL, mp_op_matmul(ac_[0], ac_[1], out), a, b);
    if (a->ndim == 0 || b->ndim == 0)
        return mp_error(MP_ERR_RUNTIME, "both arguments to matmul need to be at least 1D, but "
                        "they are %dD and %dD", a->ndim, b->ndim);
    mp_status st = check_dtypes("matmul", a, b, NULL);
    if (st != MP_OK)
        return st;
    int64_t k = a->shape[a->ndim - 1], k2 = b->shape[b->ndim == 1 ? 0 : b->ndim - 2];
    if (k != k2 && a->ndim == 1 && b->ndim == 1)
        return mp_error(MP_ERR_SHAPE, "matmul: inconsistent tensor size, expected tensor "
                        "[%lld] and src [%lld] to have the same number of elements, but got "
                        "%lld and %lld elements respectively", (long long)k, (long long)k2,
                        (long long)k, (long long)k2);
    if (k != k2 && b->ndim == 1)
        return mp_error(MP_ERR_SHAPE, "matmul: size mismatch, got input (%lld), mat "
                        "(%lldx%lld), vec (%lld)", (long long)a->shape[a->ndim - 2],
                        (long long)a->shape[a->ndim - 2], (long long)k, (long long)k2);
    if (k != k2)
        return cannot_multiply("matmul", a->ndim == 1 ? 1 : a->shape[a->ndim - 2], k, k2,
                               b->shape[b->ndim - 1]);
    int flags = (a->ndim == 1 ? MM_A_VEC : 0) | (b->ndim == 1 ? MM_B_VEC : 0);
    mm_spec s = {"matmul", matmul_node(a->ndim, b->ndim), a, b, NULL, flags, 1.0, 0.0,
                 {0, 1, -1}};
    return run(&s, out);
}

mp_status mp_op_addmm(mp_tensor *bias, mp_tensor *a, mp_tensor *b, double beta, double alpha,
                      mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_ADDMM, mp_op_addmm(ac_[0], ac_[1], ac_[2], beta, alpha, out),
                      bias, a, b);
    mp_status st = check_matrix("addmm", "mat1", a, 2);
    if (st == MP_OK)
        st = check_matrix("addmm", "mat2", b, 2);
    if (st == MP_OK)
        st = check_dtypes("addmm", a, b, bias);
    if (st != MP_OK)
        return st;
    if (a->shape[1] != b->shape[0])
        return cannot_multiply("addmm", a->shape[0], a->shape[1], b->shape[0], b->shape[1]);
    mm_spec s = {"addmm", "AddmmBackward0", a, b, bias, 0, alpha, beta, {1, 2, 0}};
    return run(&s, out);
}

mp_status mp_op_baddbmm(mp_tensor *bias, mp_tensor *a, mp_tensor *b, double beta,
                        double alpha, mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_BADDBMM,
                      mp_op_baddbmm(ac_[0], ac_[1], ac_[2], beta, alpha, out), bias, a, b);
    mp_status st = check_matrix("baddbmm", "batch1", a, 3);
    if (st == MP_OK)
        st = check_matrix("baddbmm", "batch2", b, 3);
    if (st == MP_OK)
        st = check_dtypes("baddbmm", a, b, bias);
    if (st != MP_OK)
        return st;
    if (a->shape[0] != b->shape[0] || a->shape[2] != b->shape[1])
        return mp_error(MP_ERR_SHAPE, "baddbmm: Expected size for first two dimensions of "
                        "batch2 tensor to be: [%lld, %lld] but got: [%lld, %lld].",
                        (long long)a->shape[0], (long long)a->shape[2], (long long)b->shape[0],
                        (long long)b->shape[1]);
    mm_spec s = {"baddbmm", "BaddbmmBackward0", a, b, bias, 0, alpha, beta, {1, 2, 0}};
    return run(&s, out);
}

mp_status mp_op_linear(mp_tensor *x, mp_tensor *w, mp_tensor *bias, mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_LINEAR, mp_op_linear(ac_[0], ac_[1], ac_[2], out), x, w, bias);
    if (x->ndim == 0 || w->ndim == 0 || w->ndim > 2)
        return mp_error(MP_ERR_RUNTIME, "linear: input must be at least 1-D and weight 1-D or "
                        "2-D, but they are %dD and %dD", x->ndim, w->ndim);
    mp_status st = check_dtypes("linear", x, w, bias);
    if (st != MP_OK)
        return st;
    int64_t k = x->shape[x->ndim - 1], kw = w->shape[w->ndim - 1];
    if (k != kw) {
        int64_t rows = k ? mp_tensor_numel(x) / k : 0;
        return cannot_multiply("linear", rows, k, kw, w->ndim == 2 ? w->shape[0] : 1);
    }
    int flags = (x->ndim == 1 ? MM_A_VEC : 0) | (w->ndim == 1 ? MM_B_VEC : MM_B_T);
    const char *node = x->ndim != 2 || w->ndim != 2 ? "LinearBackward0"
                       : bias ? "AddmmBackward0" : "MmBackward0";
    mm_spec s = {"linear", node, x, w, bias, flags, 1.0, 1.0, {0, 1, 2}};
    return run(&s, out);
}
