/* gemm_avx512.c - the fp32 micro-kernel for AVX-512F (this file gets -mavx512f/bw/vl from
 * setup.py): a 12 x 32 tile in 24 zmm accumulators, 12 rows x two 16-column vectors. Per k, two
 * B vectors and one broadcast A value per row, each multiply-add fused (one rounding, k in
 * order, as the AVX2 kernel). The tile goes to C straight from the registers. It is BLIS's
 * Zen 4 SGEMM shape (32 x 12, column-major C) transposed for our row-major C. Never compiled
 * with -ffast-math. */
#include <immintrin.h>

#include "gemm_pack.h"
#include "gemm_avx512_store.h"
#include "gemm_ukr.h"

#define MR 12
#define NR 32
#define PREFETCH_A (8 * MR)      /* floats: 8 k ahead, ~6 lines, in flight from L2 */

#define ROW_FMA(r)                                                                           \
    do {                                                                                     \
        __m512 av = _mm512_set1_ps(a[r]);                                                    \
        c##r##a = _mm512_fmadd_ps(av, b0, c##r##a);                                          \
        c##r##b = _mm512_fmadd_ps(av, b1, c##r##b);                                          \
    } while (0)

/* 24 independent chains: FMA latency 4 x 2 per cycle needs 8; 24 + 2 B vectors + 1 broadcast
 * fit the 32 zmm registers without spills. Loads per k: 2 vectors + 12 broadcasts for 24
 * FMAs, under the two 512-bit loads per cycle the reference notes assume. */
static void kernel_12x32(int64_t kc, const void *ap, const void *bp, float *c, int64_t ldc,
                         int accumulate)
{
    const float *a = ap, *b = bp;
    __m512 c0a = _mm512_setzero_ps(), c0b = c0a, c1a = c0a, c1b = c0a, c2a = c0a, c2b = c0a;
    __m512 c3a = c0a, c3b = c0a, c4a = c0a, c4b = c0a, c5a = c0a, c5b = c0a;
    __m512 c6a = c0a, c6b = c0a, c7a = c0a, c7b = c0a, c8a = c0a, c8b = c0a;
    __m512 c9a = c0a, c9b = c0a, c10a = c0a, c10b = c0a, c11a = c0a, c11b = c0a;
    for (int r = 0; r < MR; r++) {          /* the tile's 24 lines arrive during the k loop */
        _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + r * ldc + NR - 1), _MM_HINT_T0);
    }
#pragma GCC unroll 4
    for (int64_t p = 0; p < kc; p++) {
        __m512 b0 = _mm512_loadu_ps(b);
        __m512 b1 = _mm512_loadu_ps(b + 16);
        /* the B panel is reused by every A panel of the block and stays in L1; the A panel
         * streams from L2 */
        _mm_prefetch((const char *)(a + PREFETCH_A), _MM_HINT_T0);
        ROW_FMA(0);
        ROW_FMA(1);
        ROW_FMA(2);
        ROW_FMA(3);
        ROW_FMA(4);
        ROW_FMA(5);
        ROW_FMA(6);
        ROW_FMA(7);
        ROW_FMA(8);
        ROW_FMA(9);
        ROW_FMA(10);
        ROW_FMA(11);
        a += MR;
        b += NR;
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

/* Zen 4/5: 48 KiB L1d, 1 MiB L2 per core, 32 MiB L3 shared (reference notes section 2.2).
 * KC 192: the B panel (192 x 32 floats, 24 KiB) stays in half of L1 beside the streaming A
 * panel (9 KiB) and the C tile; MC 576: the packed A block (432 KiB) takes under half of L2;
 * NC 6144: a packed B slice (4.5 MiB, one per thread) stays in L3. */
const mp_gemm_ukr mp_gemm_ukr_f32_avx512 = {"avx512 fp32 12x32", MR, NR, 192, 576, 6144,
                                            MP_PANEL_F32, kernel_12x32, mp_gemm_pack_avx2,
                                            0, MP_PANEL_F32, NULL, NULL};
