/* gemm_check_main.c - test-only driver: the GEMM (csrc/cpu/gemm.c and its packing) with the
 * AVX-512 micro-kernels built against shim.h on a CPU without AVX-512. A stand-in for
 * dispatch.c hands gemm.c a cast table for every level (the AVX-512 casts emulated too), so
 * mp_gemm_at(g, MP_ISA_AVX512 / MP_ISA_AVX512BF16, threads) runs the real driver and pick().
 * Every product is checked against a float64 product of the same rounded inputs, within
 * (K + 4) * 2^-24 * sum |a||b| plus the epilogue's and the output dtype's roundings (integer
 * data: exactly), and against the scalar kernel. Also: the kernel each level picks, 2 threads
 * bit-identical to 1, C's padding untouched, vdpbf16ps's order and DAZ/FTZ at kernel level, and
 * the emulation's flushing against the host's FMA under MXCSR.DAZ|FTZ.
 * Prints "FAIL ..." lines and one "summary <level> <products> <failures> <worst>" per level. */
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/gemm.h"
#include "cpu/gemm_pack.h"
#include "cpu/gemm_ukr.h"

/* ---- stand-in for dispatch.c: every level "supported", casts of that level ---- */

static mp_cpu_kernels tables[MP_ISA_COUNT];

static void fill_tables(void)
{
    for (int i = 0; i < MP_ISA_COUNT; i++) {
        mp_cpu_fill_scalar(&tables[i]);
        tables[i].isa = (mp_isa)i;
    }
    mp_cpu_fill_avx2(&tables[MP_ISA_AVX2]);              /* the host has AVX2 + F16C */
    mp_cpu_fill_avx512(&tables[MP_ISA_AVX512]);          /* emulated (cast_avx512_emu.c) */
    mp_cpu_fill_avx512bf16(&tables[MP_ISA_AVX512BF16]);
    /* the micro-kernels per level, as csrc/cpu/dispatch.c chooses them */
    tables[MP_ISA_SCALAR].gemm_f32 = &mp_gemm_ukr_f32_scalar;
    tables[MP_ISA_AVX2].gemm_f32 = &mp_gemm_ukr_f32_avx2;
    tables[MP_ISA_AVX512].gemm_f32 = &mp_gemm_ukr_f32_avx512;
    tables[MP_ISA_AVX512BF16].gemm_f32 = &mp_gemm_ukr_f32_avx512;
    tables[MP_ISA_AVX512BF16].gemm_bf16 = &mp_gemm_ukr_bf16_avx512bf16;
}

const mp_cpu_kernels *mp_cpu_for_isa(mp_isa isa)
{
    return (int)isa >= 0 && isa < MP_ISA_COUNT ? &tables[isa] : NULL;
}

const mp_cpu_kernels *mp_cpu(void)
{
    return &tables[MP_ISA_SCALAR];
}

/* ---- data ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rng_next(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

static size_t dsize(mp_dtype dt)
{
    return dt == MP_DTYPE_FLOAT32 ? 4 : 2;
}

static void put(void *p, mp_dtype dt, int64_t i, float v)
{
    if (dt == MP_DTYPE_FLOAT16)
        ((mp_half *)p)[i] = mp_f32_to_half(v);
    else if (dt == MP_DTYPE_BFLOAT16)
        ((mp_bf16 *)p)[i] = mp_f32_to_bf16(v);
    else
        ((float *)p)[i] = v;
}

static double get(const void *p, mp_dtype dt, int64_t i)
{
    if (dt == MP_DTYPE_FLOAT16)
        return mp_half_to_f32(((const mp_half *)p)[i]);
    if (dt == MP_DTYPE_BFLOAT16)
        return mp_bf16_to_f32(((const mp_bf16 *)p)[i]);
    return ((const float *)p)[i];
}

/* n values: integers in [-3, 3] (every sum exact) or uniform in [-1, 1), rounded to dt. */
static void *random_array(mp_dtype dt, int64_t n, int ints)
{
    void *p = malloc((size_t)n * dsize(dt) + 64);
    for (int64_t i = 0; p && i < n; i++)
        put(p, dt, i, ints ? (float)((int)(rng_next() % 7) - 3)
                           : (float)rng_next() * 0x1p-31f - 1.0f);
    return p;
}

