/* vmath_body.h - the one definition of the vector math functions (vmath.h), written over a
 * lane type: included by vmath_scalar.c (one float per "vector"), vmath_avx2.c (__m256) and
 * vmath_avx512.c (__m512, masks in k registers)
 * after they define the primitives below. Every lane's result is a fixed sequence of IEEE
 * single-precision operations - no FMA, no table lookups - so the scalar and the vector
 * instantiations give the same bits for every input (vmath_check.c checks it), whatever the
 * ISA the process runs on. The one kind of branch is vm_all: when every lane of a vector is in
 * one regime, the other regime's operations (whose results would be discarded by a select)
 * are skipped; a lane's operations stay the same.
 *
 * Primitives the includer defines (vf: floats, vi: int32, vm: lane mask):
 *   vf_set vi_set; vf_add vf_sub vf_mul vf_div; vf_and vf_or (bitwise on floats);
 *   vf_min(a, b) = a < b ? a : b, vf_max(a, b) = a > b ? a : b (MINPS/MAXPS: b on NaN);
 *   vm_lt vm_gt vm_eq (ordered, false on NaN), vm_nan; vf_sel(m, a, b) = m ? a : b;
 *   vi_of/vf_of (bit casts); vi_add vi_sub vi_and vi_or; vi_sra vi_sll (by a constant);
 *   vf_cvt (int32 -> float, exact for the small values used here); vi_mask(m) = m ? -1 : 0;
 *   vm_all(m): every lane of m is set.
 * Errors quoted below are maxima over all 2^32 inputs against a float64 reference, measured
 * by vmath_check.c; subnormal results in units of 2^-149. tests/test_vmath.py keeps them. */
#ifndef MP_CPU_VMATH_BODY_H
#define MP_CPU_VMATH_BODY_H

#define VM_LOG2E 1.44269504088896341f
#define VM_LN2_HI 0.693359375f          /* 355/512: k * VM_LN2_HI is exact for |k| < 2^15 */
#define VM_LN2_LO -2.12194440e-4f       /* ln 2 - VM_LN2_HI */
#define VM_ROUND 12582912.0f            /* 0x1.8p23: x + it rounds x to an integer, which then
                                         * sits in the low mantissa bits (0x4b400000 + k) */
#define VM_ROUND_BITS 0x4b400000
#define VM_SQRT1_2 0.70710678118654752440f
#define VM_SQRT2_PI 0.79788456080286535588f   /* sqrt(2/pi) */
#define VM_INV_SQRT_2PI 0.39894228040143267794f
#define VM_SIGN INT32_MIN
#define VM_ABS INT32_MAX

static inline vf vm_abs(vf x) { return vf_and(x, vf_of(vi_set(VM_ABS))); }
static inline vf vm_neg_abs(vf x) { return vf_or(x, vf_of(vi_set(VM_SIGN))); }
static inline vf vm_sign(vf x) { return vf_and(x, vf_of(vi_set(VM_SIGN))); }

/* NaN inputs return x + x (the input, quieted), explicitly, so that the NaN's bits do not
 * depend on which operand order a compiler picked on the way. */
static inline vf vm_nan_fix(vf x, vf y) { return vf_sel(vm_nan(x), vf_add(x, x), y); }

/* e^(xh + xl) * 2^bias, xh already clamped to [-110, 89], |xl| < 0.2 (0 when !with_lo; flag
 * and bias are constants after inlining). Cephes' expf scheme: k = round((xh + xl) / ln 2),
 * r = xh - k ln2 (two-part ln 2, the first product exact and the difference exact by Sterbenz)
 * + xl, e^r = 1 + r + r^2 P(r) on |r| <= ln2 / 2, times 2^(k + bias) as two power-of-two
 * factors so that results down to the subnormals round once and 2^128 overflows to inf.
 * bias = VM_TAIL_BIAS (for xh <= 0 only) gives e^x exactly 2^64 times larger: a normal number
 * whose rounding to e^x (times VM_TAIL_SCALE) can wait until a product with it is formed. */
