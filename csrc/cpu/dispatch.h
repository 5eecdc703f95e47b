/* dispatch.h - the table of CPU kernels, filled once for the best ISA this CPU has.
 * Kernels work on raw contiguous pointers and counts; the core handles shapes and strides.
 * MPAMP_CPU_ISA=scalar|avx2|avx512|avx512bf16 forces a lower level than detected. */
#ifndef MP_CPU_DISPATCH_H
#define MP_CPU_DISPATCH_H

#include "../shared/mp_half.h"
#include "../shared/mp_optim.h"
#include "gemm_ukr.h"
#include "vmath.h"

typedef enum {
    MP_ISA_SCALAR = 0,     /* portable C, the oracle every vector kernel is tested against */
    MP_ISA_AVX2 = 1,       /* AVX2 + F16C + FMA */
    MP_ISA_AVX512 = 2,     /* AVX-512 F/BW/VL (+F16C) */
    MP_ISA_AVX512BF16 = 3, /* AVX-512 plus AVX512_BF16 */
    MP_ISA_COUNT = 4
} mp_isa;

/* Vector spans of the optimizer bodies (optim_kernels.h has their contracts); a NULL entry
 * means this level has none and the core runs the scalar loop over the shared body. */
typedef struct {
    void (*adam)(float *p, const float *g, const mp_bf16 *g16, float *m, float *v, float *vmax,
                 mp_bf16 *out16, int64_t n, float inv, const mp_adam_hyper *h);
    void (*rmsprop)(float *p, const float *g, float *sq, float *ga, float *buf, int64_t n,
                    float inv, const mp_rmsprop_hyper *h);
    void (*adagrad)(float *p, const float *g, float *sum, int64_t n, float inv,
                    const mp_adagrad_hyper *h);
    void (*adadelta)(float *p, const float *g, float *sq, float *acc, int64_t n, float inv,
                     const mp_adadelta_hyper *h);
} mp_optim_spans;

typedef struct {
    mp_isa isa;
    void (*f32_to_f16)(const float *src, mp_half *dst, size_t n);
    void (*f16_to_f32)(const mp_half *src, float *dst, size_t n);
    void (*f32_to_bf16)(const float *src, mp_bf16 *dst, size_t n);
    void (*bf16_to_f32)(const mp_bf16 *src, float *dst, size_t n);
    mp_vmath vm;           /* exp, log, activations, row reductions (vmath.h) */
    const mp_gemm_ukr *gemm_f32;    /* the fp32-panel micro-kernel; never NULL */
    const mp_gemm_ukr *gemm_bf16;   /* bf16 x bf16: AMX tiles or vdpbf16ps; NULL: widened */
    mp_optim_spans optim;
} mp_cpu_kernels;

/* The active table (detected level, lowered by MPAMP_CPU_ISA). Never NULL. */
const mp_cpu_kernels *mp_cpu(void);
/* The table of one level, or NULL when this CPU (or this build) cannot run it. */
const mp_cpu_kernels *mp_cpu_for_isa(mp_isa isa);
/* Highest level the hardware and OS support, ignoring MPAMP_CPU_ISA. */
mp_isa mp_cpu_detected_isa(void);
const char *mp_isa_name(mp_isa isa);
/* Parses "scalar", "avx2", "avx512", "avx512bf16"; returns -1 when unknown. */
int mp_isa_from_name(const char *name);

/* Per-ISA cast tables, defined in cast_<isa>.c (the vector ones only on x86-64); the vm part
 * is filled by dispatch.c from vmath_<isa>.c, and the GEMM micro-kernels and optimizer spans
 * by dispatch.c itself (the one place that chooses a kernel by ISA). */
void mp_cpu_fill_scalar(mp_cpu_kernels *k);
void mp_cpu_fill_avx2(mp_cpu_kernels *k);
void mp_cpu_fill_avx512(mp_cpu_kernels *k);
void mp_cpu_fill_avx512bf16(mp_cpu_kernels *k);

#endif