/* ---- one product ---- */

typedef struct {
    int m, n, k, ta, tb;
    mp_dtype at, bt, ct;
    float alpha, beta;
    int bias;                  /* 0: none */
    mp_dtype bias_dt;
    float bias_scale;
    mp_gemm_act act;
    int ints;
} gcase;

static const char *dt_name(mp_dtype dt)
{
    return dt == MP_DTYPE_FLOAT16 ? "f16" : dt == MP_DTYPE_BFLOAT16 ? "bf16" : "f32";
}

static void describe(const gcase *c, char *buf, size_t len)
{
    snprintf(buf, len, "%dx%dx%d t%d%d %s*%s->%s alpha=%g beta=%g bias=%s act=%d %s", c->m,
             c->n, c->k, c->ta, c->tb, dt_name(c->at), dt_name(c->bt), dt_name(c->ct),
             (double)c->alpha, (double)c->beta, c->bias ? dt_name(c->bias_dt) : "none",
             (int)c->act, c->ints ? "ints" : "real");
}

typedef struct {
    gcase c;
    void *a, *b, *bias, *c0;   /* inputs; c0: C before the product */
    int64_t lda, ldb, ldc, cbytes;
    double *ref, *bound;       /* expected result and allowed |error| per element of C */
} problem;

static double unit_out(mp_dtype dt)
{
    return dt == MP_DTYPE_FLOAT16 ? 0x1p-11 : dt == MP_DTYPE_BFLOAT16 ? 0x1p-8 : 0x1p-24;
}

static void reference(problem *pr)
{
    const gcase *c = &pr->c;
    const double u = 0x1p-24;
    for (int i = 0; i < c->m; i++) {
        for (int j = 0; j < c->n; j++) {
            double s = 0.0, abs_s = 0.0;
            for (int p = 0; p < c->k; p++) {
                double x = get(pr->a, c->at, c->ta ? (int64_t)p * pr->lda + i
                                                   : (int64_t)i * pr->lda + p);
                double y = get(pr->b, c->bt, c->tb ? (int64_t)j * pr->ldb + p
                                                   : (int64_t)p * pr->ldb + j);
                s += x * y;
                abs_s += fabs(x * y);
            }
            /* kernels: one rounding per k (+ a few where KC slices meet); vdpbf16ps may also
             * flush tiny partial sums (2^-126 each) */
            double e = c->ints ? 0.0 : fabs(c->alpha) * ((c->k + 4) * u * abs_s * 1.01 +
                                                         c->k * 0x1p-126);
            double v = c->alpha * s, mag = fabs(c->alpha) * abs_s;
            if (c->beta != 0.0f) {
                double cv = c->beta * ((const float *)pr->c0)[i * pr->ldc + j];
                v += cv, mag += fabs(cv);
            }
            if (c->bias) {
                double bv = (double)c->bias_scale * get(pr->bias, c->bias_dt, 2 * j);
                v += bv, mag += fabs(bv);
            }
            e += 4 * u * mag;       /* alpha *, beta *, + C, + bias in fp32 */
            if (c->act == MP_GEMM_ACT_RELU) {
                v = v > 0 ? v : 0.0;
            } else if (c->act == MP_GEMM_ACT_GELU) {
                e = 1.2 * e + 8 * u * fabs(v);      /* |gelu'| < 1.13; erff's rounding */
                v = 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
            }
            e += unit_out(c->ct) * fabs(v) + (c->ct == MP_DTYPE_FLOAT16 ? 0x1p-25 : 0x1p-140);
            pr->ref[i * c->n + j] = v;
            pr->bound[i * c->n + j] = e;
        }
    }
}

