/* copy.h - moving data between tensors: strided copy with dtype conversion, fill, cast,
 * contiguous. Conversions between float dtypes use the CPU kernel table on contiguous runs
 * and the shared per-element functions otherwise, so both give identical bits. */
#ifndef MP_COPY_H
#define MP_COPY_H

#include "tensor.h"

/* A Python number: integers keep full int64 precision. */
typedef struct {
    double f;
    int64_t i;
    int is_int;
} mp_scalar;

/* dst[...] = src[...] converted to dst's dtype; shapes must match (expand src first). */
mp_status mp_tensor_copy_(mp_tensor *dst, mp_tensor *src);
mp_status mp_tensor_fill_(mp_tensor *t, mp_scalar value);
/* Contiguous t[i] = start + i * step (integer arithmetic when all are integers). */
mp_status mp_tensor_arange_(mp_tensor *t, mp_scalar start, mp_scalar step);
/* A new contiguous tensor of `dtype` holding src's values. */
mp_status mp_tensor_cast(mp_tensor *src, mp_dtype dtype, mp_tensor **out);
/* src itself (new reference) when contiguous, else a contiguous copy. */
mp_status mp_tensor_contiguous(mp_tensor *src, mp_tensor **out);
/* Element `flat_index` (row-major over the shape) as a scalar. */
mp_scalar mp_tensor_get_item(const mp_tensor *t, int64_t flat_index);

/* Per-element conversions used by the generic paths (shared with other core files). */
double mp_load_f64(mp_dtype dt, const char *p);
int64_t mp_load_i64(mp_dtype dt, const char *p);
void mp_store_scalar(mp_dtype dt, char *p, mp_scalar v);

#endif
