/* autocast.c - autocast state, policies and the weight-cast cache (see autocast.h).
 * Policies mirror torch's lists (aten/src/ATen/autocast_mode.cpp) for the ops mpamp has.
 * The cache is a small open-addressing table keyed by the source tensor; it owns a reference
 * to the source (so its address cannot be reused while cached) and to the cast. */
#include "autocast.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "elementwise.h"
#include "ops.h"

static _Thread_local int ac_enabled[MP_AC_DEVICES];
static _Thread_local int ac_dtype_set[MP_AC_DEVICES];
static _Thread_local mp_dtype ac_dtype[MP_AC_DEVICES];
static _Thread_local int ac_cache_off;
static _Thread_local int ac_depth;

static const struct {
    const char *name;
    mp_ac_policy cpu, cuda;
} policies[MP_AC_OP_COUNT] = {
    [MP_AC_OP_LINEAR] = {"linear", MP_AC_LOWER, MP_AC_LOWER},
    [MP_AC_OP_MATMUL] = {"matmul", MP_AC_LOWER, MP_AC_LOWER},
    [MP_AC_OP_MM] = {"mm", MP_AC_LOWER, MP_AC_LOWER},
    [MP_AC_OP_BMM] = {"bmm", MP_AC_LOWER, MP_AC_LOWER},
    [MP_AC_OP_ADDMM] = {"addmm", MP_AC_LOWER, MP_AC_LOWER},
    [MP_AC_OP_BADDBMM] = {"baddbmm", MP_AC_LOWER, MP_AC_LOWER},
    [MP_AC_OP_MSE_LOSS] = {"mse_loss", MP_AC_FP32, MP_AC_FP32},
    [MP_AC_OP_L1_LOSS] = {"l1_loss", MP_AC_FP32, MP_AC_FP32},
    [MP_AC_OP_NLL_LOSS] = {"nll_loss", MP_AC_FP32, MP_AC_FP32},
    [MP_AC_OP_CROSS_ENTROPY] = {"cross_entropy", MP_AC_FP32, MP_AC_FP32},
    [MP_AC_OP_BCE_WITH_LOGITS] = {"binary_cross_entropy_with_logits", MP_AC_FP32, MP_AC_FP32},
    /* CPU autocast leaves layer_norm, exp, log, pow, rsqrt, softmax and sum alone; CUDA
     * runs them in fp32 (softmax/sum via fp32_set_opt_dtype: same result for our kernels,
     * which compute in fp32 and are given fp32 inputs here) */
    [MP_AC_OP_LAYER_NORM] = {"layer_norm", MP_AC_NONE, MP_AC_FP32},
    [MP_AC_OP_EXP] = {"exp", MP_AC_NONE, MP_AC_FP32},
    [MP_AC_OP_LOG] = {"log", MP_AC_NONE, MP_AC_FP32},
    [MP_AC_OP_POW] = {"pow", MP_AC_NONE, MP_AC_FP32},
    [MP_AC_OP_RSQRT] = {"rsqrt", MP_AC_NONE, MP_AC_FP32},
    [MP_AC_OP_SOFTMAX] = {"softmax", MP_AC_NONE, MP_AC_FP32},
    [MP_AC_OP_LOG_SOFTMAX] = {"log_softmax", MP_AC_NONE, MP_AC_FP32},
    [MP_AC_OP_SUM] = {"sum", MP_AC_NONE, MP_AC_FP32},
    [MP_AC_OP_CAT] = {"cat", MP_AC_PROMOTE, MP_AC_NONE},
    [MP_AC_OP_STACK] = {"stack", MP_AC_PROMOTE, MP_AC_NONE},
    /* CUDA's fp32 list; not in CPU's (comparisons, sin, cos, erf, sign, floor, ... are in
     * no list: they run in their inputs' dtype) */
    [MP_AC_OP_EXPM1] = {"expm1", MP_AC_NONE, MP_AC_FP32},
    [MP_AC_OP_LOG1P] = {"log1p", MP_AC_NONE, MP_AC_FP32},
    [MP_AC_OP_LOG2] = {"log2", MP_AC_NONE, MP_AC_FP32},
    [MP_AC_OP_LOG10] = {"log10", MP_AC_NONE, MP_AC_FP32},
    [MP_AC_OP_RECIPROCAL] = {"reciprocal", MP_AC_NONE, MP_AC_FP32},
    /* CNN ops: conv1d/conv2d are lower precision on both devices; group_norm is fp32 on CUDA
     * only; batch_norm and the 2-d pools are in neither list (CPU's fp32 list has the 3-d
     * pools only), so they have no row */
    [MP_AC_OP_CONV1D] = {"conv1d", MP_AC_LOWER, MP_AC_LOWER},
    [MP_AC_OP_CONV2D] = {"conv2d", MP_AC_LOWER, MP_AC_LOWER},
    [MP_AC_OP_GROUP_NORM] = {"group_norm", MP_AC_NONE, MP_AC_FP32},
    /* lower precision on both lists; rms_norm is in CUDA's fp32 list only (torch 2.13) */
    [MP_AC_OP_SDPA] = {"scaled_dot_product_attention", MP_AC_LOWER, MP_AC_LOWER},
    [MP_AC_OP_RMS_NORM] = {"rms_norm", MP_AC_NONE, MP_AC_FP32},
    /* prod is on CPU's fp32 list (any call) and CUDA's fp32_set_opt_dtype list, with cumsum,
     * cumprod and linalg_vector_norm (calls without dtype= only: the bindings skip autocast
     * when dtype is given, except prod on the CPU); norm is CUDA's fp32_append_dtype;
     * logsumexp and dist are CUDA fp32; einsum is CUDA lower precision (on the CPU it is not
     * listed, but the bmm it lowers to is, so its products run low there too, as torch's) */
    [MP_AC_OP_PROD] = {"prod", MP_AC_FP32, MP_AC_FP32},
    [MP_AC_OP_CUMSUM] = {"cumsum", MP_AC_NONE, MP_AC_FP32},
    [MP_AC_OP_CUMPROD] = {"cumprod", MP_AC_NONE, MP_AC_FP32},
    [MP_AC_OP_LINALG_VECTOR_NORM] = {"linalg_vector_norm", MP_AC_NONE, MP_AC_FP32},
    [MP_AC_OP_NORM] = {"norm", MP_AC_NONE, MP_AC_FP32},
    [MP_AC_OP_LOGSUMEXP] = {"logsumexp", MP_AC_NONE, MP_AC_FP32},
    [MP_AC_OP_DIST] = {"dist", MP_AC_NONE, MP_AC_FP32},
    [MP_AC_OP_EINSUM] = {"einsum", MP_AC_NONE, MP_AC_LOWER},
    [MP_AC_OP_SMOOTH_L1_LOSS] = {"smooth_l1_loss", MP_AC_FP32, MP_AC_FP32},
    [MP_AC_OP_HUBER_LOSS] = {"huber_loss", MP_AC_FP32, MP_AC_FP32},
    [MP_AC_OP_KL_DIV] = {"kl_div", MP_AC_FP32, MP_AC_FP32},
    /* CPU runs binary_cross_entropy in fp32; CUDA refuses it (see banned_message) */
    [MP_AC_OP_BCE] = {"binary_cross_entropy", MP_AC_FP32, MP_AC_BANNED},
    /* CPU lists reflection_pad1d/2d and replication_pad1d/2d/3d as fp32; CUDA none */
    [MP_AC_OP_REFLECTION_PAD1D] = {"reflection_pad1d", MP_AC_FP32, MP_AC_NONE},
    [MP_AC_OP_REFLECTION_PAD2D] = {"reflection_pad2d", MP_AC_FP32, MP_AC_NONE},
    [MP_AC_OP_REFLECTION_PAD3D] = {"reflection_pad3d", MP_AC_NONE, MP_AC_NONE},
    [MP_AC_OP_REPLICATION_PAD1D] = {"replication_pad1d", MP_AC_FP32, MP_AC_NONE},
    [MP_AC_OP_REPLICATION_PAD2D] = {"replication_pad2d", MP_AC_FP32, MP_AC_NONE},
    [MP_AC_OP_REPLICATION_PAD3D] = {"replication_pad3d", MP_AC_FP32, MP_AC_NONE},
    /* normalize reaches fp32 on CUDA through norm (fp32_append_dtype) and the division's
     * promotion; CPU leaves it alone */
    [MP_AC_OP_NORMALIZE] = {"normalize", MP_AC_NONE, MP_AC_FP32},
    [MP_AC_OP_COSINE_SIMILARITY] = {"cosine_similarity", MP_AC_NONE, MP_AC_FP32},
    [MP_AC_OP_SOFTPLUS] = {"softplus", MP_AC_NONE, MP_AC_FP32},
    /* CUDA promotes index_put and scatter_add; CPU promotes index_copy (torch's lists) */
    [MP_AC_OP_INDEX_PUT] = {"index_put", MP_AC_NONE, MP_AC_PROMOTE},
    [MP_AC_OP_SCATTER_ADD] = {"scatter_add", MP_AC_NONE, MP_AC_PROMOTE},
    [MP_AC_OP_INDEX_COPY] = {"index_copy", MP_AC_PROMOTE, MP_AC_NONE},
};

