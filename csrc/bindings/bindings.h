/* bindings.h - what the binding files share: module state, the Python tensor object, and
 * argument helpers. This directory is the only place that includes Python.h. Every function
 * that returns NULL/-1 has set a Python exception. */
#ifndef MP_BINDINGS_H
#define MP_BINDINGS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../core/tensor.h"
#include "../core/copy.h"
#include "../core/ops/ops.h"
#include "../core/ops/op_table.h"

/* Elements above which kernels run with the GIL released. */
#define MP_NOGIL_NUMEL 32768

typedef struct {
    PyTypeObject *tensor_base;  /* _C.TensorBase (heap type) */
    PyTypeObject *tensor_class; /* class used for new tensors: mpamp.Tensor once registered */
    PyTypeObject *dtype_type;   /* _C.dtype */
    PyObject *dtypes[MP_DTYPE_COUNT];
    PyObject *size_class;       /* mpamp.Size (a tuple subclass), or tuple before import */
    PyObject *cpu_device;       /* mpamp.device('cpu') */
    PyObject *cuda_device;      /* mpamp.device('cuda', 0), made on first use */
    PyTypeObject *node_type;    /* _C.Node (grad_fn objects) */
} mp_state;

typedef struct {
    PyObject_HEAD
    mp_tensor *t;
    PyObject *weakreflist;
    PyObject *grad_obj;         /* wrapper last returned for t->grad (keeps .grad's identity) */
} MPTensor;

extern PyModuleDef mp_module_def;

mp_state *mp_state_of_type(PyTypeObject *tp);   /* for methods and getters */
mp_state *mp_state_of_module(PyObject *m);      /* for module-level functions */

/* errors.c: raises the exception for st with the core's message; returns NULL. */
PyObject *mp_raise(mp_status st);
int mp_raise_int(mp_status st);                  /* same, returns -1 */
/* Creates (once) and adds _C.OutOfMemoryError, raised for MP_ERR_NOMEM. */
int mp_errors_init(PyObject *module);

/* backend.c: registers the GEMM buffers with the allocator's memory-pressure release. */
int mp_memory_init(void);
PyObject *mp_dtype_table(PyObject *m, PyObject *unused);   /* dtype.c: _C._dtype_table */
int mp_op_table_init(PyObject *module);   /* op_table_bind.c: _C.op_ids; fails on a bad table */
/* *row = the op-table row of the op id o when its kind is kind or kind2; else ValueError */
int mp_op_arg(PyObject *o, int kind, int kind2, const char *fname, const mp_op_row **row);
/* 0 when o is the op id a, 1 when it is b; else ValueError and -1 */
int mp_op_choice(PyObject *o, const char *fname, int a, int b);

/* dtype.c */
int mp_dtype_type_init(PyObject *module, mp_state *s);
/* Accepts dtype objects and the strings "fp32", "float32", "fp16", "float16", "half",
 * "bf16", "bfloat16"; Py_None gives `dflt`. Returns -1 with ValueError/TypeError. */
int mp_parse_dtype(mp_state *s, PyObject *obj, mp_dtype dflt, mp_dtype *out);

/* node_type.c */
struct mp_node;
int mp_node_type_init(PyObject *module, mp_state *s);
PyObject *mp_wrap_node(mp_state *s, struct mp_node *n);   /* None for NULL */

/* tensor_type.c */
int mp_tensor_type_init(PyObject *module, mp_state *s);
PyObject *mp_wrap(mp_state *s, mp_tensor *t);  /* steals t; NULL t -> NULL (error set) */
int mp_is_tensor(mp_state *s, PyObject *obj);
#define MP_T(obj) (((MPTensor *)(obj))->t)

/* args.c */
/* Shape from either one sequence argument or several int arguments. */
int mp_parse_shape(PyObject *const *args, Py_ssize_t nargs, const char *fname,
                   int64_t *shape, int *ndim);
int mp_parse_shape_obj(PyObject *seq, const char *fname, int64_t *shape, int *ndim);
int mp_parse_int64(PyObject *obj, const char *fname, const char *arg, int64_t *out);
/* A Python bool/int/float (or anything with __index__ / __float__) as an mp_scalar. */
int mp_parse_scalar(PyObject *obj, const char *fname, mp_scalar *out);
PyObject *mp_shape_to_size(mp_state *s, const int64_t *shape, int ndim);
/* Runs a copy (or another kernel) with the GIL released when the tensor is large. */
mp_status mp_copy_maybe_nogil(mp_tensor *dst, mp_tensor *src);

