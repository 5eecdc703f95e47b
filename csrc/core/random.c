/* random.c - Philox4x32-10 and the fills built on it (see random.h). Element i of a fill
 * draws from block (offset + i / per_block), so results do not depend on how work is split. */
#include "random.h"

#include <math.h>

#include "copy.h"
#include "../shared/mp_philox.h"

void mp_philox(uint64_t seed, uint64_t counter, uint32_t out[4])
{
    mp_philox4x32(seed, counter, out);
}

static mp_status check_target(const mp_tensor *t)
{
    if (t->storage->device != MP_DEVICE_CPU)
        return mp_error(MP_ERR_NO_CUDA, "CUDA random numbers are not available in this build");
    if (!mp_tensor_is_contiguous(t))
        return mp_error(MP_ERR_VALUE, "random fill needs a contiguous tensor");
    return MP_OK;
}

mp_status mp_random_check_target(const mp_tensor *t)
{
    return check_target(t);
}

static int mantissa_bits(mp_dtype dt)
{
    return dt == MP_DTYPE_FLOAT16 ? 11 : dt == MP_DTYPE_BFLOAT16 ? 8 : 24;
}

mp_status mp_random_uniform_(mp_tensor *t, uint64_t seed, uint64_t offset, double lo,
                             double hi, uint64_t *blocks_used)
{
    mp_status st = check_target(t);
    if (st != MP_OK)
        return st;
    if (!mp_dtype_is_float(t->dtype))
        return mp_error(MP_ERR_TYPE, "uniform_ needs a floating point tensor");
    int64_t n = mp_tensor_numel(t);
    int bits = mantissa_bits(t->dtype);
    double scale = ldexp(1.0, -bits);
    size_t sz = mp_dtype_size(t->dtype);
    char *p = mp_tensor_data(t);
    uint32_t w[4];
    for (int64_t i = 0; i < n; i++) {
        if (i % 4 == 0)
            mp_philox(seed, offset + (uint64_t)(i / 4), w);
        double u = (double)(w[i % 4] >> (32 - bits)) * scale;
        mp_scalar v = {lo + u * (hi - lo), 0, 0};
        mp_store_scalar(t->dtype, p + (size_t)i * sz, v);
    }
    *blocks_used = (uint64_t)((n + 3) / 4);
    return MP_OK;
}

mp_status mp_random_normal_(mp_tensor *t, uint64_t seed, uint64_t offset, double mean,
                            double std, uint64_t *blocks_used)
{
    mp_status st = check_target(t);
    if (st != MP_OK)
        return st;
    if (!mp_dtype_is_float(t->dtype))
        return mp_error(MP_ERR_TYPE, "normal_ needs a floating point tensor");
    int64_t n = mp_tensor_numel(t);
    size_t sz = mp_dtype_size(t->dtype);
    char *p = mp_tensor_data(t);
    uint32_t w[4];
    const double two_pi = 6.283185307179586476925286766559;
    for (int64_t i = 0; i < n; i++) {
        if (i % 2 == 0)
            mp_philox(seed, offset + (uint64_t)(i / 2), w);
        int j = (int)(i % 2) * 2;
        double u1 = ((double)w[j] + 1.0) * 2.3283064365386963e-10;   /* (0, 1]: log is finite */
        double u2 = (double)w[j + 1] * 2.3283064365386963e-10;
        double z = sqrt(-2.0 * log(u1)) * cos(two_pi * u2);
        mp_scalar v = {mean + std * z, 0, 0};
        mp_store_scalar(t->dtype, p + (size_t)i * sz, v);
    }
    *blocks_used = (uint64_t)((n + 1) / 2);
    return MP_OK;
}

mp_status mp_random_int_(mp_tensor *t, uint64_t seed, uint64_t offset, int64_t low,
                         int64_t high, uint64_t *blocks_used)
{
    mp_status st = check_target(t);
    if (st != MP_OK)
        return st;
    if (high <= low)
        return mp_error(MP_ERR_VALUE, "random_ expects 'from' to be less than 'to', but got "
                        "from=%lld >= to=%lld", (long long)low, (long long)high);
    uint64_t range = (uint64_t)high - (uint64_t)low;
    int64_t n = mp_tensor_numel(t);
    size_t sz = mp_dtype_size(t->dtype);
    char *p = mp_tensor_data(t);
    uint32_t w[4];
    for (int64_t i = 0; i < n; i++) {
        if (i % 2 == 0)
            mp_philox(seed, offset + (uint64_t)(i / 2), w);
        int j = (int)(i % 2) * 2;
        uint64_t r = (((uint64_t)w[j] << 32) | w[j + 1]) % range;
        mp_scalar v = {0.0, (int64_t)((uint64_t)low + r), 1};
        mp_store_scalar(t->dtype, p + (size_t)i * sz, v);
    }
    *blocks_used = (uint64_t)((n + 1) / 2);
    return MP_OK;
}
