/* random_dist.c - the distributions beyond uniform/normal/int (see random.h): exponential,
 * bernoulli (one p, or a p per element), multinomial (with and without replacement) and
 * randperm. Draw k of a call reads Philox block offset + k / per_block (4 draws of 32 bits or
 * 2 of 64 bits per block), so results do not depend on how the work is split; every call
 * reports the blocks it consumed. Per-element checks run before anything is written. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../copy.h"
#include "../backend.h"
#include "../random.h"
#include "../rows.h"
#include "../view.h"

/* 32-bit word k of the stream (4 per block); cached block in w/blk. */
static uint32_t word32(uint64_t seed, uint64_t offset, int64_t k, uint32_t w[4], int64_t *blk)
{
    if (k / 4 != *blk) {
        *blk = k / 4;
        mp_philox(seed, offset + (uint64_t)*blk, w);
    }
    return w[k % 4];
}

/* 64-bit draw k of the stream (2 per block). */
static uint64_t word64(uint64_t seed, uint64_t offset, int64_t k, uint32_t w[4], int64_t *blk)
{
    if (k / 2 != *blk) {
        *blk = k / 2;
        mp_philox(seed, offset + (uint64_t)*blk, w);
    }
    int j = (int)(k % 2) * 2;
    return ((uint64_t)w[j] << 32) | w[j + 1];
}

/* (0, 1] with 53 random bits: its log is finite. */
static double open_unit(uint64_t r)
{
    return ((double)(r >> 11) + 1.0) * 0x1p-53;
}

mp_status mp_random_exponential_(mp_tensor *t, uint64_t seed, uint64_t offset, double lambd,
                                 uint64_t *blocks_used)
{
    MP_HOST_ONLY("random_exponential_", t);
    mp_status st = mp_random_check_target(t);
    if (st != MP_OK)
        return st;
    if (!mp_dtype_is_float(t->dtype))
        return mp_error(MP_ERR_RUNTIME, "Exponential distribution is a continuous probability "
                        "distribution. dtype must be a floating point but you specified %s",
                        mp_dtype_torch_name(t->dtype));
    if (!(lambd > 0.0))
        return mp_error(MP_ERR_RUNTIME, "exponential_ expects lambda > 0.0, but found "
                        "lambda=%g", lambd);
    int64_t n = mp_tensor_numel(t), blk = -1;
    size_t sz = mp_dtype_size(t->dtype);
    char *p = mp_tensor_data(t);
    uint32_t w[4];
    for (int64_t i = 0; i < n; i++) {
        double u = ((double)word32(seed, offset, i, w, &blk) + 1.0) * 0x1p-32;   /* (0, 1] */
        mp_scalar v = {-log(u) / lambd, 0, 0};
        mp_store_scalar(t->dtype, p + (size_t)i * sz, v);
    }
    *blocks_used = (uint64_t)((n + 3) / 4);
    return MP_OK;
}

/* t[i] = u_i < p_i, with p the scalar (ps == NULL) or ps[i]. */
static void bernoulli_fill(mp_tensor *t, const float *ps, double p, uint64_t seed,
                           uint64_t offset, uint64_t *blocks_used)
{
    int64_t n = mp_tensor_numel(t), blk = -1;
    size_t sz = mp_dtype_size(t->dtype);
    char *out = mp_tensor_data(t);
    uint32_t w[4];
    for (int64_t i = 0; i < n; i++) {
        double u = (double)word32(seed, offset, i, w, &blk) * 0x1p-32;          /* [0, 1) */
        int hit = u < (ps ? (double)ps[i] : p);
        mp_scalar v = {(double)hit, hit, 1};
        mp_store_scalar(t->dtype, out + (size_t)i * sz, v);
    }
    *blocks_used = (uint64_t)((n + 3) / 4);
}

mp_status mp_random_bernoulli_(mp_tensor *t, double p, uint64_t seed, uint64_t offset,
                               uint64_t *blocks_used)
{
    MP_HOST_ONLY("random_bernoulli_", t);
    mp_status st = mp_random_check_target(t);
    if (st != MP_OK)
        return st;
    if (!(p >= 0.0 && p <= 1.0))
        return mp_error(MP_ERR_RUNTIME, "bernoulli_ expects p to be in [0, 1], but got p=%g",
                        p);
    bernoulli_fill(t, NULL, p, seed, offset, blocks_used);
    return MP_OK;
}