static int make_problem(problem *pr, const gcase *c)
{
    memset(pr, 0, sizeof *pr);
    pr->c = *c;
    int64_t ar = c->ta ? c->k : c->m, ac = c->ta ? c->m : c->k;
    int64_t br = c->tb ? c->n : c->k, bc = c->tb ? c->k : c->n;
    pr->lda = ac + 3, pr->ldb = bc + 3, pr->ldc = c->n + 5;   /* odd padding everywhere */
    pr->a = random_array(c->at, ar * pr->lda, c->ints);
    pr->b = random_array(c->bt, br * pr->ldb, c->ints);
    pr->bias = c->bias ? random_array(c->bias_dt, 2 * (int64_t)c->n, c->ints) : NULL;
    pr->cbytes = (int64_t)c->m * pr->ldc * (int64_t)dsize(c->ct);
    pr->c0 = malloc((size_t)pr->cbytes);
    pr->ref = malloc(sizeof(double) * (size_t)c->m * (size_t)c->n);
    pr->bound = malloc(sizeof(double) * (size_t)c->m * (size_t)c->n);
    if (!pr->a || !pr->b || (c->bias && !pr->bias) || !pr->c0 || !pr->ref || !pr->bound)
        return -1;
    /* C: random where the product goes, a NaN-like sentinel in the padding */
    memset(pr->c0, 0x7f, (size_t)pr->cbytes);
    for (int i = 0; i < c->m; i++)
        for (int j = 0; j < c->n; j++)
            put(pr->c0, c->ct, (int64_t)i * pr->ldc + j,
                c->ints ? (float)((int)(rng_next() % 5) - 2) : (float)rng_next() * 0x1p-32f);
    reference(pr);
    return 0;
}

static void free_problem(problem *pr)
{
    free(pr->a), free(pr->b), free(pr->bias), free(pr->c0), free(pr->ref), free(pr->bound);
}

/* Runs the product at one level; out gets C (a copy of c0 first). */
static mp_status run(const problem *pr, mp_isa isa, int threads, void *out)
{
    const gcase *c = &pr->c;
    memcpy(out, pr->c0, (size_t)pr->cbytes);
    mp_gemm_args g = mp_gemm_plain(c->ta, c->tb, c->m, c->n, c->k, pr->a, pr->lda, pr->b,
                                   pr->ldb, out, pr->ldc);
    g.a_dtype = c->at, g.b_dtype = c->bt, g.c_dtype = c->ct;
    g.alpha = c->alpha, g.beta = c->beta, g.act = c->act;
    if (c->bias) {
        g.bias = pr->bias, g.bias_dtype = c->bias_dt, g.bias_stride = 2;
        g.bias_scale = c->bias_scale;
    }
    return mp_gemm_at(&g, isa, threads);
}

typedef struct {
    const char *name;
    int products, failures;
    double worst;              /* largest |error| / bound seen with an fp32 C (the others are
                                * dominated by C's own rounding) */
} tally;

static void fail(tally *t, const gcase *c, const char *what, int i, int j, double got,
                 double want, double bound)
{
    char d[160];
    describe(c, d, sizeof d);
    if (t->failures++ < 20)
        printf("FAIL %s %s: %s at (%d,%d): got %.9g want %.9g bound %.3g\n", t->name, d, what,
               i, j, got, want, bound);
}

/* Compares C against the reference (and, when scalar is given, against the scalar result). */
static void check(tally *t, const problem *pr, const void *out, const void *scalar)
{
    const gcase *c = &pr->c;
    t->products++;
    for (int i = 0; i < c->m; i++) {
        const char *row = (const char *)out + (size_t)i * pr->ldc * dsize(c->ct);
        const char *row0 = (const char *)pr->c0 + (size_t)i * pr->ldc * dsize(c->ct);
        size_t pad = (size_t)(pr->ldc - c->n) * dsize(c->ct), used = c->n * dsize(c->ct);
        if (memcmp(row + used, row0 + used, i + 1 < c->m ? pad : 0) != 0) {
            fail(t, c, "padding of C written", i, c->n, 0, 0, 0);
            return;
        }
        for (int j = 0; j < c->n; j++) {
            int64_t q = (int64_t)i * pr->ldc + j;
            double got = get(out, c->ct, q), want = pr->ref[i * c->n + j];
            double bound = pr->bound[i * c->n + j], err = fabs(got - want);
            if (!(err <= bound)) {
                fail(t, c, "off the float64 reference", i, j, got, want, bound);
                return;
            }
            if (c->ct == MP_DTYPE_FLOAT32 && bound > 0 && err / bound > t->worst)
                t->worst = err / bound;
            if (scalar && !(fabs(got - get(scalar, c->ct, q)) <= 2 * bound)) {
                fail(t, c, "off the scalar kernel", i, j, got, get(scalar, c->ct, q), bound);
                return;
            }
        }
    }
}

