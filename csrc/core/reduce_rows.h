/* reduce_rows.h - a tensor seen as rows over a SET of dims, for the reductions and scans that
 * are not plain sums (amax/amin, prod, var/std, logsumexp, vector_norm, cumsum, sort, topk).
 * The kept dims come first (in order), then the reduced dims (in order), made contiguous: row r
 * is `len` adjacent elements, and rows are numbered like the elements of the reduced output.
 * With one reduced dim this is rows.h's layout. Also the scans shared by max/min/amax/amin
 * (first NaN wins; ties give the first occurrence) and per-row result stores. */
#ifndef MP_REDUCE_ROWS_H
#define MP_REDUCE_ROWS_H

#include "tensor.h"

typedef struct {
    mp_tensor *rows;                /* owned, contiguous, a's dtype */
    int64_t nrows, len;
    int64_t oshape[MP_MAX_DIMS];    /* the reduction's output shape (keepdim applied) */
    int ond;
} mp_rowset;

/* mask: bit d reduces dim d (bits above a->ndim are ignored; 0-d tensors are one row of one). */
mp_status mp_rowset_of(mp_tensor *a, uint32_t mask, int keepdim, mp_rowset *rs);
void mp_rowset_release(mp_rowset *rs);
/* g holds nrows * len elements in the row layout of an input of shape ishape (any shape of
 * that numel, contiguous); out is g in ishape's dim order (a new contiguous tensor). topk
 * passes its output shape (k in place of the dim's size). */
mp_status mp_rowset_restore(mp_tensor *g, const int64_t *ishape, int nd, uint32_t mask,
                            mp_tensor **out);

/* Index of the largest (is_min: smallest) element of a row: the first NaN if there is one,
 * else the first occurrence. Float rows are given as fp32 (exact for fp16/bf16); integer
 * rows raw (int64, or any other integer dtype through mp_load_i64). */
int64_t mp_row_extreme_f32(const float *x, int64_t len, int is_min);
int64_t mp_row_extreme_raw(mp_dtype dt, const void *x, int64_t len, int is_min);

/* A new tensor of `shape` and dtype dt with element i = v[i] (rounded once from double). */
mp_status mp_tensor_from_f64(const double *v, const int64_t *shape, int nd, mp_dtype dt,
                             mp_tensor **out);
/* An fp32 contiguous copy of t (t itself, new reference, when it already is one). */
mp_status mp_as_f32(mp_tensor *t, mp_tensor **out);
/* Error text for a reduction over an empty dim, as torch: IndexError "<name>(): Expected
 * reduction dim %d to have non-zero size." for the first reduced dim of size 0. MP_OK when
 * no reduced dim is empty. */
mp_status mp_check_reduced_nonempty(const char *name, const mp_tensor *a, uint32_t mask);

#endif
