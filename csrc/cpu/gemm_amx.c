/* gemm_amx.c - the bf16 x bf16 -> fp32 micro-kernel on AMX tiles (this file gets -mamx-tile
 * -mamx-bf16 from setup.py): a 32 x 32 block of C in four 16 x 16 fp32 tiles, fed per 32-deep
 * k chunk by two A tiles (16 rows of 32 bf16, the ROWS32 panel) and two B tiles (16 k pairs
 * of 16 columns, the PAIRS32 panel read with a 128-byte stride). cpu/dispatch.c hands it out
 * only after the kernel granted this process the tile state (arch_prctl XTILEDATA). The
 * tile configuration is loaded on every call: other code in the thread (oneDNN, in a process
 * that also runs torch) releases the tiles after its own kernels, and a tile instruction
 * without a configuration faults (#UD).
 * Numerics (Intel SDM, TDPBF16PS): per element and k pair, both bf16 products are added to the
 * fp32 accumulator, input denormals read as zero and denormal results flushed, round to
 * nearest even - the same bound as vdpbf16ps (gemm_avx512bf16.c), not the same bits. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "gemm_pack.h"
#include "gemm_ukr.h"

#define MR 32
#define NR 32
#define A_CHUNK (MR * 32 * 2)        /* bytes of one 32-deep k chunk of an A panel */
#define B_CHUNK (16 * NR * 2 * 2)    /* 16 k pairs of NR columns */

typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

/* tiles 0-3: C (16 x 16 fp32), 4-5: A (16 x 32 bf16), 6-7: B (16 k pairs x 16 columns) */
static const tile_config config = {
    1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64, 0, 0, 0, 0, 0, 0, 0, 0},
    {16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0}};

static void kernel_32x32(int64_t kc, const void *ap, const void *bp, float *c, int64_t ldc,
                         int accumulate)
{
    _tile_loadconfig(&config);
    const char *a = ap, *b = bp;
    size_t sc = (size_t)ldc * sizeof(float);
    float *c10 = c + 16 * ldc;
    if (accumulate) {
        _tile_loadd(0, c, sc);
        _tile_loadd(1, c + 16, sc);
        _tile_loadd(2, c10, sc);
        _tile_loadd(3, c10 + 16, sc);
    } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    }
    for (int64_t q = 0, chunks = (kc + 31) / 32; q < chunks; q++) {
        _tile_loadd(4, a, 64);
        _tile_loadd(5, a + 16 * 64, 64);
        _tile_loadd(6, b, 128);
        _tile_loadd(7, b + 64, 128);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
        a += A_CHUNK;
        b += B_CHUNK;
    }
    _tile_stored(0, c, sc);
    _tile_stored(1, c + 16, sc);
    _tile_stored(2, c10, sc);
    _tile_stored(3, c10 + 16, sc);
}

/* B panels: the AVX-512 pair packer, each panel then padded to 32 k */
static void pack_pairs32(const mp_pack_src *s, mp_panel_format fmt, int w, int64_t r0,
                         int64_t rows, int64_t k0, int64_t kc, void *dst)
{
    (void)fmt;
    int64_t step = mp_gemm_panel_elems(MP_PANEL_BF16_PAIRS32, w, kc);
    for (int64_t i = 0; i < rows; i += w) {
        int64_t n = rows - i < w ? rows - i : w;
        uint16_t *d = (uint16_t *)dst + (i / w) * step;
        mp_gemm_pack_pairs_avx512(s, MP_PANEL_BF16_PAIRS, w, r0 + i, n, k0, kc, d);
        mp_gemm_pad_pairs32(w, kc, d);
    }
}

const mp_gemm_ukr mp_gemm_ukr_bf16_amx = {"amx bf16 32x32", MR, NR, 512, 256, 1024,
                                          MP_PANEL_BF16_PAIRS32, kernel_32x32, pack_pairs32,
                                          1, MP_PANEL_BF16_ROWS32, NULL, NULL};
