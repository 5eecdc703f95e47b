/* autocast.c - autocast state, policies and the weight-cast cache (see autocast.h).
 * Policies mirror torch's lists (aten/src/ATen/autocast_mode.cpp) for the ops mpamp has.
 * The cache is a small open-addressing table keyed by the source tensor; it owns a reference
 * to the source (so its address cannot be reused while cached) and to the cast. */
#include "autocast.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../autograd/autograd.h"
#include "../elementwise.h"
#include "../ops/ops.h"

static _Thread_local int ac_enabled[MP_AC_DEVICES];
static _Thread_local int ac_dtype_set[MP_AC_DEVICES];
static _Thread_local mp_dtype ac_dtype[MP_AC_DEVICES];
static _Thread_local int ac_cache_off;
static _Thread_local int ac_depth;

_Thread_local int mp_autocast_on;
_Thread_local int mp_autocast_excluded;

/* torch's error for the ops it bans under autocast */
static const char *banned_message(int op)
{
    (void)op;       /* binary_cross_entropy is the only banned op */
    return "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to "
           "autocast.\nMany models use a sigmoid layer right before the binary cross entropy "
           "layer.\nIn this case, combine the two layers using "
           "torch.nn.functional.binary_cross_entropy_with_logits\nor torch.nn.BCEWithLogitsLoss."
           "  binary_cross_entropy_with_logits and BCEWithLogits are\nsafe to autocast.";
}

static void sync_on(void)
{
    mp_autocast_on = 0;
    for (int d = 0; d < MP_AC_DEVICES; d++)
        mp_autocast_on |= ac_enabled[d] << d;
}

int mp_autocast_enabled(mp_device dev) { return ac_enabled[dev]; }

void mp_autocast_set_enabled(mp_device dev, int enabled)
{
    ac_enabled[dev] = !!enabled;
    sync_on();
}

mp_dtype mp_autocast_dtype(mp_device dev)
{
    if (ac_dtype_set[dev])
        return ac_dtype[dev];
    return dev == MP_DEVICE_CUDA ? MP_DTYPE_FLOAT16 : MP_DTYPE_BFLOAT16;
}

void mp_autocast_set_dtype(mp_device dev, mp_dtype dtype)
{
    ac_dtype[dev] = dtype;
    ac_dtype_set[dev] = 1;
}

int mp_autocast_cache_enabled(void) { return !ac_cache_off; }
void mp_autocast_set_cache_enabled(int enabled) { ac_cache_off = !enabled; }
int mp_autocast_increment_nesting(void) { return ++ac_depth; }
int mp_autocast_decrement_nesting(void) { return --ac_depth; }

mp_ac_policy mp_autocast_policy(int op, mp_device dev)
{
    const mp_op_row *r = mp_op_info(op);
    return r && (int)dev >= 0 && dev < MP_AC_DEVICES ? r->autocast[dev] : MP_AC_NONE;
}

void mp_autocast_suspend(mp_autocast_saved *saved)
{
    for (int d = 0; d < MP_AC_DEVICES; d++) {
        saved->enabled[d] = ac_enabled[d];
        ac_enabled[d] = 0;
    }
    sync_on();
}

void mp_autocast_restore(const mp_autocast_saved *saved)
{
    for (int d = 0; d < MP_AC_DEVICES; d++)
        ac_enabled[d] = saved->enabled[d];
    sync_on();
}

/* ---- the weight-cast cache ---- */

typedef struct {
    mp_tensor *src;     /* owned; NULL = empty slot */
    mp_tensor *cast;    /* owned */
} cache_slot;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static cache_slot *cache;
static int64_t cache_cap, cache_used;
static uint64_t cache_hits, cache_misses;

static int64_t slot_index(const mp_tensor *src, int64_t cap)
{
    uintptr_t h = (uintptr_t)src;
    h ^= h >> 17;
    h *= (uintptr_t)0x9E3779B97F4A7C15ull;
    return (int64_t)(h & (uintptr_t)(cap - 1));
}

static int cache_grow(void)
{
    int64_t cap = cache_cap ? cache_cap * 2 : 64;
    cache_slot *t = calloc((size_t)cap, sizeof *t);
    if (!t)
        return -1;
    for (int64_t i = 0; i < cache_cap; i++) {
        if (!cache[i].src)
            continue;
        int64_t j = slot_index(cache[i].src, cap);
        while (t[j].src)
            j = (j + 1) & (cap - 1);
        t[j] = cache[i];
    }
    free(cache);
    cache = t;
    cache_cap = cap;
    return 0;
}

/* Returns a new reference to the cached cast of src, or NULL. */
static mp_tensor *cache_get(mp_tensor *src, mp_dtype dt)
{
    mp_tensor *hit = NULL;
    pthread_mutex_lock(&cache_lock);
    for (int64_t j = cache_cap ? slot_index(src, cache_cap) : 0; cache_cap && cache[j].src;
         j = (j + 1) & (cache_cap - 1)) {
        if (cache[j].src == src && cache[j].cast->dtype == dt) {
            hit = cache[j].cast;
            mp_tensor_incref(hit);
            cache_hits++;
            break;
        }
    }
    pthread_mutex_unlock(&cache_lock);
    return hit;
}

