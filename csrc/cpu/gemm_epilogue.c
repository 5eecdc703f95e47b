/* gemm_epilogue.c - the GEMM's epilogue (gemm_epilogue.h). */
#include "gemm_epilogue.h"

#include "../shared/mp_math.h"
#include "copy_bytes.h"

#define MIN(x, y) ((x) < (y) ? (x) : (y))

/* C[i.., j..] for rows x cols from the fp32 accumulators acc (row stride ldacc; NULL: 0),
 * a row (up to EPI_ROW values) at a time: alpha, beta * C, bias and the activation in loops the
 * compiler vectorises, then the row goes to C - copied, or rounded by the dispatch table's
 * vector cast (bit-identical to the scalar casts) straight into C. A plain product skips the
 * arithmetic. Rows are long (run_piece hands over groups 256 columns wide), so the calls are
 * few and the stores run along C's lines. */
#define EPI_ROW 512
#define EPI_AHEAD 2
#define EPI_SHORT 16       /* narrower rows of a contiguous C are rounded many at a time */

/* Asks for the lines of C a row will be written to, a few rows ahead: each row of C is a
 * fresh miss (ldc apart, beyond the hardware prefetcher), and the stores alone kept only a
 * few misses in flight. */
static inline void prefetch_row(const char *p, size_t bytes)
{
    for (size_t o = 0; o < bytes; o += 64)
        __builtin_prefetch(p + o, 1, 3);
    __builtin_prefetch(p + bytes - 1, 1, 3);
}

/* d[0..w) = v[0..w) rounded to dt (fp16 or bf16) and widened back, exactly; d may be v. */
static void round_trip(const mp_cpu_kernels *cvt, mp_dtype dt, const float *v, float *d,
                       int64_t w)
{
    union {
        mp_half f16[EPI_ROW];
        mp_bf16 bf16[EPI_ROW];
    } h;
    if (dt == MP_DTYPE_FLOAT16) {
        cvt->f32_to_f16(v, h.f16, (size_t)w);
        cvt->f16_to_f32(h.f16, d, (size_t)w);
    } else {
        cvt->f32_to_bf16(v, h.bf16, (size_t)w);
        cvt->bf16_to_f32(h.bf16, d, (size_t)w);
    }
}

/* v[0..w) = act(alpha * acc + beta * C + bias), each term only where it is present, in that
 * order of operations (the bits of every combination). with_c: v holds the row of (fp32) C
 * on entry. The common linear-layer cases (bias alone, bias + ReLU) are loops of their own on
 * locals, since with the build's -fno-strict-aliasing a loop through the args would reload
 * them per element; the rest is one simple pass per term, each of which the compiler
 * vectorises (one loop testing every term per element stayed scalar: 1 ns per element, more
 * than the micro-kernel itself in attention's small scaled products). */
static void epilogue_row(float *v, const float *acc, int with_c, const float *bias,
                         float alpha, float beta, int act, int64_t w)
{
    if (acc && alpha == 1.0f && !with_c && bias && act == MP_GEMM_ACT_NONE) {
        for (int64_t q = 0; q < w; q++)
            v[q] = acc[q] + bias[q];
        return;
    }
    if (acc && alpha == 1.0f && !with_c && bias && act == MP_GEMM_ACT_RELU) {
        for (int64_t q = 0; q < w; q++)
            v[q] = mp_relu(acc[q] + bias[q]);
        return;
    }
    if (acc && with_c)
        for (int64_t q = 0; q < w; q++)
            v[q] = alpha * acc[q] + beta * v[q];
    else if (acc)
        for (int64_t q = 0; q < w; q++)
            v[q] = alpha * acc[q];
    else if (with_c)
        for (int64_t q = 0; q < w; q++)
            v[q] = 0.0f + beta * v[q];
    else
        for (int64_t q = 0; q < w; q++)
            v[q] = 0.0f;
    if (bias)
        for (int64_t q = 0; q < w; q++)
            v[q] += bias[q];
    if (act == MP_GEMM_ACT_RELU)
        for (int64_t q = 0; q < w; q++)
            v[q] = mp_relu(v[q]);
    else if (act == MP_GEMM_ACT_GELU)
        for (int64_t q = 0; q < w; q++)
            v[q] = mp_gelu(v[q]);
}