#define VM_TAIL_BIAS 64
#define VM_TAIL_SCALE 0x1p-64f

static inline vf vm_exp_core(vf xh, vf xl, int with_lo, int bias)
{
    vf t = vf_add(vf_mul(with_lo ? vf_add(xh, xl) : xh, vf_set(VM_LOG2E)), vf_set(VM_ROUND));
    vf k = vf_sub(t, vf_set(VM_ROUND));
    vi ki = vi_sub(vi_of(t), vi_set(VM_ROUND_BITS));
    vf r = vf_sub(vf_sub(xh, vf_mul(k, vf_set(VM_LN2_HI))), vf_mul(k, vf_set(VM_LN2_LO)));
    if (with_lo)
        r = vf_add(r, xl);
    vf q = vf_set(1.9875691500e-4f);
    q = vf_add(vf_mul(q, r), vf_set(1.3981999507e-3f));
    q = vf_add(vf_mul(q, r), vf_set(8.3334519073e-3f));
    q = vf_add(vf_mul(q, r), vf_set(4.1665795894e-2f));
    q = vf_add(vf_mul(q, r), vf_set(1.6666665459e-1f));
    q = vf_add(vf_mul(q, r), vf_set(5.0000001201e-1f));
    vf p = vf_add(vf_add(vf_mul(q, vf_mul(r, r)), r), vf_set(1.0f));
    vi k1 = vi_sra(ki, 1), k2 = vi_sub(ki, k1);          /* k in [-159, 128] */
    vf s1 = vf_of(vi_sll(vi_add(k1, vi_set(127)), 23));
    vf s2 = vf_of(vi_sll(vi_add(k2, vi_set(127 + bias)), 23));
    return vf_mul(vf_mul(p, s1), s2);
}

/* e^x: < 1 ulp (0.990; subnormal results 0.75); x > 88.7228 -> inf, x < -103.973 -> 0,
 * -inf -> 0, NaN -> NaN. */
static inline vf vm_exp(vf x)
{
    /* a NaN x becomes 89 here (MINPS semantics) and is put back by vm_nan_fix. Below -104
     * the result is +0: those lanes compute e^0 instead and are replaced, because their
     * underflowing product would take the CPU's subnormal microcode path (3x slower per
     * vector on Zen 3), and softmax rows masked with -inf are full of them. */
    vm zero = vm_lt(x, vf_set(-104.0f));
    vf xc = vf_sel(zero, vf_set(0.0f), vf_min(x, vf_set(89.0f)));
    return vm_nan_fix(x, vf_sel(zero, vf_set(0.0f), vm_exp_core(xc, xc, 0, 0)));
}

/* e^(-x^2 / 2) 2^64 for x >= 0 with x^2 / 2 carried as hi + lo (hi from the top 12 bits of x,
 * so hi^2 is exact): a rounded x^2 / 2 near 100 would cost ~50 ulp. */
static inline vf vm_exp_neg_half_sq(vf a)
{
    vf ac = vf_min(a, vf_set(20.0f));                    /* e^-200 is 0 anyway; no inf - inf */
    vf hi = vf_and(ac, vf_of(vi_set((int32_t)0xfffff000u)));
    vf lo = vf_sub(ac, hi);
    vf hh = vf_mul(vf_mul(hi, hi), vf_set(0.5f));
    vf corr = vf_mul(lo, vf_add(hi, vf_mul(lo, vf_set(0.5f))));
    vf nh = vf_sub(vf_set(0.0f), hh);
    vf e = vm_exp_core(vf_max(nh, vf_set(-110.0f)), vf_sub(vf_set(0.0f), corr), 1, VM_TAIL_BIAS);
    /* 0 where clamped: the true value would vanish in any product with it, a scaled e^-110
     * would not (x e^(-x^2 / 2) at x = -1e30) */
    return vf_sel(vm_lt(nh, vf_set(-110.0f)), vf_set(0.0f), e);
}

/* ln x: < 1 ulp (0.83); x = m 2^e with m in (sqrt(1/2), sqrt(2)], ln(1 + f) = f - f^2/2 + f^3 P(f)
 * (Cephes' logf). Subnormals are scaled by 2^23 first; +0/-0 -> -inf, x < 0 -> NaN,
 * +inf -> +inf. */
