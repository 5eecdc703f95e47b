/* vmath_scalar.c - the portable instantiation of vmath_body.h (one float per "vector") and
 * the reductions in the order vmath.h defines, emulating MP_VM_LANES partials. This is the
 * oracle the vector versions are checked against bit for bit, and the kernels of the scalar
 * level. Integer lanes use unsigned arithmetic where C would call overflow undefined. */
#include <math.h>
#include <string.h>

#include "vmath.h"
#include "../shared/mp_half.h"

typedef float vf;
typedef int32_t vi;
typedef int vm;

static inline vf vf_set(float c) { return c; }
static inline vi vi_set(int32_t c) { return c; }
static inline vf vf_add(vf a, vf b) { return a + b; }
static inline vf vf_sub(vf a, vf b) { return a - b; }
static inline vf vf_mul(vf a, vf b) { return a * b; }
static inline vf vf_div(vf a, vf b) { return a / b; }
static inline vf vf_min(vf a, vf b) { return a < b ? a : b; }
static inline vf vf_max(vf a, vf b) { return a > b ? a : b; }
static inline vm vm_lt(vf a, vf b) { return a < b; }
static inline vm vm_gt(vf a, vf b) { return a > b; }
static inline vm vm_eq(vf a, vf b) { return a == b; }
static inline vm vm_nan(vf a) { return a != a; }
static inline int vm_all(vm m) { return m; }
static inline vf vf_sel(vm m, vf a, vf b) { return m ? a : b; }
static inline vi vi_mask(vm m) { return m ? -1 : 0; }

static inline vi vi_of(vf a)
{
    vi i;
    memcpy(&i, &a, sizeof i);
    return i;
}

static inline vf vf_of(vi i)
{
    vf a;
    memcpy(&a, &i, sizeof a);
    return a;
}

static inline vi vi_add(vi a, vi b) { return (vi)((uint32_t)a + (uint32_t)b); }
static inline vi vi_sub(vi a, vi b) { return (vi)((uint32_t)a - (uint32_t)b); }
static inline vi vi_and(vi a, vi b) { return a & b; }
static inline vi vi_or(vi a, vi b) { return a | b; }
static inline vi vi_sra(vi a, int n) { return a >> n; }    /* arithmetic in GCC and Clang */
static inline vi vi_sll(vi a, int n) { return (vi)((uint32_t)a << n); }
static inline vf vf_and(vf a, vf b) { return vf_of(vi_of(a) & vi_of(b)); }
static inline vf vf_or(vf a, vf b) { return vf_of(vi_of(a) | vi_of(b)); }
static inline vf vf_cvt(vi a) { return (float)a; }

#include "vmath_body.h"

#define MAP_SCALAR(name, body)                                      \
    static void name##_scalar(const float *x, float *y, size_t n)   \
    {                                                               \
        for (size_t i = 0; i < n; i++)                              \
            y[i] = body(x[i]);                                      \
    }

MAP_SCALAR(exp, vm_exp)
MAP_SCALAR(log, vm_log)
MAP_SCALAR(sigmoid, vm_sigmoid)
MAP_SCALAR(tanh, vm_tanh)
MAP_SCALAR(silu, vm_silu)
MAP_SCALAR(gelu, vm_gelu)
MAP_SCALAR(gelu_tanh, vm_gelu_tanh)
MAP_SCALAR(silu_grad, vm_silu_grad)
MAP_SCALAR(gelu_grad, vm_gelu_grad)
MAP_SCALAR(gelu_tanh_grad, vm_gelu_tanh_grad)

static float max_scalar(const float *x, size_t n)
{
    float p[MP_VM_LANES];
    for (int j = 0; j < MP_VM_LANES; j++)
        p[j] = -INFINITY;
    for (size_t i = 0; i < n; i++)
        p[i % MP_VM_LANES] = vf_max(x[i], p[i % MP_VM_LANES]);
    for (int w = MP_VM_LANES / 2; w >= 1; w /= 2)
        for (int j = 0; j < w; j++)
            p[j] = vf_max(p[j], p[j + w]);
    return p[0];
}

static double combine(double *p)
{
    for (int w = MP_VM_LANES / 2; w >= 1; w /= 2)
        for (int j = 0; j < w; j++)
            p[j] = p[j] + p[j + w];
    return p[0];
}

static double sum_scalar(const float *x, size_t n)
{
    double p[MP_VM_LANES] = {0.0};
    for (size_t i = 0; i < n; i++)
        p[i % MP_VM_LANES] += (double)x[i];
    return combine(p);
}

static double dot_scalar(const float *x, const float *y, size_t n)
{
    double p[MP_VM_LANES] = {0.0};
    for (size_t i = 0; i < n; i++)
        p[i % MP_VM_LANES] += (double)x[i] * (double)y[i];
    return combine(p);
}

static void acc_scalar(double *acc, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        acc[i] += (double)x[i];
}

static void acc_mul_scalar(double *acc, const float *x, const float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        acc[i] += (double)x[i] * (double)y[i];
}

static void colsum_scalar(double *acc, const float *x, size_t rows, size_t cols, size_t ld)
{
    for (size_t r = 0; r < rows; r++)
        acc_scalar(acc, x + r * ld, cols);
}

static int unscale_scalar(float *x, size_t n, float inv)
{
    int found = 0;
    for (size_t i = 0; i < n; i++)
        found |= (mp_f32_bits(x[i]) & 0x7f800000u) == 0x7f800000u;
    if (inv != 1.0f)
        for (size_t i = 0; i < n; i++)
            x[i] *= inv;
    return found;
}

static double exp_sum_scalar(const float *x, float shift, float *y, size_t n)
{
    double p[MP_VM_LANES] = {0.0};
    for (size_t i = 0; i < n; i++) {
        y[i] = vm_exp(x[i] - shift);
        p[i % MP_VM_LANES] += (double)y[i];
    }
    return combine(p);
}

void mp_vmath_fill_scalar(mp_vmath *v)
{
    v->map[MP_VM_EXP] = exp_scalar;
    v->map[MP_VM_LOG] = log_scalar;
    v->map[MP_VM_SIGMOID] = sigmoid_scalar;
    v->map[MP_VM_TANH] = tanh_scalar;
    v->map[MP_VM_SILU] = silu_scalar;
    v->map[MP_VM_GELU] = gelu_scalar;
    v->map[MP_VM_GELU_TANH] = gelu_tanh_scalar;
    v->map[MP_VM_SILU_GRAD] = silu_grad_scalar;
    v->map[MP_VM_GELU_GRAD] = gelu_grad_scalar;
    v->map[MP_VM_GELU_TANH_GRAD] = gelu_tanh_grad_scalar;
    v->max = max_scalar;
    v->sum = sum_scalar;
    v->dot = dot_scalar;
    v->acc = acc_scalar;
    v->acc_mul = acc_mul_scalar;
    v->colsum = colsum_scalar;
    v->unscale = unscale_scalar;
    v->exp_sum = exp_sum_scalar;
}

static const char *const map_names[MP_VM_MAP_COUNT] = {
    "exp", "log", "sigmoid", "tanh", "silu", "gelu", "gelu_tanh", "silu_grad", "gelu_grad",
    "gelu_tanh_grad"};

int mp_vm_map_from_name(const char *name)
{
    for (int i = 0; i < MP_VM_MAP_COUNT; i++)
        if (strcmp(name, map_names[i]) == 0)
            return i;
    return -1;
}

const char *mp_vm_map_name(int kind)
{
    return kind >= 0 && kind < MP_VM_MAP_COUNT ? map_names[kind] : "unknown";
}
