/* autocast.h - PyTorch's automatic mixed precision policy: thread-local state per device
 * type (enabled, lower-precision dtype), a thread-local cache flag and nesting depth, the
 * per-op policy table, and the process-global weight-cast cache (an fp32 leaf that requires
 * grad is cast once per outermost region). Bindings call mp_autocast_args at an op's Python
 * entry, so ops used inside other ops (and backward) are never re-autocast. */
#ifndef MP_AUTOCAST_H
#define MP_AUTOCAST_H

#include "../tensor.h"

#include "../ops/op_table.h"   /* mp_ac_policy, MP_AC_DEVICES and the per-op policies */

int mp_autocast_enabled(mp_device dev);
void mp_autocast_set_enabled(mp_device dev, int enabled);
mp_dtype mp_autocast_dtype(mp_device dev);
void mp_autocast_set_dtype(mp_device dev, mp_dtype dtype);
int mp_autocast_cache_enabled(void);
void mp_autocast_set_cache_enabled(int enabled);
int mp_autocast_increment_nesting(void);     /* returns the new depth */
int mp_autocast_decrement_nesting(void);
void mp_autocast_clear_cache(void);
/* op's policy on dev (its op-table row) */
mp_ac_policy mp_autocast_policy(int op, mp_device dev);

/* Cache counters (debugging and tests): hits, misses (casts stored), entries now. */
void mp_autocast_cache_stats(uint64_t *hits, uint64_t *misses, int64_t *entries);

/* The inputs an op should run with under the current autocast state: out[i] is a new
 * reference, either args[i] itself or a cast of it (NULL args stay NULL). Casts are autograd
 * nodes. Runs the op-independent checks of torch's promote policy. */
mp_status mp_autocast_args(int op, mp_tensor *const *args, int n, mp_tensor **out);

/* ---- autocast at the core op entry ----
 * An op entry with an autocast row starts with MP_AUTOCAST_ENTRY: when autocast is on for
 * this thread and no other op entry is running (torch's ExcludeDispatchKeyGuard: ops called
 * inside an op, and backward, are never re-autocast), the entry calls itself once more with
 * the policy's casts of its tensor arguments, under that exclusion. */
extern _Thread_local int mp_autocast_on;        /* devices enabled, as a bit mask */
extern _Thread_local int mp_autocast_excluded;  /* op entries running that applied autocast */

static inline int mp_autocast_active(void)
{
    return mp_autocast_on && !mp_autocast_excluded;
}

typedef struct {
    mp_tensor *owned[8];
    int n;
} mp_autocast_scope;

/* args[i] (n <= 8) replaced by the tensors op runs with (held by sc until leave); sets the
 * exclusion. On error nothing is held and the exclusion is not set. */
mp_status mp_autocast_enter(int op, mp_tensor **args, int n, mp_autocast_scope *sc);
void mp_autocast_leave(mp_autocast_scope *sc);

/* `call` names the cast tensors ac_[0], ac_[1], ... in the order of the arguments after it;
 * the _IF form autocasts only when cond holds (torch's fp32_set_opt_dtype ops: no dtype=). */
#define MP_AUTOCAST_ENTRY(op, call, ...) MP_AUTOCAST_ENTRY_IF(1, op, call, __VA_ARGS__)
#define MP_AUTOCAST_ENTRY_IF(cond, op, call, ...)                                           \
    do {                                                                                    \
        if (mp_autocast_active() && (cond)) {                                               \
            mp_tensor *ac_[] = {__VA_ARGS__};                                               \
            mp_autocast_scope sc_;                                                          \
            mp_status st_ = mp_autocast_enter((op), ac_, (int)(sizeof ac_ / sizeof ac_[0]), \
                                              &sc_);                                        \
            if (st_ == MP_OK) {                                                             \
                st_ = (call);                                                               \
                mp_autocast_leave(&sc_);                                                    \
            }                                                                               \
            return st_;                                                                     \
        }                                                                                   \
    } while (0)

/* Marks a region (an in-place op's use of an out-of-place entry) as inside an op entry. */
static inline void mp_autocast_exclude(void) { mp_autocast_excluded++; }
static inline void mp_autocast_include(void) { mp_autocast_excluded--; }

/* Turns every device's autocast off for this thread until restored (backward uses it). */
typedef struct {
    int enabled[MP_AC_DEVICES];
} mp_autocast_saved;
void mp_autocast_suspend(mp_autocast_saved *saved);
void mp_autocast_restore(const mp_autocast_saved *saved);

#endif
