/* sim_map_ops.c - with MPAMP_SIM_MAP_BY_OP=1 the simulated GPU computes a map that carries an
 * op id (shared/mp_pointwise.h) the way cuda/map.cu does: each element loaded as fp32, the
 * shared body by id, stored in the output dtype. CI runs the pointwise suites so
 * (tests/test_device_suite.py), which checks the ids, their arguments and operand order that
 * the core hands a GPU against NumPy. Off by default: the CPU's vector kernels for gelu & co.
 * differ from the scalar bodies in the last bits, and the simulator is otherwise bit-exact. */
#include "sim.h"

#include <stdlib.h>

#include "../shared/mp_half.h"
#include "../shared/mp_pointwise.h"

static float load(const char *p, mp_dtype dt)
{
    switch (dt) {
    case MP_DTYPE_FLOAT16: return mp_half_to_f32(*(const mp_half *)p);
    case MP_DTYPE_BFLOAT16: return mp_bf16_to_f32(*(const mp_bf16 *)p);
    case MP_DTYPE_INT64: return (float)*(const int64_t *)p;
    case MP_DTYPE_BOOL:
    case MP_DTYPE_UINT8: return (float)*(const uint8_t *)p;
    default: return *(const float *)p;
    }
}

static void store(char *p, mp_dtype dt, float v)
{
    if (dt == MP_DTYPE_FLOAT16)
        *(mp_half *)p = mp_f32_to_half(v);
    else if (dt == MP_DTYPE_BFLOAT16)
        *(mp_bf16 *)p = mp_f32_to_bf16(v);
    else
        *(float *)p = v;
}

/* Element by element in the order of the GPU kernel: each linear index decomposed over the
 * shape (last dim fastest), operand offsets from their strides. */
static void run(const mp_map_kernel *k)
{
    const mp_iter *it = k->it;
    float arg[MP_MAP_OP_ARGS] = {0.0f, 0.0f, 0.0f, 0.0f};
    int nargs = k->op == MP_MAP_OP_CLAMP ? 4 : 1;
    for (int a = 0; a < nargs && k->args; a++)
        arg[a] = (float)k->args[a];
    for (int64_t i = 0; i < it->numel; i++) {
        int64_t idx = i, off[MP_ITER_MAX_OPS] = {0, 0, 0, 0};
        for (int d = it->ndim - 1; d >= 0; d--) {
            int64_t j = idx % it->shape[d];
            idx /= it->shape[d];
            for (int o = 0; o < it->nops; o++)
                off[o] += j * it->strides[o][d];
        }
        float x[MP_MAP_MAX_IN] = {0.0f, 0.0f, 0.0f};
        for (int j = 0; j < k->n_in; j++)
            x[j] = load(it->base[j + 1] + off[j + 1] * (int64_t)it->itemsize[j + 1], k->in_dt[j]);
        float r = mp_map_apply(k->op, x, arg);
        store(it->base[0] + off[0] * (int64_t)it->itemsize[0], k->out_dt, r);
    }
}

int mp_sim_map_by_op(const mp_map_kernel *k)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("MPAMP_SIM_MAP_BY_OP");
        on = e && e[0] == '1';
    }
    if (!on || k->op == MP_MAP_OP_NONE || k->fn64 || !mp_dtype_is_float(k->out_dt))
        return 0;
    run(k);
    return 1;
}