static inline vf vm_log(vf x)
{
    vm sub = vm_lt(x, vf_set(1.17549435e-38f));
    vf xs = vf_sel(sub, vf_mul(x, vf_set(8388608.0f)), x);
    vi bits = vi_of(xs);
    vi e = vi_sub(vi_sra(bits, 23), vi_set(127));
    vf m = vf_of(vi_or(vi_and(bits, vi_set(0x007fffff)), vi_set(0x3f800000)));   /* [1, 2) */
    vm big = vm_gt(m, vf_set(1.41421356f));
    vf f = vf_sel(big, vf_sub(vf_mul(m, vf_set(0.5f)), vf_set(1.0f)), vf_sub(m, vf_set(1.0f)));
    e = vi_sub(e, vi_mask(big));                                     /* + 1 */
    e = vi_sub(e, vi_and(vi_mask(sub), vi_set(23)));
    vf fe = vf_cvt(e);
    vf z = vf_mul(f, f);
    vf y = vf_set(7.0376836292e-2f);
    y = vf_add(vf_mul(y, f), vf_set(-1.1514610310e-1f));
    y = vf_add(vf_mul(y, f), vf_set(1.1676998740e-1f));
    y = vf_add(vf_mul(y, f), vf_set(-1.2420140846e-1f));
    y = vf_add(vf_mul(y, f), vf_set(1.4249322787e-1f));
    y = vf_add(vf_mul(y, f), vf_set(-1.6668057665e-1f));
    y = vf_add(vf_mul(y, f), vf_set(2.0000714765e-1f));
    y = vf_add(vf_mul(y, f), vf_set(-2.4999993993e-1f));
    y = vf_add(vf_mul(y, f), vf_set(3.3333331174e-1f));
    y = vf_mul(vf_mul(y, f), z);
    y = vf_add(y, vf_mul(fe, vf_set(VM_LN2_LO)));
    y = vf_add(y, vf_mul(z, vf_set(-0.5f)));
    vf r = vf_add(vf_add(f, y), vf_mul(fe, vf_set(VM_LN2_HI)));
    r = vf_sel(vm_gt(x, vf_set(3.40282347e38f)), x, r);                       /* +inf */
    r = vf_sel(vm_eq(x, vf_set(0.0f)), vf_of(vi_set((int32_t)0xff800000u)), r);   /* -inf */
    r = vf_sel(vm_lt(x, vf_set(0.0f)), vf_of(vi_set(0x7fc00000)), r);              /* NaN */
    return vm_nan_fix(x, r);
}

/* The two halves of the logistic function at v, without cancellation: with e = e^-|v| and
 * d = 1 + e, sigmoid(v) = (v < 0 ? e : 1) / d and sigmoid(-v) = (v < 0 ? 1 : e) / d. es is
 * e 2^64 (exact), for products whose result is normal while e is not; scale is 2^-64 where
 * v < 0 and 1 elsewhere, to undo it once at the end. */
typedef struct {
    vf e, es, d, scale;
    vm neg;
} vm_logistic;

static inline vm_logistic vm_logistic_of(vf v)
{
    vm_logistic l;
    /* below -110 (and for a NaN v, which every caller puts back with vm_nan_fix) es is 0: the
     * true value would vanish in any product with it, a scaled e^-110 would not (x e^x at
     * x = -1e30); x = -inf then gives x * 0 = NaN, as torch */
    vf na = vm_neg_abs(v);
    vf e = vm_exp_core(vf_max(na, vf_set(-110.0f)), na, 0, VM_TAIL_BIAS);
    l.es = vf_sel(vm_lt(na, vf_set(-110.0f)), vf_set(0.0f), e);
    l.e = vf_mul(l.es, vf_set(VM_TAIL_SCALE));      /* the one rounding of e^-|v| */
    l.d = vf_add(vf_set(1.0f), l.e);
    l.neg = vm_lt(v, vf_set(0.0f));
    l.scale = vf_sel(l.neg, vf_set(VM_TAIL_SCALE), vf_set(1.0f));
    return l;
}

