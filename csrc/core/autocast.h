/* autocast.h - PyTorch's automatic mixed precision policy: thread-local state per device
 * type (enabled, lower-precision dtype), a thread-local cache flag and nesting depth, the
 * per-op policy table, and the process-global weight-cast cache (an fp32 leaf that requires
 * grad is cast once per outermost region). Bindings call mp_autocast_args at an op's Python
 * entry, so ops used inside other ops (and backward) are never re-autocast. */
#ifndef MP_AUTOCAST_H
#define MP_AUTOCAST_H

#include "tensor.h"

/* MP_AC_BANNED: the op raises under autocast (torch bans binary_cross_entropy on CUDA) */
typedef enum { MP_AC_NONE = 0, MP_AC_LOWER, MP_AC_FP32, MP_AC_PROMOTE, MP_AC_BANNED } mp_ac_policy;

/* Ops that autocast knows about (policies in autocast.c, per device type). */
typedef enum {
    MP_AC_OP_LINEAR, MP_AC_OP_MATMUL, MP_AC_OP_MM, MP_AC_OP_BMM, MP_AC_OP_ADDMM,
    MP_AC_OP_BADDBMM, MP_AC_OP_MSE_LOSS, MP_AC_OP_L1_LOSS, MP_AC_OP_NLL_LOSS,
    MP_AC_OP_CROSS_ENTROPY, MP_AC_OP_BCE_WITH_LOGITS, MP_AC_OP_LAYER_NORM, MP_AC_OP_EXP,
    MP_AC_OP_LOG, MP_AC_OP_POW, MP_AC_OP_RSQRT, MP_AC_OP_SOFTMAX, MP_AC_OP_LOG_SOFTMAX,
    MP_AC_OP_SUM, MP_AC_OP_CAT, MP_AC_OP_STACK,
    MP_AC_OP_EXPM1,
    MP_AC_OP_LOG1P,
    MP_AC_OP_LOG2,
    MP_AC_OP_LOG10,
    MP_AC_OP_RECIPROCAL,
    MP_AC_OP_CONV1D,
    MP_AC_OP_CONV2D,
    MP_AC_OP_GROUP_NORM,
    MP_AC_OP_SDPA,
    MP_AC_OP_RMS_NORM,
    MP_AC_OP_PROD,
    MP_AC_OP_CUMSUM,
    MP_AC_OP_CUMPROD,
    MP_AC_OP_LINALG_VECTOR_NORM,
    MP_AC_OP_NORM,
    MP_AC_OP_LOGSUMEXP,
    MP_AC_OP_DIST,
    MP_AC_OP_EINSUM,
    MP_AC_OP_SMOOTH_L1_LOSS,
    MP_AC_OP_HUBER_LOSS,
    MP_AC_OP_KL_DIV,
    MP_AC_OP_BCE,
    MP_AC_OP_REFLECTION_PAD1D,
    MP_AC_OP_REFLECTION_PAD2D,
    MP_AC_OP_REFLECTION_PAD3D,
    MP_AC_OP_REPLICATION_PAD1D,
    MP_AC_OP_REPLICATION_PAD2D,
    MP_AC_OP_REPLICATION_PAD3D,
    MP_AC_OP_NORMALIZE,
    MP_AC_OP_COSINE_SIMILARITY,
    MP_AC_OP_SOFTPLUS,
    MP_AC_OP_INDEX_PUT,
    MP_AC_OP_SCATTER_ADD,
    MP_AC_OP_INDEX_COPY,
    /* new ops: one line each, above this one */
    MP_AC_OP_COUNT
} mp_ac_op;

#define MP_AC_DEVICES 2   /* indexed by mp_device: CPU, CUDA */

int mp_autocast_enabled(mp_device dev);
void mp_autocast_set_enabled(mp_device dev, int enabled);
mp_dtype mp_autocast_dtype(mp_device dev);
void mp_autocast_set_dtype(mp_device dev, mp_dtype dtype);
int mp_autocast_cache_enabled(void);
void mp_autocast_set_cache_enabled(int enabled);
int mp_autocast_increment_nesting(void);     /* returns the new depth */
int mp_autocast_decrement_nesting(void);
void mp_autocast_clear_cache(void);
mp_ac_policy mp_autocast_policy(mp_ac_op op, mp_device dev);
const char *mp_autocast_op_name(mp_ac_op op);
/* The op whose row is named `name` (torch's op name), or -1. */
int mp_autocast_op_by_name(const char *name);

/* Cache counters (debugging and tests): hits, misses (casts stored), entries now. */
void mp_autocast_cache_stats(uint64_t *hits, uint64_t *misses, int64_t *entries);

/* The inputs an op should run with under the current autocast state: out[i] is a new
 * reference, either args[i] itself or a cast of it (NULL args stay NULL). Casts are autograd
 * nodes. Runs the op-independent checks of torch's promote policy. */
mp_status mp_autocast_args(mp_ac_op op, mp_tensor *const *args, int n, mp_tensor **out);

/* Turns every device's autocast off for this thread until restored (backward uses it). */
typedef struct {
    int enabled[MP_AC_DEVICES];
} mp_autocast_saved;
void mp_autocast_suspend(mp_autocast_saved *saved);
void mp_autocast_restore(const mp_autocast_saved *saved);

#endif
