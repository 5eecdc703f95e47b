/* sim_backend.c - the simulated GPU's backend table (see sim.h): memory from the arena,
 * copies that count, and kernels that are the CPU backend's, run on the read-write alias of
 * their operands after checking that each operand's whole extent lies in device memory (a host
 * pointer handed over as a device one fails the call instead of silently working). */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int sim_count(void)
{
    return mp_sim_arena_size() > 0 ? 1 : 0;
}

static mp_status sim_properties(int index, mp_device_props *out, mp_msg *msg)
{
    if (index != 0) {
        snprintf(msg->text, sizeof msg->text, "Invalid device id %d: the simulated GPU is "
                 "device 0", index);
        return MP_ERR_VALUE;
    }
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "mpamp simulated GPU");
    out->major = 9;
    out->minor = 0;
    out->total_memory = mp_sim_arena_size();
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    out->multi_processor_count = cpus > 0 ? (int)cpus : 1;
    return MP_OK;
}

static int usable(mp_msg *msg)
{
    if (mp_sim_forked()) {
        snprintf(msg->text, sizeof msg->text, "Cannot re-initialize CUDA in forked subprocess. "
                 "To use CUDA with multiprocessing, you must use the 'spawn' start method");
        return 0;
    }
    return 1;
}

static mp_status bad_pointer(mp_msg *msg, const char *what, const void *p)
{
    snprintf(msg->text, sizeof msg->text, "simulated GPU: %s got %p, which is not device "
             "memory (a host pointer passed as a device one, or a range past the end of a "
             "device allocation)", what, p);
    return MP_ERR_CUDA;
}

static mp_status sim_memcpy(void *dst, const void *src, size_t n, mp_copy_kind kind,
                            mp_msg *msg)
{
    if (!usable(msg))
        return MP_ERR_CUDA;
    if (n == 0)
        return MP_OK;
    char *d = dst;
    const char *s = src;
    if (kind != MP_COPY_D2H && !(d = mp_sim_translate(dst, 0, (int64_t)n)))
        return bad_pointer(msg, "a copy's device destination", dst);
    if (kind != MP_COPY_H2D && !(s = mp_sim_translate(src, 0, (int64_t)n)))
        return bad_pointer(msg, "a copy's device source", src);
    memmove(d, s, n);
    mp_sim_count(kind);
    return MP_OK;
}

static mp_status sim_synchronize(mp_msg *msg)
{
    if (!usable(msg))
        return MP_ERR_CUDA;
    mp_sim_count_sync();
    return MP_OK;
}

/* Rewrites it's bases to the alias, checking each operand's extent. */
static mp_status translate_iter(const mp_iter *it, mp_iter *rw, mp_msg *msg)
{
    *rw = *it;
    if (it->numel == 0)
        return MP_OK;
    for (int k = 0; k < it->nops; k++) {
        int64_t lo = 0, hi = (int64_t)it->itemsize[k];
        for (int d = 0; d < it->ndim; d++) {
            int64_t span = it->strides[k][d] * (it->shape[d] - 1) * (int64_t)it->itemsize[k];
            if (span < 0)
                lo += span;
            else
                hi += span;
        }
        rw->base[k] = mp_sim_translate(it->base[k], lo, hi);
        if (!rw->base[k])
            return bad_pointer(msg, "a kernel operand", it->base[k]);
    }
    return MP_OK;
}

/* The checks every simulated kernel makes before running the CPU's on the alias. */
static mp_status prepare(const mp_iter *it, mp_iter *rw, mp_msg *msg)
{
    if (!usable(msg))
        return MP_ERR_CUDA;
    return translate_iter(it, rw, msg);
}

static mp_status sim_map(const mp_map_kernel *k, mp_msg *msg)
{
    mp_iter rw;
    mp_status st = prepare(k->it, &rw, msg);
    if (st != MP_OK)
        return st;
    mp_map_kernel c = *k;
    c.it = &rw;
    if (mp_sim_map_by_op(&c))
        return MP_OK;
    return mp_backend_cpu()->map(&c, msg);
}

static mp_status sim_copy(const mp_iter *it, mp_dtype dst, mp_dtype src, mp_msg *msg)
{
    mp_iter rw;
    mp_status st = prepare(it, &rw, msg);
    if (st != MP_OK)
        return st;
    return mp_backend_cpu()->copy(&rw, dst, src, msg);
}

static mp_status sim_fill(const mp_iter *it, mp_dtype dt, const void *pattern, mp_msg *msg)
{
    mp_iter rw;
    mp_status st = prepare(it, &rw, msg);
    if (st != MP_OK)
        return st;
    return mp_backend_cpu()->fill(&rw, dt, pattern, msg);
}

/* Buffer kernels: every extent checked and rewritten to the alias, then the CPU function. */
static mp_status sim_launch(const mp_buf_kernel *k, mp_msg *msg)
{
    if (!usable(msg))
        return MP_ERR_CUDA;
    void *stack[MP_KERNEL_STACK_BUFS];
    void **rw = k->nbuf <= MP_KERNEL_STACK_BUFS ? stack : malloc(sizeof(void *) * (size_t)k->nbuf);
    if (!rw) {
        snprintf(msg->text, sizeof msg->text, "simulated GPU: out of host memory for a launch");
        return MP_ERR_NOMEM;
    }
    mp_status st = MP_OK;
    for (int i = 0; i < k->nbuf && st == MP_OK; i++) {
        rw[i] = NULL;
        if (!k->ptr[i] || k->hi[i] <= k->lo[i])
            continue;                  /* absent or empty: nothing to touch */
        char *a = mp_sim_translate(k->ptr[i], k->lo[i], k->hi[i]);
        if (!a)
            st = bad_pointer(msg, "a kernel buffer", k->ptr[i]);
        rw[i] = a;
    }
    if (st == MP_OK && k->id == MP_KERNEL_GEMM)
        st = mp_sim_gemm(rw, k, msg);
    else if (st == MP_OK && k->id == MP_KERNEL_UNSCALE)
        st = mp_sim_unscale(rw, k, msg);
    else if (st == MP_OK)
        st = k->run(rw, k->args, msg);
    if (rw != stack)
        free(rw);
    return st;
}

static mp_status sim_iter(const mp_iter_kernel *k, mp_msg *msg)
{
    mp_iter rw;
    mp_status st = prepare(k->it, &rw, msg);
    if (st != MP_OK)
        return st;
    mp_iter_kernel c = *k;
    c.it = &rw;
    return mp_backend_cpu()->iter(&c, msg);
}

static const mp_backend sim = {
    .name = "cuda-sim",
    .device = MP_DEVICE_CUDA,
    .device_count = sim_count,
    .properties = sim_properties,
    .alloc = mp_sim_arena_alloc,
    .free = mp_sim_arena_free,
    .memcpy = sim_memcpy,
    .synchronize = sim_synchronize,
    .stats = mp_sim_arena_stats,
    .reset_peak = mp_sim_arena_reset_peak,
    .empty_cache = mp_sim_arena_empty_cache,
    .map = sim_map,
    .copy = sim_copy,
    .fill = sim_fill,
    .launch = sim_launch,
    .iter = sim_iter,
};

const mp_backend *mp_sim_backend(void)
{
    return &sim;
}
