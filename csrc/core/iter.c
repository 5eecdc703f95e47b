/* iter.c - coalescing and the outer-loop walk for mp_iter (see iter.h). */
#include "iter.h"

#include "../cpu/parallel.h"

void mp_iter_init(mp_iter *it, mp_tensor *const *ops, int nops)
{
    const mp_tensor *t0 = ops[0];
    it->nops = nops;
    it->numel = mp_tensor_numel(t0);
    for (int k = 0; k < nops; k++) {
        it->base[k] = mp_tensor_data(ops[k]);
        it->itemsize[k] = mp_dtype_size(ops[k]->dtype);
    }
    int nd = 0;
    for (int d = 0; d < t0->ndim; d++) {
        if (t0->shape[d] == 1)
            continue;
        int merge = nd > 0;
        for (int k = 0; k < nops && merge; k++)
            merge = it->strides[k][nd - 1] == ops[k]->strides[d] * t0->shape[d];
        if (merge) {
            it->shape[nd - 1] *= t0->shape[d];
            for (int k = 0; k < nops; k++)
                it->strides[k][nd - 1] = ops[k]->strides[d];
            continue;
        }
        it->shape[nd] = t0->shape[d];
        for (int k = 0; k < nops; k++)
            it->strides[k][nd] = ops[k]->strides[d];
        nd++;
    }
    if (nd == 0) {
        it->shape[0] = 1;
        for (int k = 0; k < nops; k++)
            it->strides[k][0] = 1;
        nd = 1;
    }
    it->ndim = nd;
}

typedef struct {
    const mp_iter *it;
    mp_iter_fn fn;
    void *ctx;
} range_walk;

/* Elements [begin, end) of the walk in row-major order: the first and last inner runs may be
 * partial. */
static void walk_range(void *vw, int64_t begin, int64_t end)
{
    const range_walk *w = vw;
    const mp_iter *it = w->it;
    int inner = it->ndim - 1;
    int64_t idx[MP_MAX_DIMS], rest = begin;
    for (int d = inner; d >= 0; d--) {
        idx[d] = rest % it->shape[d];
        rest /= it->shape[d];
    }
    char *ptrs[MP_ITER_MAX_OPS];
    int64_t inner_strides[MP_ITER_MAX_OPS];
    for (int k = 0; k < it->nops; k++)
        inner_strides[k] = it->strides[k][inner];
    for (int64_t at = begin; at < end;) {
        int64_t n = it->shape[inner] - idx[inner];
        if (n > end - at)
            n = end - at;
        for (int k = 0; k < it->nops; k++) {
            int64_t off = 0;
            for (int d = 0; d <= inner; d++)
                off += idx[d] * it->strides[k][d];
            ptrs[k] = it->base[k] + off * (int64_t)it->itemsize[k];
        }
        w->fn(ptrs, inner_strides, n, w->ctx);
        at += n;
        idx[inner] = 0;
        int d = inner - 1;
        while (d >= 0 && ++idx[d] == it->shape[d])
            idx[d--] = 0;
    }
}

void mp_iter_run(const mp_iter *it, mp_iter_fn fn, void *ctx)
{
    if (it->numel == 0)
        return;
    range_walk w = {it, fn, ctx};
    walk_range(&w, 0, it->numel);
}

void mp_iter_run_parallel(const mp_iter *it, mp_iter_fn fn, void *ctx, int64_t grain)
{
    if (it->numel < 2 * grain || mp_get_num_threads() < 2) {
        mp_iter_run(it, fn, ctx);
        return;
    }
    range_walk w = {it, fn, ctx};
    mp_parallel_for(it->numel, grain, walk_range, &w);
}

typedef struct {
    const mp_iter *it;
    int dim;
    int64_t unit;           /* indices of dim per unit of the parallel range */
    mp_iter_fn fn;
    void *ctx;
} split_walk;

static void walk_split(void *vw, int64_t u0, int64_t u1)
{
    const split_walk *w = vw;
    mp_iter sub = *w->it;
    int d = w->dim;
    int64_t begin = u0 * w->unit, end = u1 * w->unit;
    if (end > sub.shape[d])
        end = sub.shape[d];
    for (int k = 0; k < sub.nops; k++)
        sub.base[k] += begin * sub.strides[k][d] * (int64_t)sub.itemsize[k];
    sub.numel = sub.numel / sub.shape[d] * (end - begin);
    sub.shape[d] = end - begin;
    mp_iter_run(&sub, w->fn, w->ctx);
}

void mp_iter_run_split(const mp_iter *it, mp_iter_fn fn, void *ctx, int64_t grain)
{
    int dim = -1;
    for (int d = 0; d < it->ndim; d++)
        if (it->strides[0][d] != 0 && (dim < 0 || it->shape[d] > it->shape[dim]))
            dim = d;
    if (dim < 0 || it->numel < 2 * grain || mp_get_num_threads() < 2) {
        mp_iter_run(it, fn, ctx);
        return;
    }
    /* a unit-stride operand 0 is cut in 64-byte units (aligned by its allocator), so no
     * cache line of it is written by two threads */
    int64_t unit = it->strides[0][dim] == 1 ? 64 / (int64_t)it->itemsize[0] : 1;
    if (unit < 1)
        unit = 1;
    int64_t units = (it->shape[dim] + unit - 1) / unit;
    int64_t per = it->numel / it->shape[dim] * unit;     /* elements per unit */
    int64_t g = (grain + per - 1) / per;
    split_walk w = {it, dim, unit, fn, ctx};
    mp_parallel_for(units, g > 1 ? g : 1, walk_split, &w);
}
