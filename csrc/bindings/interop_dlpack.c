/* interop_dlpack.c - DLPack export (__dlpack__, __dlpack_device__) and import (from_dlpack).
 * (Being written; tables start empty.) */
#include "bindings.h"

PyMethodDef mp_tensor_interop_methods[] = {
    {NULL, NULL, 0, NULL},
};

PyMethodDef mp_dlpack_functions[] = {
    {NULL, NULL, 0, NULL},
};