/* One case at the two AVX-512 levels (and scalar), with `threads`; threads 2 also 1. */
static int run_case(tally *tl, const gcase *c, int threads)
{
    problem pr;
    if (make_problem(&pr, c) != 0)
        return -1;
    void *ref = malloc((size_t)pr.cbytes), *one = malloc((size_t)pr.cbytes);
    void *two = malloc((size_t)pr.cbytes);
    int status = ref && one && two ? 0 : -1;
    if (!status && run(&pr, MP_ISA_SCALAR, threads, ref) != MP_OK)
        status = -1;
    if (!status)
        check(&tl[0], &pr, ref, NULL);
    for (int l = 1; l <= 2 && !status; l++) {
        mp_isa isa = l == 1 ? MP_ISA_AVX512 : MP_ISA_AVX512BF16;
        if (run(&pr, isa, 1, one) != MP_OK) {
            status = -1;
            break;
        }
        check(&tl[l], &pr, one, ref);
        if (threads > 1) {
            if (run(&pr, isa, threads, two) != MP_OK) {
                status = -1;
                break;
            }
            if (memcmp(one, two, (size_t)pr.cbytes) != 0)
                fail(&tl[l], c, "2 threads differ from 1", 0, 0, 0, 0, 0);
        }
    }
    free(ref), free(one), free(two);
    free_problem(&pr);
    return status;
}

/* ---- the cases ---- */

static const int shapes[][3] = {
    {1, 77, 33}, {77, 1, 33}, {1, 300, 257}, {300, 1, 257}, {7, 13, 29}, {13, 45, 31},
    {12, 32, 192}, {24, 64, 384}, {25, 33, 257}, {37, 70, 513}, {11, 31, 1031},
    {97, 101, 103}, {5, 3, 1}, {11, 35, 2}, {14, 40, 385},
};

static const mp_dtype dts[3] = {MP_DTYPE_FLOAT32, MP_DTYPE_FLOAT16, MP_DTYPE_BFLOAT16};

/* Epilogue e of 6: plain (direct fp32 path), beta 1 (accumulating into C), alpha and beta,
 * fp32 bias + ReLU, bf16 bias + GELU, fp16 bias. */
static void epilogue(gcase *c, int e)
{
    c->alpha = 1.0f, c->beta = 0.0f, c->bias = 0, c->bias_scale = 1.0f;
    c->bias_dt = MP_DTYPE_FLOAT32, c->act = MP_GEMM_ACT_NONE;
    switch (e) {
    case 1: c->beta = 1.0f; break;
    case 2: c->alpha = 0.5f, c->beta = 0.25f; break;
    case 3: c->bias = 1, c->act = MP_GEMM_ACT_RELU; break;
    case 4: c->bias = 1, c->bias_dt = MP_DTYPE_BFLOAT16, c->alpha = -2.0f,
            c->bias_scale = 0.5f, c->act = MP_GEMM_ACT_GELU; break;
    case 5: c->bias = 1, c->bias_dt = MP_DTYPE_FLOAT16, c->alpha = 1.5f; break;
    default: break;
    }
    if (c->beta != 0.0f)
        c->ct = MP_DTYPE_FLOAT32;       /* beta != 0 needs an fp32 C */
}

