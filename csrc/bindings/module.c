/* module.c - the mpamp._C module: multi-phase init, module state (traverse/clear), and the
 * function table joined from the other binding files. */
#include "bindings.h"

static PyMethodDef module_functions[512];

/* Returns -1 (with an exception) when the table is too small. */
static int join_functions(void)
{
    PyMethodDef *const tables[] = {mp_factory_functions, mp_misc_functions,
                                   mp_buffer_functions, mp_dlpack_functions,
                                   mp_autograd_functions, mp_autocast_functions,
                                   mp_ops_functions, mp_reduce_functions, mp_matmul_functions,
                                   mp_tensor_data_functions, mp_optim_functions,
                                   mp_gemm_functions, mp_peak_functions, mp_gpu_plan_functions,
                                   mp_vmath_functions, mp_compare_functions,
                                   mp_math_functions, mp_cnn_functions,
                                   mp_attention_functions,
                                   mp_stats_functions,
                                   mp_nn_functions,
                                   mp_index_functions,
                                   mp_split_functions,
                                   mp_hook_functions,
                                   mp_random_functions, mp_device_functions,
                                   mp_op_table_functions};
    size_t n = 0, cap = sizeof module_functions / sizeof module_functions[0] - 1;
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        for (PyMethodDef *d = tables[i]; d->ml_name; d++) {
            if (n == cap) {
                PyErr_SetString(PyExc_SystemError, "mpamp: module function table is full");
                return -1;
            }
            module_functions[n++] = *d;
        }
    module_functions[n] = (PyMethodDef){NULL, NULL, 0, NULL};
    return 0;
}

static int module_exec(PyObject *m)
{
    mp_state *s = mp_state_of_module(m);
    if (mp_dtype_type_init(m, s) < 0 || mp_tensor_type_init(m, s) < 0 ||
        mp_node_type_init(m, s) < 0 || mp_errors_init(m) < 0 || mp_memory_init() < 0 ||
        mp_op_table_init(m) < 0)
        return -1;
    return PyModule_AddIntConstant(m, "_MAX_DIMS", MP_MAX_DIMS);
}

static int module_traverse(PyObject *m, visitproc visit, void *arg)
{
    mp_state *s = mp_state_of_module(m);
    Py_VISIT(s->tensor_base);
    Py_VISIT(s->tensor_class);
    Py_VISIT(s->dtype_type);
    for (int i = 0; i < MP_DTYPE_COUNT; i++)
        Py_VISIT(s->dtypes[i]);
    Py_VISIT(s->size_class);
    Py_VISIT(s->cpu_device);
    Py_VISIT(s->cuda_device);
    Py_VISIT(s->node_type);
    return 0;
}

static int module_clear(PyObject *m)
{
    mp_state *s = mp_state_of_module(m);
    Py_CLEAR(s->tensor_class);
    Py_CLEAR(s->tensor_base);
    for (int i = 0; i < MP_DTYPE_COUNT; i++)
        Py_CLEAR(s->dtypes[i]);
    Py_CLEAR(s->dtype_type);
    Py_CLEAR(s->size_class);
    Py_CLEAR(s->cpu_device);
    Py_CLEAR(s->cuda_device);
    Py_CLEAR(s->node_type);
    return 0;
}

static void module_free(void *m)
{
    module_clear((PyObject *)m);
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
    {0, NULL},
};

PyModuleDef mp_module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "mpamp._C",
    .m_doc = "The C core of mpamp: tensors, casts and kernels.",
    .m_size = sizeof(mp_state),
    .m_methods = module_functions,
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC PyInit__C(void)
{
    if (join_functions() < 0)
        return NULL;
    return PyModuleDef_Init(&mp_module_def);
}
