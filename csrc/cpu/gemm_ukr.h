/* gemm_ukr.h - what the GEMM driver (gemm.c) needs from one micro-kernel: its register tile
 * (MR x NR), the panel format it reads, and the kernel itself. Panels are k-major: an A panel
 * holds MR rows of a KC-deep slice of op(A), MR values per k; a B panel NR columns, NR values
 * per k. fp32 panels hold floats; bf16-pair panels (kgroup 2) hold bfloat16 values with two
 * consecutive k interleaved (per k pair: MR (or NR) pairs), the layout vdpbf16ps reads. Rows
 * and columns past the matrix edge and the odd k of a pair are packed as zeros. */
#ifndef MP_CPU_GEMM_UKR_H
#define MP_CPU_GEMM_UKR_H

#include <stdint.h>

struct mp_pack_src;              /* gemm_pack.h */

/* MP_PANEL_BF16_PAIRS32: bf16 pairs with k padded by zeros to a multiple of 32 (AMX B tiles:
 * 16 k pairs of the panel's columns per tile); MP_PANEL_BF16_ROWS32: per 32-deep k chunk,
 * the panel's rows one after another, 32 bf16 each (AMX A tiles: 16 rows of 32 k). */
typedef enum {
    MP_PANEL_F32 = 0, MP_PANEL_BF16_PAIRS = 1, MP_PANEL_BF16_PAIRS32 = 2, MP_PANEL_BF16_ROWS32 = 3
} mp_panel_format;

/* c[i * ldc + j] (=, or += when accumulate) sum over k < kc of A panel (i, k) * B panel (k, j),
 * for the full MR x NR tile, in fp32 (fused multiply-adds where the ISA has them). */
typedef void (*mp_gemm_ukr_fn)(int64_t kc, const void *ap, const void *bp, float *c,
                               int64_t ldc, int accumulate);

/* The same tile with an fp32 A read where it lies, unpacked: A (i, k) at a[i * rs + k * ks]
 * (rs or ks is 1) for the first `rows` (1..MR) rows; the tile's other rows repeat the last
 * of them (they are computed, never past A's end, and left out when the tile is merged). The
 * same multiply-adds in the same order as the packed kernel, so the same bits; the B panel is
 * packed as usual. */
typedef void (*mp_gemm_ukr_sa_fn)(int64_t kc, const float *a, int64_t rs, int64_t ks,
                                  int rows, const void *bp, float *c, int64_t ldc,
                                  int accumulate);

typedef void (*mp_gemm_pack_fn)(const struct mp_pack_src *s, mp_panel_format fmt, int w,
                                int64_t r0, int64_t rows, int64_t k0, int64_t kc, void *dst);

typedef struct {
    const char *name;
    int mr, nr;
    int kc, mc, nc;              /* cache blocking: KC deep, MC rows of A, NC columns of B */
    mp_panel_format format;
    mp_gemm_ukr_fn kernel;
    mp_gemm_pack_fn pack;        /* NULL: the portable mp_gemm_pack */
    int split_formats;           /* A has its own panel format and packer (below) */
    mp_panel_format a_format;
    mp_gemm_pack_fn a_pack;
    mp_gemm_ukr_sa_fn kernel_sa; /* NULL: A is always packed */
} mp_gemm_ukr;

/* One per ISA file; NULL-free (the scalar one always exists). */
extern const mp_gemm_ukr mp_gemm_ukr_f32_scalar;
extern const mp_gemm_ukr mp_gemm_ukr_f32_avx2;
extern const mp_gemm_ukr mp_gemm_ukr_f32_avx512;
extern const mp_gemm_ukr mp_gemm_ukr_bf16_avx512bf16;
extern const mp_gemm_ukr mp_gemm_ukr_bf16_amx;      /* AMX-BF16 tiles, 32 x 32 */

#endif