static int run_all(tally *tl)
{
    int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
    for (int s = 0; s < nshapes; s++) {
        for (int combo = 0; combo < 27; combo++) {      /* every A, B and C dtype */
            gcase c;
            memset(&c, 0, sizeof c);
            c.m = shapes[s][0], c.n = shapes[s][1], c.k = shapes[s][2];
            c.at = dts[combo / 9], c.bt = dts[combo / 3 % 3], c.ct = dts[combo % 3];
            c.ta = (combo + s) & 1, c.tb = ((combo + s) >> 1) & 1;
            c.ints = (s + combo) % 4 == 0;
            epilogue(&c, (s + combo) % 6);
            if (run_case(tl, &c, 1) != 0)
                return -1;
        }
    }
    /* Products big enough for 2 threads (2^21 multiply-adds): split by rows (97 x 101,
     * 130 x 50) and by columns (24 x 200); bf16 x bf16 (the bf16 kernel) and mixed dtypes. */
    static const int big[][3] = {{97, 101, 257}, {24, 200, 513}, {130, 50, 515}};
    for (int s = 0; s < 3; s++) {
        for (int combo = 0; combo < 4; combo++) {
            gcase c;
            memset(&c, 0, sizeof c);
            c.m = big[s][0], c.n = big[s][1], c.k = big[s][2];
            c.at = combo < 2 ? MP_DTYPE_BFLOAT16 : dts[combo - 2];
            c.bt = combo == 0 || combo == 3 ? MP_DTYPE_BFLOAT16 : MP_DTYPE_FLOAT32;
            c.ct = dts[(s + combo) % 3];
            c.ta = combo & 1, c.tb = s & 1, c.ints = combo == 2;
            epilogue(&c, (s + 2 * combo) % 6);
            if (run_case(tl, &c, 2) != 0)
                return -1;
        }
    }
    return 0;
}

/* ---- kernel-level checks ---- */

static int check_names(void)
{
    const mp_dtype f = MP_DTYPE_FLOAT32, h = MP_DTYPE_FLOAT16, b = MP_DTYPE_BFLOAT16;
    struct { mp_isa isa; mp_dtype a, b; const char *want; } t[] = {
        {MP_ISA_AVX512BF16, b, b, "avx512bf16 bf16 12x32"},
        {MP_ISA_AVX512BF16, b, f, "avx512 fp32 12x32"},
        {MP_ISA_AVX512BF16, h, b, "avx512 fp32 12x32"},
        {MP_ISA_AVX512BF16, f, f, "avx512 fp32 12x32"},
        {MP_ISA_AVX512, b, b, "avx512 fp32 12x32"},
        {MP_ISA_AVX2, b, b, "avx2 fp32 6x16"},
        {MP_ISA_SCALAR, b, b, "scalar fp32 4x8"},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        const char *got = mp_gemm_kernel_name(t[i].isa, t[i].a, t[i].b);
        if (strcmp(got, t[i].want) != 0) {
            printf("FAIL pick: level %d %s*%s gave %s, want %s\n", (int)t[i].isa,
                   dt_name(t[i].a), dt_name(t[i].b), got, t[i].want);
            bad++;
        }
    }
    return bad;
}

/* The bf16 kernel on hand-packed panels (kc 4: two k pairs); B column j against row j of A:
 *  (0,0): k0 4096 x 4096, then k2 -1 x 1 and k3 1 x 1. The SDM's order (k3 before k2) gives
 *         2^24 + 1 -> 2^24 (ties to even), then - 1 -> 16777215; k2 first (SIMDe's order, or
 *         the fp32 kernels' k order) gives 16777216.
 *  (1,1): k0 2^-133 (a bf16 subnormal) x 2^126, k1 1 x 1: DAZ gives 1, not 1 + 2^-7.
 *  (2,2): k0 2^-100 x 2^-30: the product 2^-130 is subnormal and flushed to 0.
 *  (3,3): k1 2^-63 x 2^-63 = 2^-126, k0 2^-126 (1 + 2^-5) x 2^-12, then k2 2^-126 (1 + 2^-7) x
 *         -2^-12 (1 + 3 2^-7): exactly 2^-126 - 3 2^-152, which rounds to 2^-126 - 2^-150 at
 *         24 bits, so is tiny and flushed to 0 (rounded to the subnormal grid first, it would
 *         have become 2^-126).
 * Stored into C (ldc 40, the columns past 32 must stay), then added once more (accumulate). */