/* Method tables contributed by the binding files, merged by module.c / tensor_type.c. */
extern PyMethodDef mp_factory_functions[];
extern PyMethodDef mp_misc_functions[];
extern PyMethodDef mp_buffer_functions[];
extern PyMethodDef mp_dlpack_functions[];
extern PyMethodDef mp_autograd_functions[];
extern PyMethodDef mp_autocast_functions[];
extern PyMethodDef mp_ops_functions[];
extern PyMethodDef mp_tensor_ops_methods[];
extern PyMethodDef mp_reduce_functions[];        /* ops_bind_reduce.c */
extern PyMethodDef mp_tensor_reduce_methods[];
extern PyMethodDef mp_stats_functions[];         /* ops_bind_stats.c */
extern PyMethodDef mp_matmul_functions[];        /* ops_bind_matmul.c */
extern PyMethodDef mp_cnn_functions[];           /* ops_bind_cnn.c */
extern PyMethodDef mp_tensor_matmul_methods[];
extern PyMethodDef mp_attention_functions[];     /* ops_bind_attention.c */
extern PyMethodDef mp_tensor_attention_methods[];
extern PyMethodDef mp_tensor_data_functions[];    /* tensor_data.c: _set_data */
extern PyMethodDef mp_nn_functions[];            /* ops_bind_nn.c: losses, pad, ... */
extern PyMethodDef mp_optim_functions[];         /* optim_bind.c: scaler + fused optimizers */
extern PyMethodDef mp_gemm_functions[];          /* gemm_bind.c: test hooks */
extern PyMethodDef mp_peak_functions[];          /* peak_bind.c: machine-limit probes */
extern PyMethodDef mp_gpu_plan_functions[];      /* gpu_plan_bind.c: GPU host-plan test hooks */
extern PyMethodDef mp_vmath_functions[];         /* vmath_bind.c: vector math test hooks */
extern PyMethodDef mp_device_functions[];        /* device_bind.c: mpamp.cuda queries */
extern PyMethodDef mp_op_table_functions[];      /* op_table_bind.c: _op_table */
extern PyMethodDef mp_device_methods[];          /* device_bind.c: Tensor._to_device */
extern PyMethodDef mp_random_functions[];        /* random_bind.c: random ops */
extern PyType_Slot mp_tensor_number_slots[];
extern PyMethodDef mp_compare_functions[];       /* ops_bind_compare.c: eq, logic, any */
extern PyMethodDef mp_tensor_compare_methods[];
extern PyType_Slot mp_tensor_compare_slots[];    /* == < ..., & | ^ ~, identity hash */
extern PyMethodDef mp_math_functions[];          /* ops_bind_math.c: sin ..., remainder */
extern PyMethodDef mp_tensor_math_methods[];
extern PyType_Slot mp_tensor_math_slots[];       /* % and %= */
/* ops_bind.c: a tensor for a Python operand (tensor, or number -> wrapped scalar *owned);
 * 0 ok, 1 not an operand (no exception), -1 error */
int mp_operand(mp_state *s, PyObject *obj, mp_tensor **t, mp_tensor **owned);
/* ops_bind.c: Tensor methods of unary op `op` (autocast applied) and its in-place form */
PyObject *mp_unary_method(PyObject *self, mp_unary_op op);
PyObject *mp_unary_inplace_method(PyObject *self, mp_unary_op op, const char *name);
extern PyMethodDef mp_tensor_view_methods[];
/* autograd_hooks_bind.c: hooks, retain_grad, _version/_base getters; mp_tensor_sync brings a
 * stale view's grad_fn up to date before Python reads autograd fields (-1: error set) */
extern PyMethodDef mp_tensor_autograd_methods[];
extern PyMethodDef mp_hook_functions[];
int mp_tensor_sync(PyObject *self);
int mp_tensor_traverse_hooks(PyObject *self, visitproc visit, void *arg);
void mp_tensor_clear_hooks(PyObject *self);
PyObject *mp_get_version(PyObject *self, void *c);
PyObject *mp_get_base(PyObject *self, void *c);
PyObject *mp_get_retains_grad(PyObject *self, void *c);
extern PyMethodDef mp_tensor_interop_methods[];

/* tensor_views.c: t[key] and t[key] = value */
PyObject *mp_tensor_getitem(PyObject *self, PyObject *key);
int mp_tensor_setitem(PyObject *self, PyObject *key, PyObject *value);
/* index_advanced.c: keys with tensors, lists or bools (tensor_views.c dispatches to these) */
int mp_index_is_advanced(PyObject *self, PyObject *key);
PyObject *mp_index_get_advanced(PyObject *self, PyObject *key);
int mp_index_set_advanced(PyObject *self, PyObject *key, PyObject *value);
/* ops_bind_index.c: gather/scatter/index_*, split, flip, nonzero, ... */
extern PyMethodDef mp_index_functions[];
extern PyMethodDef mp_split_functions[];          /* ops_bind_split.c */
/* interop_buffer.c: the buffer protocol (bf16 exported as 'H') */
int mp_tensor_getbuffer(PyObject *self, Py_buffer *view, int flags);
void mp_tensor_releasebuffer(PyObject *self, Py_buffer *view);

#endif
