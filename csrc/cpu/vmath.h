/* vmath.h - fp32 math over arrays: exp, log, the activations and their derivatives, and the
 * row reductions softmax needs (max, sum, dot, exp-and-sum). One table per ISA level, reached
 * as mp_cpu()->vm. Every level gives the same bits as the scalar one, which is the oracle:
 * the per-element math is one definition (vmath_body.h) instantiated per lane type, and the
 * reductions use the same fixed order on every level (below). Accuracy per function is
 * listed in vmath_body.h; none of this is libm, so results do not depend on the C library.
 * (The one exception: which payload a sum of two different NaNs keeps.) Pointers may be
 * unaligned; y may equal x (in place) but must not otherwise overlap it. */
#ifndef MP_CPU_VMATH_H
#define MP_CPU_VMATH_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    MP_VM_EXP = 0,
    MP_VM_LOG,
    MP_VM_SIGMOID,
    MP_VM_TANH,
    MP_VM_SILU,
    MP_VM_GELU,
    MP_VM_GELU_TANH,
    MP_VM_SILU_GRAD,          /* derivatives at x (multiply by the incoming gradient) */
    MP_VM_GELU_GRAD,
    MP_VM_GELU_TANH_GRAD,
    MP_VM_MAP_COUNT
} mp_vm_map_kind;

typedef void (*mp_vm_map_fn)(const float *x, float *y, size_t n);

/* Reductions keep MP_VM_LANES partial results: element i goes to partial i % MP_VM_LANES, in
 * index order; the partials are then combined pairwise, p[j] op= p[j + w] for w = 8, 4, 2, 1.
 * Sums are in double. Any vector width that divides 16 can follow this order exactly. */
#define MP_VM_LANES 16

typedef struct {
    mp_vm_map_fn map[MP_VM_MAP_COUNT];
    /* max of x[0..n) (-inf for n == 0); NaNs are passed over (p = x > p ? x : p), so the
     * callers that must propagate them do so through the next step (softmax: e^(NaN - m)). */
    float (*max)(const float *x, size_t n);
    double (*sum)(const float *x, size_t n);
    /* sum of x[i] * y[i], each product exact in double */
    double (*dot)(const float *x, const float *y, size_t n);
    /* y[i] = e^(x[i] - shift) (the subtraction in fp32); returns the sum of the y[i] */
    double (*exp_sum)(const float *x, float shift, float *y, size_t n);
    /* acc[i] += x[i] in double (column sums: one add per element, the same bits anywhere) */
    void (*acc)(double *acc, const float *x, size_t n);
    /* acc[i] += x[i] * y[i], the product exact in double, then one add (weight gradients) */
    void (*acc_mul)(double *acc, const float *x, const float *y, size_t n);
    /* acc[j] += x[r * ld + j] for r = 0 .. rows - 1 in order, j < cols: column sums, the same
     * adds as one acc call per row, with the sums held in registers across the rows */
    void (*colsum)(double *acc, const float *x, size_t rows, size_t cols, size_t ld);
    /* GradScaler's pass: returns 1 when some x[i] is inf or NaN (tested on the bits, before
     * scaling), else 0; multiplies every x[i] by inv in place unless inv == 1 (then x is only
     * read). The products are fp32 multiplies, so every level gives the same bits. */
    int (*unscale)(float *x, size_t n, float inv);
} mp_vmath;

/* In vmath_scalar.c, vmath_avx2.c and vmath_avx512.c (x86-64 only). */
void mp_vmath_fill_scalar(mp_vmath *v);
void mp_vmath_fill_avx2(mp_vmath *v);
void mp_vmath_fill_avx512(mp_vmath *v);

/* "exp", "log", "sigmoid", "tanh", "silu", "gelu", "gelu_tanh", "silu_grad", "gelu_grad",
 * "gelu_tanh_grad"; -1 when unknown. */
int mp_vm_map_from_name(const char *name);
const char *mp_vm_map_name(int kind);

#endif