static int check_bf16_semantics(void)
{
    const mp_gemm_ukr *u = &mp_gemm_ukr_bf16_avx512bf16;
    _Alignas(64) uint16_t ap[2 * 12 * 2], bp[2 * 32 * 2];
    float c[12 * 40];
    memset(ap, 0, sizeof ap), memset(bp, 0, sizeof bp);
#define A_AT(i, k) ap[((k) / 2 * 12 + (i)) * 2 + ((k) & 1)]
#define B_AT(k, j) bp[((k) / 2 * 32 + (j)) * 2 + ((k) & 1)]
    A_AT(0, 0) = 0x4580, B_AT(0, 0) = 0x4580;                 /* 4096 x 4096 */
    A_AT(0, 2) = 0xbf80, B_AT(2, 0) = 0x3f80;                 /* -1 x 1 */
    A_AT(0, 3) = 0x3f80, B_AT(3, 0) = 0x3f80;                 /* 1 x 1 */
    A_AT(1, 0) = 0x0001, B_AT(0, 1) = 0x7e80;                 /* 2^-133 x 2^126 */
    A_AT(1, 1) = 0x3f80, B_AT(1, 1) = 0x3f80;                 /* 1 x 1 */
    A_AT(2, 0) = 0x0d80, B_AT(0, 2) = 0x3080;                 /* 2^-100 x 2^-30 */
    A_AT(3, 1) = 0x2000, B_AT(1, 3) = 0x2000;                 /* 2^-63 x 2^-63 */
    A_AT(3, 0) = 0x0084, B_AT(0, 3) = 0x3980;                 /* 2^-126 (1 + 2^-5) x 2^-12 */
    A_AT(3, 2) = 0x0081, B_AT(2, 3) = 0xb983;                 /* ... x -2^-12 (1 + 3 2^-7) */
#undef A_AT
#undef B_AT
    for (int i = 0; i < 12 * 40; i++)
        c[i] = 0.5f;
    int bad = 0;
    for (int pass = 0; pass < 2; pass++) {
        u->kernel(4, ap, bp, c, 40, pass);
        float times = (float)(pass + 1);
        struct { int i, j; float want; } t[] = {
            {0, 0, 16777215.0f * times}, {1, 1, times}, {2, 2, 0.0f}, {3, 3, 0.0f},
            {11, 31, 0.0f},
        };
        for (size_t q = 0; q < sizeof t / sizeof t[0]; q++) {
            float got = c[t[q].i * 40 + t[q].j];
            if (memcmp(&got, &t[q].want, sizeof got) != 0) {
                printf("FAIL vdpbf16ps semantics (pass %d): C(%d,%d) = %.9g, want %.9g\n",
                       pass, t[q].i, t[q].j, (double)got, (double)t[q].want);
                bad++;
            }
        }
    }
    for (int i = 0; i < 12; i++)                     /* columns 32.. are not the tile's */
        for (int j = 32; j < 40; j++)
            bad += c[i * 40 + j] != 0.5f;
    return bad;
}

float mp_emu_fma_daz_ftz(float a, float b, float c);    /* gemm_avx512bf16_emu.c */

/* The host's FMA with MXCSR.DAZ and FTZ set: x86's own flushing rules. The volatile accesses
 * keep the multiply-add between the two MXCSR writes. */
static float host_fma_daz_ftz(float a, float b, float c)
{
    volatile float va = a, vb = b, vc = c, vr;
    unsigned csr = _mm_getcsr();
    _mm_setcsr(csr | 0x8040);
    vr = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(va), _mm_set_ss(vb), _mm_set_ss(vc)));
    _mm_setcsr(csr);
    return vr;
}

static float bits_f32(uint32_t w)
{
    float f;
    memcpy(&f, &w, sizeof f);
    return f;
}

/* The emulated vdpbf16ps step against the host on n triples near fp32's underflow: a a bf16
 * with a small exponent (subnormals too), b a bf16 with a large one, c zero, a small fp32
 * (subnormals too) or minus the product plus a few 2^-149 (results at the threshold).
 * Prints "ftz_emulation <mismatches> <flushed>"; flushed counts results the host flushed. */
