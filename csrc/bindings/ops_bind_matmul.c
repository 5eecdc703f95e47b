/* ops_bind_matmul.c - Python entry points of the matmul ops (see csrc/core/ops.h). */
#include "bindings.h"

#include "../core/ops.h"

PyMethodDef mp_matmul_functions[] = {
    {NULL, NULL, 0, NULL},
};

PyMethodDef mp_tensor_matmul_methods[] = {
    {NULL, NULL, 0, NULL},
};