static inline vf vm_logistic_pos(vm_logistic l)
{
    return vf_div(vf_sel(l.neg, l.e, vf_set(1.0f)), l.d);
}

static inline vf vm_logistic_neg(vm_logistic l)
{
    return vf_div(vf_sel(l.neg, vf_set(1.0f), l.e), l.d);
}

/* sigmoid(v) / scale: e 2^64 / d where v < 0 */
static inline vf vm_logistic_pos_scaled(vm_logistic l)
{
    return vf_div(vf_sel(l.neg, l.es, vf_set(1.0f)), l.d);
}

/* 1 / (1 + e^-x): <= 2.4 ulp, tiny results included (e^x / (1 + e^x) for x < 0). */
static inline vf vm_sigmoid(vf x)
{
    return vm_nan_fix(x, vm_logistic_pos(vm_logistic_of(x)));
}

/* x sigmoid(v): x / (1 + e^-v) for v >= 0, x e^v / (1 + e^v) below, scaled so the product
 * keeps its bits where e^v is subnormal (x = -90: e^x has 17 bits, x e^x is normal). */
static inline vf vm_x_sigmoid(vf x, vm_logistic l)
{
    vf num = vf_sel(l.neg, vf_mul(x, l.es), x);
    return vf_mul(vf_div(num, l.d), l.scale);
}

/* x * sigmoid(x): <= 3.4 ulp (subnormal results 1.3). -inf -> NaN, as torch. */
static inline vf vm_silu(vf x)
{
    return vm_nan_fix(x, vm_x_sigmoid(x, vm_logistic_of(x)));
}

/* sigmoid(x) (1 + x (1 - sigmoid(x))), with 1 - sigmoid(x) = sigmoid(-x) computed directly:
 * <= 4.6 ulp of the larger term (the derivatives cross zero, where no relative bound is
 * possible). */
static inline vf vm_silu_grad(vf x)
{
    vm_logistic l = vm_logistic_of(x);
    vf ss = vm_logistic_pos_scaled(l), sc = vm_logistic_neg(l);
    return vm_nan_fix(x, vf_mul(vf_mul(ss, vf_add(vf_set(1.0f), vf_mul(x, sc))), l.scale));
}

/* tanh x: <= 1.4 ulp. |x| < 0.625: x + x^3 P(x^2) (Cephes' tanhf); above: 1 - 2 / (e^2|x| + 1).
 * Computed on |x| with the sign put back, so tanh(-0) = -0. */
static inline vf vm_tanh(vf x)
{
    vf a = vm_abs(x);
    vf z = vf_mul(a, a);
    vf p = vf_set(-5.70498872745e-3f);
    p = vf_add(vf_mul(p, z), vf_set(2.06390887954e-2f));
    p = vf_add(vf_mul(p, z), vf_set(-5.37397155531e-2f));
    p = vf_add(vf_mul(p, z), vf_set(1.33314422036e-1f));
    p = vf_add(vf_mul(p, z), vf_set(-3.33332819422e-1f));
    vf small = vf_add(vf_mul(vf_mul(p, z), a), a);
    vf e = vm_exp(vf_add(a, a));
    vf large = vf_sub(vf_set(1.0f), vf_div(vf_set(2.0f), vf_add(e, vf_set(1.0f))));
    vf r = vf_sel(vm_lt(a, vf_set(0.625f)), small, large);
    return vm_nan_fix(x, vf_or(r, vm_sign(x)));
}

/* erfc a = e^-a^2 S(1/a) / a for a >= 0.875, S a polynomial in 1/a - mid fitted (relative
 * error) on two pieces, a < 2.25 and a in [2.25, 10.6] (above, e^-a^2 underflows); highest
 * degree first. */
#define VM_ERFC_TERMS 9
static const float vm_erfc_near[VM_ERFC_TERMS] = {
    0.0112425918f, 0.000148476625f, -0.0183000956f, 0.0333307497f, -0.0426958874f,
    0.032158751f, 0.0240761917f, -0.167177573f, 0.460839123f};