static void cache_put(mp_tensor *src, mp_tensor *cast)
{
    pthread_mutex_lock(&cache_lock);
    if ((cache_used + 1) * 2 > cache_cap && cache_grow() < 0) {
        pthread_mutex_unlock(&cache_lock);
        return;                        /* out of memory: just don't cache */
    }
    int64_t j = slot_index(src, cache_cap);
    while (cache[j].src)
        j = (j + 1) & (cache_cap - 1);
    mp_tensor_incref(src);
    mp_tensor_incref(cast);
    cache[j].src = src;
    cache[j].cast = cast;
    cache_used++;
    cache_misses++;
    pthread_mutex_unlock(&cache_lock);
}

void mp_autocast_clear_cache(void)
{
    pthread_mutex_lock(&cache_lock);
    cache_slot *old = cache;
    int64_t cap = cache_cap;
    cache = NULL;
    cache_cap = cache_used = 0;
    pthread_mutex_unlock(&cache_lock);
    for (int64_t i = 0; i < cap; i++) {
        mp_tensor_decref(old[i].src);
        mp_tensor_decref(old[i].cast);
    }
    free(old);
}

void mp_autocast_cache_stats(uint64_t *hits, uint64_t *misses, int64_t *entries)
{
    pthread_mutex_lock(&cache_lock);
    *hits = cache_hits;
    *misses = cache_misses;
    *entries = cache_used;
    pthread_mutex_unlock(&cache_lock);
}

/* ---- casting the arguments of an op ---- */

static int eligible(const mp_tensor *t)
{
    return t && mp_dtype_is_float(t->dtype);       /* float64 does not exist in mpamp */
}

/* torch's cache rule: a lower-precision cast of an fp32 leaf that requires grad, to the
 * current autocast dtype, with the cache enabled */
static int cacheable(const mp_tensor *t, mp_dtype to, mp_device dev)
{
    return !ac_cache_off && t->dtype == MP_DTYPE_FLOAT32 && t->requires_grad &&
           !t->grad_fn && to == mp_autocast_dtype(dev);
}

static mp_status cast_one(mp_tensor *t, mp_dtype to, mp_device dev, mp_tensor **out)
{
    if (t->dtype == to) {
        mp_tensor_incref(t);
        *out = t;
        return MP_OK;
    }
    int use_cache = cacheable(t, to, dev);
    if (use_cache && (*out = cache_get(t, to)))
        return MP_OK;
    mp_status st = mp_op_to_dtype(t, to, 0, out);
    if (st == MP_OK && use_cache)
        cache_put(t, *out);
    return st;
}

/* the widest floating dtype among eligible args, starting from the autocast dtype */
static mp_status promote_target(mp_tensor *const *args, int n, mp_dtype lower, mp_dtype *out)
{
    mp_dtype dt = lower;
    for (int i = 0; i < n; i++) {
        if (!eligible(args[i]) || args[i]->dtype == lower)
            continue;
        if (args[i]->dtype != MP_DTYPE_FLOAT32)
            return mp_error(MP_ERR_RUNTIME, "Unexpected floating ScalarType in "
                            "at::autocast::prioritize");
        dt = MP_DTYPE_FLOAT32;
    }
    *out = dt;
    return MP_OK;
}

mp_status mp_autocast_args(int op, mp_tensor *const *args, int n, mp_tensor **out)
{
    mp_device dev = MP_DEVICE_CPU;
    for (int i = 0; i < n; i++) {
        out[i] = NULL;
        if (args[i] && args[i]->storage->device == MP_DEVICE_CUDA)
            dev = MP_DEVICE_CUDA;
    }
    mp_ac_policy pol = ac_enabled[dev] ? mp_autocast_policy(op, dev) : MP_AC_NONE;
    mp_dtype target = pol == MP_AC_FP32 ? MP_DTYPE_FLOAT32 : mp_autocast_dtype(dev);
    mp_status st = MP_OK;
    if (pol == MP_AC_BANNED)
        return mp_error(MP_ERR_RUNTIME, "%s", banned_message(op));
    if (pol == MP_AC_PROMOTE)
        st = promote_target(args, n, mp_autocast_dtype(dev), &target);
    for (int i = 0; i < n && st == MP_OK; i++) {
        if (!args[i])
            continue;
        if (pol == MP_AC_NONE || !eligible(args[i]) || args[i]->storage->device != dev) {
            mp_tensor_incref(out[i] = args[i]);
            continue;
        }
        st = cast_one(args[i], target, dev, &out[i]);
    }
    if (st != MP_OK)
        for (int i = 0; i < n; i++) {
            mp_tensor_decref(out[i]);
            out[i] = NULL;
        }
    return st;
}

mp_status mp_autocast_enter(int op, mp_tensor **args, int n, mp_autocast_scope *sc)
{
    sc->n = 0;
    if (n > 8)
        return mp_error(MP_ERR_VALUE, "autocast: an op entry passes at most 8 tensors");
    mp_status st = mp_autocast_args(op, args, n, sc->owned);
    if (st != MP_OK)
        return st;
    sc->n = n;
    for (int i = 0; i < n; i++)
        args[i] = sc->owned[i];
    mp_autocast_excluded++;
    return MP_OK;
}

void mp_autocast_leave(mp_autocast_scope *sc)
{
    mp_autocast_excluded--;
    for (int i = 0; i < sc->n; i++)
        mp_tensor_decref(sc->owned[i]);
    sc->n = 0;
}
