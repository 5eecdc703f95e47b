/* gemm_pack.h - copying a block of op(A) or op(B) into the panels a micro-kernel reads
 * (gemm_ukr.h), converting to the panel's element type on the way. Both operands are seen
 * the same way: element (r, k) - r along the panel (rows of op(A), columns of op(B)), k along
 * the shared dimension - sits at base + (r * rs + k * ks) elements; one of rs, ks is 1. */
#ifndef MP_CPU_GEMM_PACK_H
#define MP_CPU_GEMM_PACK_H

#include "../shared/mp_defs.h"
#include "dispatch.h"
#include "gemm_ukr.h"

typedef struct mp_pack_src {
    const char *base;
    mp_dtype dtype;          /* float32, float16 or bfloat16 */
    int64_t rs, ks;
    const mp_cpu_kernels *cvt;   /* the conversions to fp32 */
} mp_pack_src;

/* Panels of width w for rows [r0, r0 + rows) and k in [k0, k0 + kc): ceil(rows / w) panels,
 * each kc (fp32), 2 * ceil(kc / 2) (bf16 pairs) or 32 * ceil(kc / 32) (the AMX formats) deep.
 * The bf16 formats need a bfloat16 source. */
void mp_gemm_pack(const mp_pack_src *s, mp_panel_format fmt, int w, int64_t r0,
                  int64_t rows, int64_t k0, int64_t kc, void *dst);

/* The same panels (fp32 only; other formats fall through to mp_gemm_pack), eight values at
 * a time with AVX2 + F16C; bit-identical to mp_gemm_pack. x86-64 builds only. */
void mp_gemm_pack_avx2(const mp_pack_src *s, mp_panel_format fmt, int w, int64_t r0,
                       int64_t rows, int64_t k0, int64_t kc, void *dst);

/* The same bf16-pair panels (bfloat16 sources contiguous along the panel or along k; others
 * fall through to mp_gemm_pack) with AVX-512F/BW, bit-identical to mp_gemm_pack. x86-64
 * builds only; callers check the CPU level. */
void mp_gemm_pack_pairs_avx512(const mp_pack_src *s, mp_panel_format fmt, int w, int64_t r0,
                               int64_t rows, int64_t k0, int64_t kc, void *dst);

/* Zeros after the bf16 pairs of one panel of width w, kc deep, up to the next 32 k (the
 * PAIRS32 format is PAIRS, padded). */
void mp_gemm_pad_pairs32(int w, int64_t kc, uint16_t *panel);

/* Elements of one panel of width w and depth kc in format fmt (and bytes per element). */
int64_t mp_gemm_panel_elems(mp_panel_format fmt, int w, int64_t kc);
size_t mp_gemm_panel_elem_size(mp_panel_format fmt);

#endif