static const float vm_erfc_far[VM_ERFC_TERMS] = {
    -0.168731332f, -0.105752997f, 0.366311193f, -0.227831066f, -0.0516275205f,
    0.216383487f, -0.155103788f, -0.12570776f, 0.545620024f};

/* Phi(x) = (1 + erf(x / sqrt 2)) / 2, the standard normal CDF, as phi * scale, given
 * e2s = e^(-x^2 / 2) 2^64. With z = x / sqrt 2: |z| < 0.875: erf z = z + z Q(z^2); above,
 * (erfc |z|) / 2 or 1 minus it, so the lower tail keeps its relative accuracy instead of
 * cancelling in 1 + erf; there the value stays 2^64 too large (scale 2^-64, else 1) so that
 * x Phi(x) is rounded once even where Phi(x) is subnormal. */
typedef struct {
    vf phi, scale;
} vm_cdf;

/* Phi(x) where |z| = |x| / sqrt 2 < 0.875: (1 + z + z Q(z^2)) / 2 */
static inline vf vm_phi_small(vf z)
{
    vf zz = vf_mul(z, z);
    vf q = vf_set(8.7140601e-05f);
    q = vf_add(vf_mul(q, zz), vf_set(-0.000822051836f));
    q = vf_add(vf_mul(q, zz), vf_set(0.00520762149f));
    q = vf_add(vf_mul(q, zz), vf_set(-0.0268619694f));
    q = vf_add(vf_mul(q, zz), vf_set(0.112837411f));
    q = vf_add(vf_mul(q, zz), vf_set(-0.376126379f));
    q = vf_add(vf_mul(q, zz), vf_set(0.128379166f));
    vf erf_small = vf_add(z, vf_mul(z, q));
    return vf_mul(vf_add(vf_set(1.0f), erf_small), vf_set(0.5f));
}

/* every lane of x in vm_phi_small's range (false on NaN): activations of trained networks
 * mostly are, and the erfc half of vm_phi is then skipped */
static inline int vm_phi_all_small(vf x)
{
    return vm_all(vm_lt(vm_abs(vf_mul(x, vf_set(VM_SQRT1_2))), vf_set(0.875f)));
}

static inline vm_cdf vm_phi(vf x, vf e2s)
{
    vf z = vf_mul(x, vf_set(VM_SQRT1_2));
    vf a = vm_abs(z);
    vf small = vm_phi_small(z);
    vm near = vm_lt(a, vf_set(2.25f));
    vf inv = vf_div(vf_set(1.0f), a);
    vf t = vf_sub(inv, vf_sel(near, vf_set(0.793650806f), vf_set(0.269392043f)));
    vf s = vf_sel(near, vf_set(vm_erfc_near[0]), vf_set(vm_erfc_far[0]));
    for (int k = 1; k < VM_ERFC_TERMS; k++)
        s = vf_add(vf_mul(s, t), vf_sel(near, vf_set(vm_erfc_near[k]), vf_set(vm_erfc_far[k])));
    vf half_erfc_s = vf_mul(vf_mul(vf_mul(e2s, s), inv), vf_set(0.5f));
    vf upper = vf_sub(vf_set(1.0f), vf_mul(half_erfc_s, vf_set(VM_TAIL_SCALE)));
    vm is_small = vm_lt(a, vf_set(0.875f));
    vm lower = vm_lt(x, vf_set(0.0f));
    vm_cdf c;
    c.phi = vf_sel(is_small, small, vf_sel(lower, half_erfc_s, upper));
    c.scale = vf_sel(is_small, vf_set(1.0f), vf_sel(lower, vf_set(VM_TAIL_SCALE),
                                                     vf_set(1.0f)));
    return c;
}

/* exact GELU x Phi(x): <= 5 ulp (4.95; subnormal results 2.6); the lower tail keeps its
 * relative accuracy, unlike 0.5 x (1 + erf(x / sqrt 2)) evaluated as written (torch's form).
 * gelu(-inf) = NaN, as torch. */