mp_status mp_random_bernoulli_tensor_(mp_tensor *t, mp_tensor *p, uint64_t seed,
                                      uint64_t offset, uint64_t *blocks_used)
{
    MP_HOST_ONLY("random_bernoulli_tensor_", t, p);
    mp_status st = mp_random_check_target(t);
    if (st != MP_OK)
        return st;
    if (!mp_dtype_is_float(p->dtype))
        return mp_error(MP_ERR_TYPE, "bernoulli: \"bernoulli_tensor_cpu_p_\" not implemented "
                        "for '%s' (the probabilities must be a floating point tensor)",
                        mp_dtype_torch_name(p->dtype));
    mp_tensor *ex = NULL, *pf = NULL;
    st = mp_view_expand(p, t->shape, t->ndim, &ex);
    if (st == MP_OK)
        st = mp_tensor_cast(ex, MP_DTYPE_FLOAT32, &pf);     /* contiguous, t's layout */
    mp_tensor_decref(ex);
    if (st != MP_OK)
        return st;
    const float *ps = mp_tensor_data(pf);
    int64_t n = mp_tensor_numel(pf);
    for (int64_t i = 0; i < n && st == MP_OK; i++)
        if (!(ps[i] >= 0.0f && ps[i] <= 1.0f))
            st = mp_error(MP_ERR_RUNTIME, "bernoulli: every probability must be in [0, 1] "
                          "(Expected p_in >= 0 && p_in <= 1 to be true, but got false)");
    if (st == MP_OK)
        bernoulli_fill(t, ps, 0.0, seed, offset, blocks_used);
    mp_tensor_decref(pf);
    return st;
}

/* ---- multinomial ---- */

static mp_status multinomial_check(const mp_tensor *probs, int64_t num_samples,
                                   int replacement)
{
    if (!mp_dtype_is_float(probs->dtype))
        return mp_error(MP_ERR_RUNTIME, "multinomial only supports floating-point dtypes for "
                        "input, got: %s", mp_dtype_torch_name(probs->dtype));
    if (probs->ndim != 1 && probs->ndim != 2)
        return mp_error(MP_ERR_RUNTIME, "prob_dist must be 1 or 2 dim");
    if (num_samples <= 0)
        return mp_error(MP_ERR_RUNTIME, "cannot sample n_sample <= 0 samples");
    if (!replacement && num_samples > probs->shape[probs->ndim - 1])
        return mp_error(MP_ERR_RUNTIME, "cannot sample n_sample > prob_dist.size(-1) samples "
                        "without replacement");
    return MP_OK;
}

/* Every row finite, >= 0 and with a positive sum. */
static mp_status multinomial_values(const float *p, int64_t rows, int64_t ncat)
{
    for (int64_t r = 0; r < rows; r++) {
        double sum = 0.0;
        for (int64_t i = 0; i < ncat; i++) {
            float x = p[r * ncat + i];
            if (!(x >= 0.0f) || isinf(x))
                return mp_error(MP_ERR_RUNTIME, "probability tensor contains either `inf`, "
                                "`nan` or element < 0");
            sum += x;
        }
        if (!(sum > 0.0))
            return mp_error(MP_ERR_RUNTIME, "invalid multinomial distribution (sum of "
                            "probabilities <= 0)");
    }
    return MP_OK;
}

/* Draws with replacement: the first category whose running sum exceeds u * total. */
static void sample_with(const float *p, int64_t ncat, double *cdf, int64_t ns, int64_t *out,
                        uint64_t seed, uint64_t offset, int64_t k0)
{
    double acc = 0.0;
    int64_t last = 0;
    for (int64_t i = 0; i < ncat; i++) {
        acc += p[i];
        cdf[i] = acc;
        if (p[i] > 0.0f)
            last = i;
    }
    uint32_t w[4];
    int64_t blk = -1;
    for (int64_t j = 0; j < ns; j++) {
        double x = (double)(word64(seed, offset, k0 + j, w, &blk) >> 11) * 0x1p-53 * acc;
        int64_t lo = 0, hi = ncat;             /* smallest i with cdf[i] > x, in [lo, hi] */
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (cdf[mid] > x)
                hi = mid;
            else
                lo = mid + 1;
        }
        out[j] = lo < ncat ? lo : last;        /* x rounded up to the total */
    }
}

typedef struct {
    int zero;       /* probability 0: after every other category */
    double key;     /* E / p (E alone when zero): the smallest keys are the draws, in order */
    int64_t idx;
} race_key;

static int race_less(const race_key *x, const race_key *y)
{
    if (x->zero != y->zero)
        return x->zero < y->zero;
    return x->key < y->key || (x->key == y->key && x->idx < y->idx);
}