static int check_ftz_emulation(int n)
{
    int bad = 0, flushed = 0;
    for (int i = 0; i < n; i++) {
        uint32_t r = rng_next();
        float a = bits_f32((r & 0x80000000u) | (r % 31u) << 23 | (rng_next() & 0x7fu) << 16);
        float b = bits_f32((rng_next() & 0x80000000u) | (90u + rng_next() % 51u) << 23 |
                           (rng_next() & 0x7fu) << 16);
        float c = 0.0f;
        if (i % 3 == 1)
            c = bits_f32((rng_next() & 0x80000000u) | (rng_next() % 9u) << 23 |
                         (rng_next() & 0x7fffffu));
        else if (i % 3 == 2)
            c = (float)(-((double)a * b) + ((int)(rng_next() % 65) - 32) * 0x1p-149);
        float want = host_fma_daz_ftz(a, b, c), got = mp_emu_fma_daz_ftz(a, b, c);
        flushed += want == 0.0f && (double)a * b + c != 0.0;
        if (memcmp(&want, &got, sizeof got) != 0 && bad++ < 5)
            printf("FAIL ftz emulation: fma(%a, %a, %a) = %a, host %a\n", (double)a,
                   (double)b, (double)c, (double)got, (double)want);
    }
    printf("ftz_emulation %d %d\n", bad, flushed);
    return bad;
}

/* The AVX-512 bf16-pair packing against the portable packing, byte for byte: panel widths of
 * both kernels and others, full and partial panels, k tails and odd depths, offsets into the
 * source, both layouts (contiguous along k and along the panel), and the bytes past the
 * panels untouched. Returns the number of mismatching cases; prints the count checked. */
static int check_pair_packing(void)
{
    enum { SR = 80, SK = 90, CAP = 40 * 100 * 2 + 64 };
    static uint16_t src[SR * SK], want[CAP], got[CAP];
    for (int i = 0; i < SR * SK; i++)
        src[i] = (uint16_t)rng_next();
    static const int widths[] = {12, 32, 16, 8, 6, 31};
    static const int64_t rowss[] = {1, 5, 12, 13, 32, 33, 64, 70};
    static const int64_t kcs[] = {1, 2, 3, 15, 31, 32, 33, 47, 64, 65, 77};
    int bad = 0, cases = 0;
    for (int layout = 0; layout < 2; layout++)
        for (size_t wi = 0; wi < sizeof widths / sizeof *widths; wi++)
            for (size_t ri = 0; ri < sizeof rowss / sizeof *rowss; ri++)
                for (size_t ki = 0; ki < sizeof kcs / sizeof *kcs; ki++) {
                    int w = widths[wi];
                    int64_t rows = rowss[ri], kc = kcs[ki], r0 = 3, k0 = 5;
                    mp_pack_src sp = {(const char *)src, MP_DTYPE_BFLOAT16,
                                      layout ? 1 : SK, layout ? SR : 1, NULL};
                    if (r0 + rows > SR || k0 + kc > SK)
                        continue;
                    memset(want, 0xAB, sizeof want);
                    memset(got, 0xAB, sizeof got);
                    mp_gemm_pack(&sp, MP_PANEL_BF16_PAIRS, w, r0, rows, k0, kc, want);
                    mp_gemm_pack_pairs_avx512(&sp, MP_PANEL_BF16_PAIRS, w, r0, rows, k0, kc,
                                              got);
                    cases++;
                    if (memcmp(want, got, sizeof want) != 0) {
                        if (bad++ < 10)
                            printf("FAIL pair packing layout %s w %d rows %lld kc %lld\n",
                                   layout ? "along-rows" : "along-k", w, (long long)rows,
                                   (long long)kc);
                    }
                }
    printf("pack_checks %d %d\n", bad, cases);
    return bad;
}

int main(void)
{
    fill_tables();
    tally tl[3] = {{"scalar", 0, 0, 0}, {"avx512", 0, 0, 0}, {"avx512bf16", 0, 0, 0}};
    int bad = check_names();
    int sem = check_bf16_semantics() + check_ftz_emulation(1 << 20) + check_pair_packing();
    printf("kernel_checks %d\n", bad + sem);
    if (run_all(tl) != 0) {
        printf("FAIL out of memory or a product refused\n");
        return 2;
    }
    for (int l = 0; l < 3; l++)
        printf("summary %s %d %d %.3g\n", tl[l].name, tl[l].products, tl[l].failures,
               tl[l].worst);
    return bad + sem + tl[0].failures + tl[1].failures + tl[2].failures ? 1 : 0;
}