/* torch's error for the ops it bans under autocast */
static const char *banned_message(mp_ac_op op)
{
    (void)op;       /* binary_cross_entropy is the only banned op */
    return "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to "
           "autocast.\nMany models use a sigmoid layer right before the binary cross entropy "
           "layer.\nIn this case, combine the two layers using "
           "torch.nn.functional.binary_cross_entropy_with_logits\nor torch.nn.BCEWithLogitsLoss."
           "  binary_cross_entropy_with_logits and BCEWithLogits are\nsafe to autocast.";
}

int mp_autocast_enabled(mp_device dev) { return ac_enabled[dev]; }
void mp_autocast_set_enabled(mp_device dev, int enabled) { ac_enabled[dev] = !!enabled; }

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

mp_ac_policy mp_autocast_policy(mp_ac_op op, mp_device dev)
{
    if ((int)op < 0 || op >= MP_AC_OP_COUNT)
        return MP_AC_NONE;
    return dev == MP_DEVICE_CUDA ? policies[op].cuda : policies[op].cpu;
}

const char *mp_autocast_op_name(mp_ac_op op)
{
    return (int)op >= 0 && op < MP_AC_OP_COUNT ? policies[op].name : "unknown";
}

int mp_autocast_op_by_name(const char *name)
{
    for (int op = 0; op < MP_AC_OP_COUNT; op++)
        if (policies[op].name && strcmp(name, policies[op].name) == 0)
            return op;
    return -1;
}

void mp_autocast_suspend(mp_autocast_saved *saved)
{
    for (int d = 0; d < MP_AC_DEVICES; d++) {
        saved->enabled[d] = ac_enabled[d];
        ac_enabled[d] = 0;
    }
}

void mp_autocast_restore(const mp_autocast_saved *saved)
{
    for (int d = 0; d < MP_AC_DEVICES; d++)
        ac_enabled[d] = saved->enabled[d];
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

mp_status mp_autocast_args(mp_ac_op op, mp_tensor *const *args, int n, mp_tensor **out)
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