static int race_cmp(const void *a, const void *b)
{
    const race_key *x = a, *y = b;
    if (x->zero != y->zero)
        return x->zero < y->zero ? -1 : 1;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Draws without replacement by an exponential race: category i finishes at E_i / p_i, and
 * the order of finishing is the order of sequential draws. Categories of probability 0 come
 * after all others, in random order (as torch returns them once the others are used up). */
static void sample_without(const float *p, int64_t ncat, race_key *keys, int64_t ns,
                           int64_t *out, uint64_t seed, uint64_t offset, int64_t k0)
{
    uint32_t w[4];
    int64_t blk = -1;
    for (int64_t i = 0; i < ncat; i++) {
        double e = -log(open_unit(word64(seed, offset, k0 + i, w, &blk)));
        keys[i].zero = p[i] == 0.0f;
        keys[i].key = keys[i].zero ? e : e / p[i];
        keys[i].idx = i;
    }
    if (ns == 1) {
        int64_t best = 0;
        for (int64_t i = 1; i < ncat; i++)
            if (race_less(&keys[i], &keys[best]))
                best = i;
        out[0] = keys[best].idx;
        return;
    }
    qsort(keys, (size_t)ncat, sizeof *keys, race_cmp);
    for (int64_t j = 0; j < ns; j++)
        out[j] = keys[j].idx;
}

static mp_status multinomial_run(const float *p, int64_t rows, int64_t ncat, int64_t ns,
                                 int replacement, int64_t *out, uint64_t seed, uint64_t offset,
                                 uint64_t *blocks_used)
{
    size_t each = replacement ? sizeof(double) : sizeof(race_key);
    void *buf = malloc(each * (size_t)(ncat > 0 ? ncat : 1));
    if (!buf)
        return mp_error(MP_ERR_NOMEM, "out of memory for multinomial's work buffer");
    int64_t per_row = replacement ? ns : ncat;
    for (int64_t r = 0; r < rows; r++) {
        if (replacement)
            sample_with(p + r * ncat, ncat, buf, ns, out + r * ns, seed, offset, r * per_row);
        else
            sample_without(p + r * ncat, ncat, buf, ns, out + r * ns, seed, offset,
                           r * per_row);
    }
    free(buf);
    *blocks_used = (uint64_t)((rows * per_row + 1) / 2);
    return MP_OK;
}

mp_status mp_random_multinomial(mp_tensor *probs, int64_t num_samples, int replacement,
                                uint64_t seed, uint64_t offset, mp_tensor **out,
                                uint64_t *blocks_used)
{
    MP_HOST_ONLY("random_multinomial", probs);
    *blocks_used = 0;
    mp_status st = multinomial_check(probs, num_samples, replacement);
    if (st != MP_OK)
        return st;
    if (probs->storage->device != MP_DEVICE_CPU)
        return mp_error(MP_ERR_NO_CUDA, "CUDA random numbers are not available in this build");
    int64_t rows = probs->ndim == 2 ? probs->shape[0] : 1, ncat = probs->shape[probs->ndim - 1];
    int64_t oshape[2] = {rows, num_samples};
    mp_tensor *pf = NULL;
    if (probs->dtype == MP_DTYPE_FLOAT32)
        st = mp_tensor_contiguous(probs, &pf);
    else
        st = mp_tensor_cast(probs, MP_DTYPE_FLOAT32, &pf);
    if (st != MP_OK)
        return st;
    const float *p = mp_tensor_data(pf);
    st = multinomial_values(p, rows, ncat);
    if (st == MP_OK)
        st = mp_tensor_empty(probs->ndim == 2 ? oshape : oshape + 1, probs->ndim,
                             MP_DTYPE_INT64, MP_DEVICE_CPU, out);
    if (st == MP_OK) {
        st = multinomial_run(p, rows, ncat, num_samples, replacement, mp_tensor_data(*out),
                             seed, offset, blocks_used);
        if (st != MP_OK) {
            mp_tensor_decref(*out);
            *out = NULL;
        }
    }
    mp_tensor_decref(pf);
    return st;
}

/* ---- randperm ---- */

mp_status mp_random_randperm(int64_t n, mp_dtype dtype, uint64_t seed, uint64_t offset,
                             mp_tensor **out, uint64_t *blocks_used)
{
    *blocks_used = 0;
    mp_tensor *perm = NULL;
    mp_status st = mp_tensor_empty(&n, 1, MP_DTYPE_INT64, MP_DEVICE_CPU, &perm);
    if (st != MP_OK)
        return st;
    int64_t *a = mp_tensor_data(perm), blk = -1;
    uint32_t w[4];
    for (int64_t i = 0; i < n; i++)
        a[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {      /* Fisher-Yates; draw k = n - 1 - i */
        int64_t j = (int64_t)(word64(seed, offset, n - 1 - i, w, &blk) % (uint64_t)(i + 1));
        int64_t tmp = a[i];
        a[i] = a[j];
        a[j] = tmp;
    }
    *blocks_used = n > 1 ? (uint64_t)(n / 2) : 0;     /* n - 1 draws, 2 per block */
    if (dtype == MP_DTYPE_INT64) {
        *out = perm;
        return MP_OK;
    }
    st = mp_tensor_cast(perm, dtype, out);
    mp_tensor_decref(perm);
    return st;
}