void mp_gemm_epilogue(const mp_gemm_args *g, const float *bias_all, const mp_cpu_kernels *cvt,
                      const float *acc, int64_t ldacc, int64_t i, int64_t j, int64_t rows,
                      int64_t cols)
{
    const float alpha = g->alpha, beta = g->beta;
    const int act = g->act, plain = acc && alpha == 1.0f && beta == 0.0f && !bias_all &&
                                    act == MP_GEMM_ACT_NONE;
    const mp_dtype cdt = g->c_dtype;
    const size_t csz = mp_dtype_size(cdt);
    float buf[EPI_ROW];
    if (cdt != MP_DTYPE_FLOAT32 && cols < EPI_SHORT && cols == g->ldc) {
        /* A narrow fp16/bf16 C with contiguous rows (the document MLP's 10 and 1 columns):
         * rows gathered in buf and rounded by one call per EPI_ROW values, not one per row
         * (the call cost more than the row). Only an fp32 C has beta. */
        const float *bias = bias_all ? bias_all + j : NULL;
        for (int64_t r0 = 0, per = EPI_ROW / cols; r0 < rows; r0 += per) {
            int64_t nr = MIN(per, rows - r0);
            for (int64_t r = 0; r < nr; r++) {
                const float *ar = acc ? acc + (r0 + r) * ldacc : NULL;
                if (plain)
                    mp_copy_bytes(buf + r * cols, ar, sizeof(float) * (size_t)cols);
                else
                    epilogue_row(buf + r * cols, ar, 0, bias, alpha, beta, act, cols);
            }
            char *out = (char *)g->c + ((i + r0) * g->ldc + j) * (int64_t)csz;
            if (cdt == MP_DTYPE_FLOAT16)
                cvt->f32_to_f16(buf, (mp_half *)out, (size_t)(nr * cols));
            else
                cvt->f32_to_bf16(buf, (mp_bf16 *)out, (size_t)(nr * cols));
        }
        return;
    }
    for (int64_t q0 = 0; q0 < cols; q0 += EPI_ROW) {
        int64_t w = MIN(EPI_ROW, cols - q0);
        const float *bias = bias_all ? bias_all + j + q0 : NULL;
        for (int64_t r = 0; r < rows; r++) {
            const float *ar = acc ? acc + r * ldacc + q0 : NULL;
            int64_t at = (i + r) * g->ldc + j + q0;
            if (r + EPI_AHEAD < rows)
                prefetch_row((const char *)g->c + (at + EPI_AHEAD * g->ldc) * (int64_t)csz,
                             (size_t)w * csz);
            const float *v = ar;
            if (!plain) {                     /* an fp32 C takes the values in place */
                float *dst = cdt == MP_DTYPE_FLOAT32 ? (float *)g->c + at : buf;
                epilogue_row(dst, ar, beta != 0.0f, bias, alpha, beta, act, w);
                v = dst;
            }
            if (cdt == MP_DTYPE_FLOAT16)
                cvt->f32_to_f16(v, (mp_half *)g->c + at, (size_t)w);
            else if (cdt == MP_DTYPE_BFLOAT16)
                cvt->f32_to_bf16(v, (mp_bf16 *)g->c + at, (size_t)w);
            else if (g->round_dtype != MP_DTYPE_FLOAT32)   /* 16-bit values in an fp32 C */
                round_trip(cvt, g->round_dtype, v, (float *)g->c + at, w);
            else if (v != (const float *)g->c + at)
                mp_copy_bytes((float *)g->c + at, v, sizeof(float) * (size_t)w);
        }
    }
}

