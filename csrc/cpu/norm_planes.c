/* norm_planes.c - the plane loops of norm_planes.h. Planes are processed in blocks of whole
 * planes (about NP_CHUNK elements, or one plane when planes are larger), converted to fp32
 * once per block; sums use four double accumulators in a fixed order. */
#include "norm_planes.h"

#include <stdlib.h>

#include "dispatch.h"
#include "parallel.h"

#define NP_CHUNK 4096
#define NP_GRAIN_ELEMS 65536

enum { NP_MOMENTS, NP_DOT, NP_AFFINE };

typedef struct {
    int kind;
    mp_dtype dx, dg, dy;
    const char *x, *g;
    char *y;
    int64_t s, cmod;
    const float *ka, *kb, *kmu, *kc;
    double *o1, *o2;
    int failed;
} np_job;

static const float *load(mp_dtype dt, const char *base, int64_t off, int64_t n, float *buf)
{
    const char *p = base + (size_t)off * mp_dtype_size(dt);
    if (dt == MP_DTYPE_FLOAT16)
        mp_cpu()->f16_to_f32((const mp_half *)p, buf, (size_t)n);
    else if (dt == MP_DTYPE_BFLOAT16)
        mp_cpu()->bf16_to_f32((const mp_bf16 *)p, buf, (size_t)n);
    else
        return (const float *)p;
    return buf;
}

static void store(mp_dtype dt, char *base, int64_t off, int64_t n, const float *src)
{
    char *p = base + (size_t)off * mp_dtype_size(dt);
    if (dt == MP_DTYPE_FLOAT16)
        mp_cpu()->f32_to_f16(src, (mp_half *)p, (size_t)n);
    else if (dt == MP_DTYPE_BFLOAT16)
        mp_cpu()->f32_to_bf16(src, (mp_bf16 *)p, (size_t)n);
}

static double sum(const float *x, int64_t n)
{
    double a = 0.0, b = 0.0, c = 0.0, d = 0.0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        a += x[i], b += x[i + 1], c += x[i + 2], d += x[i + 3];
    for (; i < n; i++)
        a += x[i];
    return (a + b) + (c + d);
}

static double sum_sq_dev(const float *x, int64_t n, double m)
{
    double a = 0.0, b = 0.0;
    int64_t i = 0;
    for (; i + 2 <= n; i += 2) {
        double u = x[i] - m, v = x[i + 1] - m;
        a += u * u, b += v * v;
    }
    for (; i < n; i++)
        a += (x[i] - m) * (x[i] - m);
    return a + b;
}

static double sum_prod_dev(const float *g, const float *x, int64_t n, float c)
{
    double a = 0.0, b = 0.0;
    int64_t i = 0;
    for (; i + 2 <= n; i += 2)
        a += (double)g[i] * (x[i] - c), b += (double)g[i + 1] * (x[i + 1] - c);
    for (; i < n; i++)
        a += (double)g[i] * (x[i] - c);
    return a + b;
}

static void block(const np_job *j, int64_t p, int64_t np, const float *x, const float *g,
                  float *out)
{
    int64_t s = j->s;
    for (int64_t q = 0; q < np; q++) {
        int64_t k = j->cmod ? (p + q) % j->cmod : p + q;
        const float *xp = x + q * s, *gp = g ? g + q * s : NULL;
        if (j->kind == NP_MOMENTS) {
            double m = s ? sum(xp, s) / (double)s : 0.0;
            j->o1[p + q] = m;
            j->o2[p + q] = sum_sq_dev(xp, s, m);
        } else if (j->kind == NP_DOT) {
            j->o1[p + q] = sum(gp, s);
            j->o2[p + q] = sum_prod_dev(gp, xp, s, j->kmu[k]);
        } else {
            float ka = j->ka ? j->ka[k] : 0.0f, kb = j->kb[k], mu = j->kmu[k], kc = j->kc[k];
            float *yp = out + q * s;
            if (gp)
                for (int64_t i = 0; i < s; i++)
                    yp[i] = ka * gp[i] + kb * (xp[i] - mu) + kc;
            else
                for (int64_t i = 0; i < s; i++)
                    yp[i] = kb * (xp[i] - mu) + kc;
        }
    }
}

static void run_range(void *vctx, int64_t p0, int64_t p1)
{
    np_job *j = vctx;
    int64_t s = j->s, chunk = s >= NP_CHUNK ? 1 : NP_CHUNK / s, len = chunk * s;
    float *buf = malloc(sizeof(float) * (size_t)(3 * len + 1));
    if (!buf) {
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t p = p0; p < p1; p += chunk) {
        int64_t np = p1 - p < chunk ? p1 - p : chunk, off = p * s, n = np * s;
        const float *x = load(j->dx, j->x, off, n, buf);
        const float *g = j->g ? load(j->dg, j->g, off, n, buf + len) : NULL;
        float *out = NULL;
        if (j->kind == NP_AFFINE)
            out = j->dy == MP_DTYPE_FLOAT32 ? (float *)j->y + off : buf + 2 * len;
        block(j, p, np, x, g, out);
        if (out && j->dy != MP_DTYPE_FLOAT32)
            store(j->dy, j->y, off, n, out);
    }
    free(buf);
}

static int run(np_job *j, int64_t nplanes)
{
    if (nplanes <= 0 || j->s <= 0) {
        for (int64_t p = 0; j->kind != NP_AFFINE && p < nplanes; p++)
            j->o1[p] = j->o2[p] = 0.0;
        return 0;
    }
    mp_parallel_for(nplanes, NP_GRAIN_ELEMS / j->s + 1, run_range, j);
    return j->failed ? -1 : 0;
}

int mp_planes_moments(mp_dtype dt, const void *x, int64_t nplanes, int64_t s, double *mean,
                      double *m2)
{
    np_job j = {NP_MOMENTS, dt, dt, dt, x, NULL, NULL, s, 0, NULL, NULL, NULL, NULL, mean, m2,
                0};
    return run(&j, nplanes);
}

int mp_planes_dot(mp_dtype dx, const void *x, mp_dtype dg, const void *g, int64_t nplanes,
                  int64_t s, int64_t cmod, const float *center, double *sg, double *sgx)
{
    np_job j = {NP_DOT, dx, dg, dx, x, g, NULL, s, cmod, NULL, NULL, center, NULL, sg, sgx, 0};
    return run(&j, nplanes);
}

int mp_planes_affine(mp_dtype dy, void *y, mp_dtype dx, const void *x, mp_dtype dg,
                     const void *g, int64_t nplanes, int64_t s, int64_t cmod, const float *ka,
                     const float *kb, const float *kmu, const float *kc)
{
    np_job j = {NP_AFFINE, dx, dg, dy, x, g, y, s, cmod, ka, kb, kmu, kc, NULL, NULL, 0};
    return run(&j, nplanes);
}
