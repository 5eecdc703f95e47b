/* chunk.h - strided runs of any dtype loaded into small fp32, int64 or truth (0/1 byte)
 * buffers, and stored back: the loads and stores of the kernels that need torch's exact
 * promotion rules (comparisons, logic, remainder, exact int64 unary ops) rather than
 * mp_map's "everything through fp32". A stride of 0 (a broadcast scalar) is loaded once. */
#ifndef MP_CHUNK_H
#define MP_CHUNK_H

#include "copy.h"
#include "tensor.h"

#define MP_CHUNK 256

/* n elements of dtype dt at p (stride in elements) as fp32, each rounded to `round_to`
 * first (fp16/bf16; anything else: no rounding). int64 is converted with one rounding.
 * Returns buf, or p itself for contiguous float32 that needs no rounding. */
const float *mp_chunk_f32(const char *p, int64_t stride, mp_dtype dt, mp_dtype round_to,
                          int64_t n, float *buf);
/* n elements as int64 (bool as 0/1; floats truncate, as a cast). */
const int64_t *mp_chunk_i64(const char *p, int64_t stride, mp_dtype dt, int64_t n,
                            int64_t *buf);
/* The same, converted to the common dtype `as` first: into uint8, an int64 operand (a 0-d
 * tensor or Python int beside a uint8 tensor) wraps modulo 256, as torch's cast does. */
const int64_t *mp_chunk_i64_as(const char *p, int64_t stride, mp_dtype dt, mp_dtype as,
                               int64_t n, int64_t *buf);
/* n elements as 1 (nonzero, NaN included) or 0. */
void mp_chunk_truth(const char *p, int64_t stride, mp_dtype dt, int64_t n, uint8_t *buf);
/* The same in the common dtype `as` (an int64 256 beside a uint8 tensor is 0, so false). */
void mp_chunk_truth_as(const char *p, int64_t stride, mp_dtype dt, mp_dtype as, int64_t n,
                       uint8_t *buf);

/* Stores: bytes into a bool tensor; int64 values into an int64, uint8 (modulo 256) or bool
 * tensor; fp32 values
 * into any float dtype (rounded to nearest even). */
void mp_chunk_store_u8(char *p, int64_t stride, const uint8_t *v, int64_t n);
void mp_chunk_store_i64(char *p, int64_t stride, mp_dtype dt, const int64_t *v, int64_t n);
void mp_chunk_store_f32(char *p, int64_t stride, mp_dtype dt, const float *v, int64_t n);

/* torch's check on a number written into a uint8 tensor by fill_, full, masked_fill,
 * index_fill, scatter, pad, clamp, where, a setitem or as pow's exponent (arithmetic wraps
 * instead): integers in [-255, 255] (negatives wrap), floats in [0, 255]. Other dtypes pass.
 * On failure: "value cannot be converted to type uint8_t without overflow". */
mp_status mp_check_scalar_fits(mp_dtype dt, mp_scalar v);

/* torch's canCast for in-place results: no float -> integer/bool, no integer -> bool. On
 * failure: "result type Float can't be cast to the desired output type Long". */
mp_status mp_check_result_cast(mp_dtype result, mp_dtype self);

#endif
