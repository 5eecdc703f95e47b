/* sim.h - the simulated GPU (MPAMP_CUDA_SIM=1): a CUDA device made of host memory the host
 * cannot touch. Device memory is one memfd mapped twice at a constant offset; the "device"
 * view is PROT_NONE, so a host dereference of a device pointer faults, and the kernels (the
 * CPU kernels) work on the read-write alias after checking that every pointer they receive
 * lies in the arena. It counts copies and synchronisations for tests; it cannot catch stream
 * races. A forked child cannot use it (as CUDA). */
#ifndef MP_SIM_H
#define MP_SIM_H

#include "../shared/mp_backend.h"

/* The simulated GPU's backend (first use maps the arena: MPAMP_CUDA_SIM_MB, default 16384
 * MiB of address space; pages are only used when written). */
const mp_backend *mp_sim_backend(void);

/* Arena (sim_arena.c) */
mp_status mp_sim_arena_alloc(size_t nbytes, void **out, mp_msg *msg);
void mp_sim_arena_free(void *ptr, size_t nbytes);
void mp_sim_arena_stats(mp_device_stats *out);
void mp_sim_arena_reset_peak(void);
void mp_sim_arena_empty_cache(void);
size_t mp_sim_arena_size(void);
/* The read-write alias of [p + lo, p + hi) of device memory, or NULL when that range is not
 * inside the arena (lo may be negative: strided views walk both ways from element 0). */
char *mp_sim_translate(const void *p, int64_t lo, int64_t hi);
/* 1 in a child forked after the arena was mapped: every entry refuses. */
int mp_sim_forked(void);
/* Kernels run through the GPU backend's host plans (sim_plans.c); buf: translated buffers. */
mp_status mp_sim_gemm(void *const *buf, const mp_buf_kernel *k, mp_msg *msg);
mp_status mp_sim_unscale(void *const *buf, const mp_buf_kernel *k, mp_msg *msg);
/* With MPAMP_SIM_MAP_BY_OP=1, runs a map that has an op id as cuda/map.cu would and returns 1;
 * else 0 (sim_map_ops.c). k->it: already translated. */
int mp_sim_map_by_op(const mp_map_kernel *k);
/* Counters bumped by the backend's copies and synchronisations. */
void mp_sim_count(mp_copy_kind kind);
void mp_sim_count_sync(void);

#endif
