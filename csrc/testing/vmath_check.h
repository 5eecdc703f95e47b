/* vmath_check.h - self-test of the vmath map kernels over the fp32 input space: one ISA
 * level's kernel against the scalar one (bits) and against a float64 reference (ulp error).
 * A test hook (reached from Python as _C._check_vmath), not used by the kernels. */
#ifndef MP_CPU_VMATH_CHECK_H
#define MP_CPU_VMATH_CHECK_H

#include "../cpu/dispatch.h"

typedef struct {
    uint64_t checked;          /* input patterns compared */
    uint64_t mismatches;       /* outputs whose bits differ from the scalar kernel's */
    uint32_t first_bad;        /* lowest such input pattern (valid when mismatches > 0) */
    /* Error of the level's kernel against the float64 reference, in units in the last place
     * of the reference rounded to fp32: over references of normal magnitude (an infinite
     * result counts as 2^128), and separately over subnormal references, in units of 2^-149.
     * A NaN where the reference has none (or the reverse) counts as an infinite error. */
    double max_ulp, max_ulp_subnormal;
    uint32_t worst, worst_subnormal;   /* inputs with those errors */
} mp_vmath_check_result;

/* Runs map kernel `kind` (mp_vm_map_kind) of `isa` and of the scalar level over every
 * chunk_step-th chunk of 64Ki input patterns (1: all 2^32), calling the vector kernel at
 * varying offsets and lengths so that tails are covered. Uses a few threads.
 * MP_ERR_VALUE for an unknown kind, a zero step or a level this CPU cannot run;
 * MP_ERR_NOMEM when buffers cannot be allocated; no message is set. */
mp_status mp_vmath_check(mp_isa isa, int kind, uint32_t chunk_step,
                         mp_vmath_check_result *res);

#endif
