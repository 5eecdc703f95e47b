/* cast_check.h - exhaustive self-test of one ISA level's cast kernels against the scalar ones:
 * every fp32 bit pattern for the down-casts, every 16-bit pattern for the up-casts. A test
 * hook (reached from Python as _C._check_cast_exhaustive), not used by the kernels. */
#ifndef MP_CPU_CAST_CHECK_H
#define MP_CPU_CAST_CHECK_H

#include "../cpu/dispatch.h"

typedef enum {
    MP_CAST_F32_TO_F16 = 0,
    MP_CAST_F16_TO_F32 = 1,
    MP_CAST_F32_TO_BF16 = 2,
    MP_CAST_BF16_TO_F32 = 3,
    MP_CAST_KIND_COUNT = 4
} mp_cast_kind;

/* "f32_to_f16", "f16_to_f32", "f32_to_bf16", "bf16_to_f32"; -1 when unknown. */
int mp_cast_kind_from_name(const char *name);

/* Runs `which` (an mp_cast_kind) with the kernels of `isa` and with the scalar kernels on every
 * input pattern, calling the vector kernel at varying alignments and lengths so heads and
 * tails are covered too (the 16-bit domain is converted 40 times, split differently each time,
 * so that every pattern also goes through the tail code). *mismatches counts the patterns
 * whose output bits differ; *first_bad is the lowest such pattern (untouched when there is
 * none). Uses a few threads.
 * Returns MP_ERR_VALUE for an unknown kind or a level this CPU cannot run, MP_ERR_NOMEM when
 * the buffers cannot be allocated; nothing else is reported (no message is set). */
mp_status mp_cast_check_exhaustive(mp_isa isa, int which, uint64_t *mismatches,
                                   uint32_t *first_bad);

/* The same over two explicit tables, checking only every chunk_step-th chunk of 64Ki patterns
 * (1: all of them). For harnesses that build a table by other means, such as the AVX-512
 * kernels compiled against an emulation (tests/avx512_emu/); does not consult the CPU. */
mp_status mp_cast_check_tables(const mp_cpu_kernels *ref, const mp_cpu_kernels *vec, int which,
                               uint32_t chunk_step, uint64_t *mismatches, uint32_t *first_bad);

#endif
