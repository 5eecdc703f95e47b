/* chunk.h - strided runs of any dtype loaded into small fp32, int64 or truth (0/1 byte)
 * buffers, and stored back: the loads and stores of the kernels that need torch's exact
 * promotion rules (comparisons, logic, remainder, exact int64 unary ops) rather than
 * mp_map's "everything through fp32". A stride of 0 (a broadcast scalar) is loaded once. */
#ifndef MP_CHUNK_H
#define MP_CHUNK_H

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
/* n elements as 1 (nonzero, NaN included) or 0. */
void mp_chunk_truth(const char *p, int64_t stride, mp_dtype dt, int64_t n, uint8_t *buf);

/* Stores: bytes into a bool tensor; int64 values into an int64 or bool tensor; fp32 values
 * into any float dtype (rounded to nearest even). */
void mp_chunk_store_u8(char *p, int64_t stride, const uint8_t *v, int64_t n);
void mp_chunk_store_i64(char *p, int64_t stride, mp_dtype dt, const int64_t *v, int64_t n);
void mp_chunk_store_f32(char *p, int64_t stride, mp_dtype dt, const float *v, int64_t n);

/* torch's canCast for in-place results: no float -> integer/bool, no integer -> bool. On
 * failure: "result type Float can't be cast to the desired output type Long". */
mp_status mp_check_result_cast(mp_dtype result, mp_dtype self);

#endif
