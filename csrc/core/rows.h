/* rows.h - a tensor seen as rows along one dimension, for the ops that work on whole rows
 * (softmax, max over a dim, layer_norm, losses over classes). The dim is moved last and the
 * data made contiguous (no copy when it already is), so row r is `len` adjacent elements.
 * Rows are read as fp32 (fp16/bf16 through the CPU conversion kernels) and written back in
 * the storage dtype; results return to the input's dimension order as contiguous tensors.
 * A 0-d tensor is one row of one element. */
#ifndef MP_ROWS_H
#define MP_ROWS_H

#include "dtypes.h"     /* mp_dtype_torch_name, for messages */
#include "tensor.h"

/* a with `dim` moved last, contiguous (new reference; a itself when already so). */
mp_status mp_rows_of(mp_tensor *a, int dim, mp_tensor **rows);
/* The inverse: `rows` (a shape with `dim` moved last) in the original order, contiguous. */
mp_status mp_rows_restore(mp_tensor *rows, int dim, mp_tensor **out);
/* Shape of a with dim moved last. */
void mp_rows_shape(const int64_t *shape, int ndim, int dim, int64_t *out);

/* Row r (len elements) of contiguous data of dtype dt as fp32: buf, or the data itself when
 * it already is fp32. */
const float *mp_row_load(mp_dtype dt, const void *data, int64_t r, int64_t len, float *buf);
void mp_row_store(mp_dtype dt, void *data, int64_t r, int64_t len, const float *src);

/* Calls fn once per row of the inputs (equal shapes, any dtypes) along `dim`, on fp32 rows;
 * fn writes the result row, which becomes a new tensor of out_dtype in the inputs' shape.
 * Row numbers count the other dims in row-major order (the order of a reduced tensor). Rows
 * may run at once on the thread pool: fn writes only its own row and per-row slots of ctx
 * (see mp_row_aux.serial for one that accumulates across rows). */
#define MP_ROWS_MAX_IN 3
typedef void (*mp_row_fn)(const float *const *in, float *out, int64_t len, int64_t row,
                          void *ctx);
mp_status mp_rows_map(mp_tensor *const *ins, int n_in, int dim, mp_dtype out_dtype,
                      mp_row_fn fn, void *ctx, mp_tensor **out);
/* The rows run as a kernel on the inputs' device (MP_KERNEL_ROWS), so ctx must not hold
 * device addresses of its own: the tensors a row function reads or writes besides its rows
 * (weights, per-row statistics, accumulators) are listed here, and the kernel stores each
 * one's address, as the device hands it over, into *slot[i] (a field of ctx) first. */
#define MP_ROWS_MAX_AUX 6
typedef struct {
    int n;
    mp_tensor *t[MP_ROWS_MAX_AUX];
    void **slot[MP_ROWS_MAX_AUX];
    int serial;             /* fn accumulates across rows: run them in order on one thread
                               (otherwise rows may run at once on the thread pool) */
} mp_row_aux;
mp_status mp_rows_map_aux(mp_tensor *const *ins, int n_in, int dim, mp_dtype out_dtype,
                          mp_row_fn fn, void *ctx, const mp_row_aux *aux, mp_tensor **out);

/* Sum of x[0..n) (and of (x - c)^2) in double with four partial sums, so the adds overlap;
 * the order is fixed, so results do not depend on anything but the data. */
double mp_sum_f32(const float *x, int64_t n);
double mp_sum_sq_dev_f32(const float *x, int64_t n, double c);


#endif