static inline vf vm_gelu(vf x)
{
    if (vm_phi_all_small(x))           /* x Phi(x) times a scale of 1, for no NaN lane */
        return vf_mul(x, vm_phi_small(vf_mul(x, vf_set(VM_SQRT1_2))));
    vm_cdf c = vm_phi(x, vm_exp_neg_half_sq(vm_abs(x)));
    return vm_nan_fix(x, vf_mul(vf_mul(x, c.phi), c.scale));
}

/* Phi(x) + x phi(x), phi(x) = e^(-x^2 / 2) / sqrt(2 pi): <= 4.2 ulp of the larger term. Both
 * terms carry Phi's scale. */
static inline vf vm_gelu_grad(vf x)
{
    vf e2s = vm_exp_neg_half_sq(vm_abs(x));
    if (vm_phi_all_small(x)) {         /* scale 1: e2s 2^-64 is e^(-x^2 / 2) */
        vf pdf = vf_mul(vf_mul(e2s, vf_set(VM_TAIL_SCALE)), vf_set(VM_INV_SQRT_2PI));
        return vf_add(vm_phi_small(vf_mul(x, vf_set(VM_SQRT1_2))), vf_mul(x, pdf));
    }
    vm_cdf c = vm_phi(x, e2s);
    /* e2s 2^-64 where the scale is 1: the one rounding of e^(-x^2 / 2) */
    vf e2 = vf_mul(e2s, vf_sel(vm_eq(c.scale, vf_set(1.0f)), vf_set(VM_TAIL_SCALE),
                               vf_set(1.0f)));
    vf pdf = vf_mul(e2, vf_set(VM_INV_SQRT_2PI));
    return vm_nan_fix(x, vf_mul(vf_add(c.phi, vf_mul(x, pdf)), c.scale));
}

/* sqrt(2/pi) (x + 0.044715 x^3), in mp_gelu_tanh's operation order */
static inline vf vm_gelu_inner(vf x)
{
    vf c = vf_mul(vf_mul(vf_mul(vf_set(0.044715f), x), x), x);
    return vf_mul(vf_set(VM_SQRT2_PI), vf_add(x, c));
}

/* 0.5 x (1 + tanh u) = x sigmoid(2u): no cancellation for x < 0; <= 3.4 ulp from the fp32 u
 * (whose own rounding, as in torch, is amplified ~2|u| times in the lower tail). */
static inline vf vm_gelu_tanh(vf x)
{
    vf u = vm_gelu_inner(x);
    return vm_nan_fix(x, vm_x_sigmoid(x, vm_logistic_of(vf_add(u, u))));
}

/* 0.5 (1 + t) + 0.5 x (1 - t^2) u' with 1 + t = 2 s, 1 - t = 2 s' (s = sigmoid(2u),
 * s' = sigmoid(-2u)): s + 2 x s s' u'; <= 6.6 ulp of the larger term, from the fp32 u. */
static inline vf vm_gelu_tanh_grad(vf x)
{
    vf u = vm_gelu_inner(x);
    vm_logistic l = vm_logistic_of(vf_add(u, u));
    vf ss = vm_logistic_pos_scaled(l), sc = vm_logistic_neg(l);     /* s = ss * scale */
    /* beyond |x| = 20, s s' is 0; clamping keeps x^2 finite there (0 * inf would be NaN) */
    vf xc = vf_max(vf_min(x, vf_set(20.0f)), vf_set(-20.0f));
    vf du = vf_mul(vf_set(VM_SQRT2_PI),
                   vf_add(vf_set(1.0f), vf_mul(vf_mul(vf_set(3.0f * 0.044715f), xc), xc)));
    vf t = vf_mul(vf_mul(vf_mul(vf_mul(vf_set(2.0f), xc), ss), sc), du);
    vf r = vf_sel(vm_gt(vm_abs(x), vf_set(3.40282347e38f)), vf_of(vi_set(0x7fc00000)),
                  vf_mul(vf_add(ss, t), l.scale));      /* +-inf: NaN, as torch */
    return vm_nan_fix(x, r);
}

#endif
