/* index_kernels.h - the one walk behind advanced indexing, index_put, gather, scatter and the
 * index_* ops: over a result-shaped space, a "data" operand (the tensor being indexed) is
 * addressed through its strides plus, for each index operand k, idx_k * mul_k; an "other"
 * operand (the gathered result, or the values being written) is addressed through its
 * strides. Raw pointers and strides in elements; index values were range-checked by the core
 * (negative ones are wrapped here by adding the dim's size). No allocation, no errors. */
#ifndef MP_CPU_INDEX_KERNELS_H
#define MP_CPU_INDEX_KERNELS_H

#include "../shared/mp_defs.h"

#define MP_INDEX_MAX 16     /* = MP_MAX_DIMS: at most one index operand per dim */

typedef struct {
    int ndim;                             /* >= 1 (a 0-d walk is shape [1]) */
    int64_t shape[MP_INDEX_MAX];
    char *data;                           /* element 0 of the indexed tensor */
    int64_t dstr[MP_INDEX_MAX];           /* 0 along dims that index operands address */
    char *other;
    int64_t ostr[MP_INDEX_MAX];
    int n_idx;
    const int64_t *idx[MP_INDEX_MAX];
    int64_t istr[MP_INDEX_MAX][MP_INDEX_MAX];   /* [operand][dim] */
    int64_t mul[MP_INDEX_MAX];            /* data stride of the dim operand k indexes */
    int64_t size[MP_INDEX_MAX];           /* that dim's size (to wrap negative values) */
    mp_dtype dtype;                       /* of data and other alike */
    double alpha;                         /* MP_IDX_ADD: data += alpha * other */
} mp_index_walk;

typedef enum {
    MP_IDX_GATHER,      /* other = data[...] */
    MP_IDX_PUT,         /* data[...] = other (duplicates: the last in row-major order wins) */
    MP_IDX_ADD,         /* data[...] += alpha * other (bool: or), in the data's dtype */
    MP_IDX_MUL          /* data[...] *= other (bool: and) */
} mp_index_mode;

void mp_index_run(const mp_index_walk *w, mp_index_mode mode);

#endif
