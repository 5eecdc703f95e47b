/* gemm_avx512bf16.c - the bf16 x bf16 -> fp32 micro-kernel for AVX512_BF16 (this file gets
 * -mavx512bf16 from setup.py), on bf16-pair panels (gemm_ukr.h): a 12 x 32 tile in 24 zmm fp32
 * accumulators. Per k pair, two B vectors of 16 column pairs and one 32-bit broadcast of each
 * row's A pair feed vdpbf16ps, which adds both products of the pair to each lane.
 * Numerics differ from the fp32 kernels on the same bf16 values (the rounding bound is the
 * same; see kernel_12x32). Never compiled with -ffast-math. */
#include <immintrin.h>
#include <string.h>

#include "gemm_avx512_store.h"
#include "gemm_pack.h"
#include "gemm_ukr.h"

#define MR 12
#define NR 32
#define PREFETCH_A (8 * 2 * MR)      /* bf16 values: 8 k pairs ahead, ~6 lines from L2 */

#define ROW_DOT(r)                                                                           \
    do {                                                                                     \
        __m512bh av = pair(a + 2 * (r));                                                     \
        c##r##a = _mm512_dpbf16_ps(c##r##a, av, b0);                                         \
        c##r##b = _mm512_dpbf16_ps(c##r##b, av, b1);                                         \
    } while (0)

/* The two bf16 values of one row's k pair, as one 32-bit value in every lane (vpbroadcastd). */
static inline __m512bh pair(const uint16_t *p)
{
    int32_t w;
    memcpy(&w, p, sizeof w);
    return (__m512bh)_mm512_set1_epi32(w);
}

/* Numerics (Intel SDM, VDPBF16PS): per lane, acc += a[2i+1] * b[2i+1] and then
 * acc += a[2i] * b[2i], each an fp32 fused multiply-add rounded to nearest even, with input
 * denormals treated as zero and denormal results flushed to zero, whatever MXCSR says.
 * So against the fp32 FMA kernels on the same bf16 values:
 *  - products are exact in both (8-bit x 8-bit significands) and every k is one rounding in
 *    both, so the error bound is the same (|err| <= ~K * 2^-24 * sum |a||b|); only the order
 *    differs (k + 1 before k within each pair), so results are not bit-identical;
 *  - bf16 inputs below 2^-126 in magnitude count as 0, and partial sums that would be
 *    subnormal become 0: an absolute error up to ~K * 2^-126 per output, plus the products of
 *    subnormal inputs, which the fp32 kernels keep (only matters for data near fp32's
 *    underflow, which bf16 training data is not);
 *  - inf and NaN propagate as in fp32 (a NaN payload may differ), except that a subnormal
 *    bf16 times inf is 0 x inf = NaN here, inf in the fp32 kernels.
 * 24 independent chains: vdpbf16ps latency 6 x 2 per cycle needs 12. Loads per k pair: 2
 * vectors + 12 broadcasts for 24 dot products (48 multiply-adds). */
static void kernel_12x32(int64_t kc, const void *ap, const void *bp, float *c, int64_t ldc,
                         int accumulate)
{
    const uint16_t *a = ap, *b = bp;
    __m512 c0a = _mm512_setzero_ps(), c0b = c0a, c1a = c0a, c1b = c0a, c2a = c0a, c2b = c0a;
    __m512 c3a = c0a, c3b = c0a, c4a = c0a, c4b = c0a, c5a = c0a, c5b = c0a;
    __m512 c6a = c0a, c6b = c0a, c7a = c0a, c7b = c0a, c8a = c0a, c8b = c0a;
    __m512 c9a = c0a, c9b = c0a, c10a = c0a, c10b = c0a, c11a = c0a, c11b = c0a;
    for (int r = 0; r < MR; r++) {          /* the tile's 24 lines arrive during the k loop */
        _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + r * ldc + NR - 1), _MM_HINT_T0);
    }
    int64_t pairs = (kc + 1) / 2;           /* an odd kc was padded with a zero k */
#pragma GCC unroll 4
    for (int64_t q = 0; q < pairs; q++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(b);
        __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + 32);
        _mm_prefetch((const char *)(a + PREFETCH_A), _MM_HINT_T0);
        ROW_DOT(0);
        ROW_DOT(1);
        ROW_DOT(2);
        ROW_DOT(3);
        ROW_DOT(4);
        ROW_DOT(5);
        ROW_DOT(6);
        ROW_DOT(7);
        ROW_DOT(8);
        ROW_DOT(9);
        ROW_DOT(10);
        ROW_DOT(11);
        a += 2 * MR;
        b += 2 * NR;
    }
    ROW_STORE(0);
    ROW_STORE(1);
    ROW_STORE(2);
    ROW_STORE(3);
    ROW_STORE(4);
    ROW_STORE(5);
    ROW_STORE(6);
    ROW_STORE(7);
    ROW_STORE(8);
    ROW_STORE(9);
    ROW_STORE(10);
    ROW_STORE(11);
}

/* Zen 4/5 (reference notes section 2.2), the fp32 kernel's footprints at half the bytes per k:
 * KC 384 (even, so no slice but the last is padded): the B panel (384 x 32 bf16, 24 KiB) stays
 * in half of L1 beside the streaming A panel (9 KiB); MC 576: the A block (432 KiB) under half
 * of L2; NC 6144: a B slice (4.5 MiB per thread) in L3. */
const mp_gemm_ukr mp_gemm_ukr_bf16_avx512bf16 = {"avx512bf16 bf16 12x32", MR, NR, 384, 576,
                                                 6144, MP_PANEL_BF16_PAIRS, kernel_12x32,
                                                 mp_gemm_pack_pairs_avx512, 0, MP_PANEL_F32,
                                                 NULL, NULL};
