/* ops_bind_reduce.c - Python entry points of the reduce ops (see csrc/core/ops.h). */
#include "bindings.h"

#include "../core/ops.h"

PyMethodDef mp_reduce_functions[] = {
    {NULL, NULL, 0, NULL},
};

PyMethodDef mp_tensor_reduce_methods[] = {
    {NULL, NULL, 0, NULL},
};
