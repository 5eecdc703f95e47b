/* gemm.cu - mp_cuda_gemm: one column-major product (mp_gpu_gemm_cm) through cuBLASLt. The
 * library is dlopen'ed on the first product, so the extension imports and runs without cuBLAS
 * (a product then fails saying how to point MPAMP_CUBLASLT_PATH at it). Owns the process-wide
 * cuBLASLt handle, the heuristic cache (one algorithm per problem) and the inner == 0 case
 * (C = beta * C through the epilogue), a small kernel here. cuBLASLt's declarations are
 * mpamp's own (cublaslt_abi.h); everything runs on the legacy default stream. */
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <type_traits>

#include "cublaslt_abi.h"
#include "cuda_common.cuh"
#include "shared/mp_half.h"

namespace {

/* ---- the library: loaded once, kept for the life of the process ---- */

struct LtApi {
    mp_status status;                   /* MP_OK when everything below is usable */
    char error[MP_MSG_CAP];             /* else why not */
    char path[128];                     /* the candidate that loaded */
    mp_lt_handle handle;
    mp_lt_status_name_fn status_name;   /* optional: NULL when the library lacks them */
    mp_lt_status_string_fn status_string;
    mp_lt_create_fn create;
    mp_lt_matmul_desc_create_fn desc_create;
    mp_lt_matmul_desc_destroy_fn desc_destroy;
    mp_lt_matmul_desc_set_fn desc_set;
    mp_lt_layout_create_fn layout_create;
    mp_lt_layout_destroy_fn layout_destroy;
    mp_lt_layout_set_fn layout_set;
    mp_lt_pref_create_fn pref_create;
    mp_lt_pref_destroy_fn pref_destroy;
    mp_lt_pref_set_fn pref_set;
    mp_lt_heuristic_fn heuristic;
    mp_lt_matmul_fn matmul;
};

/* After $MPAMP_CUBLASLT_PATH: the sonames of cuBLAS 13 and 12 (same C ABI for what we call),
 * then the development link. */
const char *const kLibNames[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"};

const char *fallback_status_name(mp_lt_status st)
{
    switch (st) {
    case MP_LT_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case MP_LT_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case MP_LT_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case MP_LT_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case MP_LT_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case MP_LT_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case MP_LT_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case MP_LT_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case MP_LT_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case MP_LT_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "unknown cuBLAS status";
    }
}

/* MP_ERR_CUDA with "<call> failed: <name> (<number>): <description>". */
mp_status lt_fail(const LtApi &lt, mp_msg *msg, const char *call, mp_lt_status st)
{
    const char *name = lt.status_name ? lt.status_name(st) : nullptr;
    const char *text = lt.status_string ? lt.status_string(st) : nullptr;
    return mp_cuda_fail(msg, MP_ERR_CUDA, "%s failed: %s (%d)%s%s", call,
                        name ? name : fallback_status_name(st), (int)st,
                        text && *text ? ": " : "", text ? text : "");
}

/* The first candidate that dlopens. On failure the message keeps the first dlerror (the
 * named file's when MPAMP_CUBLASLT_PATH is set: most likely the one the user cares about),
 * cut so that the closing hint always fits. */
void *open_library(char *error, char *loaded, size_t loaded_cap)
{
    const char *env = getenv("MPAMP_CUBLASLT_PATH");
    const char *cand[4];
    int n = 0;
    if (env && *env)
        cand[n++] = env;
    for (const char *name : kLibNames)
        cand[n++] = name;
    char first[MP_MSG_CAP] = "", tried[MP_MSG_CAP] = "";
    for (int i = 0; i < n; i++) {
        void *lib = dlopen(cand[i], RTLD_NOW | RTLD_LOCAL);
        if (lib) {
            snprintf(loaded, loaded_cap, "%s", cand[i]);
            return lib;
        }
        const char *why = dlerror();
        if (!first[0])
            snprintf(first, sizeof first, "%s", why ? why : "unknown dlopen error");
        size_t used = strlen(tried);
        snprintf(tried + used, sizeof tried - used, "%s%.100s", i ? ", " : "", cand[i]);
    }
    static const char hint[] = "; set MPAMP_CUBLASLT_PATH";
    int head = snprintf(error, MP_MSG_CAP, "cuBLASLt could not be loaded (tried %s): ", tried);
    int room = MP_MSG_CAP - 1 - (head > 0 ? head : 0) - (int)(sizeof hint - 1);
    if (room > 0)
        snprintf(error + head, MP_MSG_CAP - head, "%.*s%s", room, first, hint);
    return nullptr;
}

template <class F> bool resolve(void *lib, const char *name, F *out)
{
    void *p = dlsym(lib, name);
    *out = reinterpret_cast<F>(p);
    return p != nullptr;
}

/* Resolves every function; names the first one missing. */
bool resolve_all(void *lib, LtApi *lt)
{
    resolve(lib, "cublasLtGetStatusName", &lt->status_name);
    resolve(lib, "cublasLtGetStatusString", &lt->status_string);
#define MP_LT_NEED(field, name) \
    if (!resolve(lib, name, &lt->field)) { \
        snprintf(lt->error, sizeof lt->error, "cuBLASLt (%s) has no %s: set " \
                 "MPAMP_CUBLASLT_PATH to a libcublasLt of CUDA 12 or 13", lt->path, name); \
        return false; \
    }
    MP_LT_NEED(create, "cublasLtCreate")
    MP_LT_NEED(desc_create, "cublasLtMatmulDescCreate")
    MP_LT_NEED(desc_destroy, "cublasLtMatmulDescDestroy")
    MP_LT_NEED(desc_set, "cublasLtMatmulDescSetAttribute")
    MP_LT_NEED(layout_create, "cublasLtMatrixLayoutCreate")
    MP_LT_NEED(layout_destroy, "cublasLtMatrixLayoutDestroy")
    MP_LT_NEED(layout_set, "cublasLtMatrixLayoutSetAttribute")
    MP_LT_NEED(pref_create, "cublasLtMatmulPreferenceCreate")
    MP_LT_NEED(pref_destroy, "cublasLtMatmulPreferenceDestroy")
    MP_LT_NEED(pref_set, "cublasLtMatmulPreferenceSetAttribute")
    MP_LT_NEED(heuristic, "cublasLtMatmulAlgoGetHeuristic")
    MP_LT_NEED(matmul, "cublasLtMatmul")
#undef MP_LT_NEED
    return true;
}

LtApi load_lt()
{
    LtApi lt;
    memset(&lt, 0, sizeof lt);
    lt.status = MP_ERR_CUDA;
    void *lib = open_library(lt.error, lt.path, sizeof lt.path);
    if (!lib || !resolve_all(lib, &lt))
        return lt;                      /* a library without our functions stays loaded */
    mp_lt_status st = lt.create(&lt.handle);
    if (st != MP_LT_STATUS_SUCCESS) {
        mp_msg m;
        lt_fail(lt, &m, "cublasLtCreate", st);
        memcpy(lt.error, m.text, sizeof lt.error);
        return lt;
    }
    lt.status = MP_OK;
    return lt;
}

/* C++11 static: loaded by the first caller, the others wait. The outcome (and so
 * MPAMP_CUBLASLT_PATH, read then) holds for the life of the process; the handle is never
 * destroyed, as a destructor at exit would race the CUDA runtime's own teardown. */
const LtApi &lt_api()
{
    static const LtApi lt = load_lt();
    return lt;
}

/* ---- the problem as cuBLASLt sees it; also the heuristic cache's key ---- */

/* Every field is an int64_t, so the struct has no padding and compares with memcmp. Fields
 * that cuBLASLt does not see are normalised (strides without a batch, the bias dtype without
 * a bias), so they do not split the cache. */
struct Problem {
    int64_t op_x, op_y;                         /* MP_LT_OP_* */
    int64_t x_rows, x_cols, ldx, y_rows, y_cols, ldy, rows, cols, ldc;
    int64_t batch, stride_x, stride_y, stride_c;
    int64_t x_type, y_type, c_type, bias_type;  /* MP_LT_R_*; bias_type -1 without a bias */
    int64_t compute, epilogue;                  /* MP_LT_COMPUTE_*, MP_LT_EPILOGUE_* */
    int64_t ws_bytes;
    int64_t align_x, align_y, align_c, align_bias;  /* 1..16 bytes; align_bias 0 without */
};
static_assert(std::has_unique_object_representations<Problem>::value,
              "Problem must have no padding (memcmp compares it)");

int64_t lt_type(mp_dtype dt)
{
    switch (dt) {
    case MP_DTYPE_FLOAT32: return MP_LT_R_32F;
    case MP_DTYPE_FLOAT16: return MP_LT_R_16F;
    case MP_DTYPE_BFLOAT16: return MP_LT_R_16BF;
    default: return -1;
    }
}

const char *lt_type_name(int64_t t)
{
    return t == MP_LT_R_32F ? "float32" : t == MP_LT_R_16F ? "float16" : "bfloat16";
}

int has_bias(int epilogue)
{
    return epilogue == MP_GPU_EPI_BIAS || epilogue == MP_GPU_EPI_RELU_BIAS;
}

int64_t lt_epilogue(int epilogue)
{
    switch (epilogue) {
    case MP_GPU_EPI_BIAS: return MP_LT_EPILOGUE_BIAS;
    case MP_GPU_EPI_RELU_BIAS: return MP_LT_EPILOGUE_RELU_BIAS;
    case MP_GPU_EPI_RELU: return MP_LT_EPILOGUE_RELU;
    default: return MP_LT_EPILOGUE_DEFAULT;
    }
}

/* Largest power of two up to 16 dividing the address: cuBLASLt's heuristic assumes 256-byte
 * aligned operands unless told otherwise (torch tells it the same way). */
int64_t alignment(const void *p)
{
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    for (int64_t al = 16; al > 1; al /= 2)
        if (a % (uintptr_t)al == 0)
            return al;
    return 1;
}

Problem make_problem(const mp_gpu_gemm_cm *g, const void *x, const void *y, const void *c,
                     const void *bias, size_t ws_bytes, int allow_tf32)
{
    Problem p;
    p.op_x = g->trans_x ? MP_LT_OP_T : MP_LT_OP_N;
    p.op_y = g->trans_y ? MP_LT_OP_T : MP_LT_OP_N;
    /* X is stored [rows, inner] (transposed: [inner, rows]), Y [inner, cols] ([cols, inner]) */
    p.x_rows = g->trans_x ? g->inner : g->rows;
    p.x_cols = g->trans_x ? g->rows : g->inner;
    p.y_rows = g->trans_y ? g->cols : g->inner;
    p.y_cols = g->trans_y ? g->inner : g->cols;
    p.rows = g->rows;
    p.cols = g->cols;
    p.ldx = g->ldx;
    p.ldy = g->ldy;
    p.ldc = g->ldc;
    p.batch = g->batch;
    p.stride_x = g->batch > 1 ? g->stride_x : 0;
    p.stride_y = g->batch > 1 ? g->stride_y : 0;
    p.stride_c = g->batch > 1 ? g->stride_c : 0;
    p.x_type = lt_type(g->x_dtype);
    p.y_type = lt_type(g->y_dtype);
    p.c_type = lt_type(g->c_dtype);
    p.bias_type = has_bias(g->epilogue) ? lt_type(g->bias_dtype) : -1;
    int tf32 = allow_tf32 && g->x_dtype == MP_DTYPE_FLOAT32 && g->y_dtype == MP_DTYPE_FLOAT32;
    p.compute = tf32 ? MP_LT_COMPUTE_32F_FAST_TF32 : MP_LT_COMPUTE_32F;
    p.epilogue = lt_epilogue(g->epilogue);
    p.ws_bytes = (int64_t)ws_bytes;
    p.align_x = alignment(x);
    p.align_y = alignment(y);
    p.align_c = alignment(c);
    p.align_bias = has_bias(g->epilogue) ? alignment(bias) : 0;
    return p;
}

/* ---- the heuristic cache: a fixed table, oldest entry replaced first ---- */

constexpr int kCacheSize = 64;          /* distinct products of a training step, with room */

struct CacheEntry {
    Problem key;
    mp_lt_algo algo;
};

std::mutex cache_mutex;
CacheEntry cache[kCacheSize];
int cache_used = 0, cache_next = 0;

/* Index of p in the table or -1; the caller holds cache_mutex. */
int cache_index(const Problem &p)
{
    for (int i = 0; i < cache_used; i++)
        if (memcmp(&cache[i].key, &p, sizeof p) == 0)
            return i;
    return -1;
}

bool cache_find(const Problem &p, mp_lt_algo *algo)
{
    std::lock_guard<std::mutex> lock(cache_mutex);
    int i = cache_index(p);
    if (i >= 0)
        *algo = cache[i].algo;
    return i >= 0;
}

void cache_put(const Problem &p, const mp_lt_algo &algo)
{
    std::lock_guard<std::mutex> lock(cache_mutex);
    if (cache_index(p) >= 0)            /* another thread asked the heuristic too */
        return;
    cache[cache_next].key = p;
    cache[cache_next].algo = algo;
    cache_next = (cache_next + 1) % kCacheSize;
    if (cache_used < kCacheSize)
        cache_used++;
}

/* ---- descriptors: made per call (a few host allocations), destroyed on every path ---- */

struct Descs {
    const LtApi &lt;
    mp_lt_matmul_desc op = nullptr;
    mp_lt_layout x = nullptr, y = nullptr, c = nullptr;
    explicit Descs(const LtApi &api) : lt(api) {}
    Descs(const Descs &) = delete;
    Descs &operator=(const Descs &) = delete;
    ~Descs()
    {
        if (op)
            lt.desc_destroy(op);
        for (mp_lt_layout l : {x, y, c})
            if (l)
                lt.layout_destroy(l);
    }
};

/* Sets one attribute from a value of its documented type (the size is cuBLASLt's check). */
template <class Set, class Obj, class V>
mp_status set_attr(const LtApi &lt, Set set, Obj obj, int32_t attr, const V &value,
                   const char *call, mp_msg *msg)
{
    mp_lt_status st = set(obj, attr, &value, sizeof value);
    return st == MP_LT_STATUS_SUCCESS ? MP_OK : lt_fail(lt, msg, call, st);
}

mp_status make_layout(const LtApi &lt, mp_lt_layout *out, int64_t type, int64_t rows,
                      int64_t cols, int64_t ld, int64_t batch, int64_t stride, mp_msg *msg)
{
    mp_lt_status st = lt.layout_create(out, (mp_lt_data_type)type, (uint64_t)rows,
                                       (uint64_t)cols, ld);
    if (st != MP_LT_STATUS_SUCCESS)
        return lt_fail(lt, msg, "cublasLtMatrixLayoutCreate", st);
    if (batch == 1)
        return MP_OK;
    int32_t count = (int32_t)batch;     /* <= INT32_MAX: checked by check_args */
    mp_status s = set_attr(lt, lt.layout_set, *out, MP_LT_LAYOUT_BATCH_COUNT, count,
                           "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)", msg);
    if (s != MP_OK)
        return s;
    return set_attr(lt, lt.layout_set, *out, MP_LT_LAYOUT_STRIDED_BATCH_OFFSET, stride,
                    "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)", msg);
}

mp_status make_op(const LtApi &lt, const Problem &p, const void *bias, Descs &d, mp_msg *msg)
{
    mp_lt_status st = lt.desc_create(&d.op, (mp_lt_compute_type)p.compute, MP_LT_R_32F);
    if (st != MP_LT_STATUS_SUCCESS)
        return lt_fail(lt, msg, "cublasLtMatmulDescCreate", st);
    int32_t op_x = (int32_t)p.op_x, op_y = (int32_t)p.op_y;
    uint32_t epilogue = (uint32_t)p.epilogue;
    mp_status s = set_attr(lt, lt.desc_set, d.op, MP_LT_DESC_TRANSA, op_x,
                           "cublasLtMatmulDescSetAttribute(TRANSA)", msg);
    if (s == MP_OK)
        s = set_attr(lt, lt.desc_set, d.op, MP_LT_DESC_TRANSB, op_y,
                     "cublasLtMatmulDescSetAttribute(TRANSB)", msg);
    if (s == MP_OK && epilogue != MP_LT_EPILOGUE_DEFAULT)
        s = set_attr(lt, lt.desc_set, d.op, MP_LT_DESC_EPILOGUE, epilogue,
                     "cublasLtMatmulDescSetAttribute(EPILOGUE)", msg);
    if (s == MP_OK && p.bias_type >= 0)
        s = set_attr(lt, lt.desc_set, d.op, MP_LT_DESC_BIAS_POINTER, bias,
                     "cublasLtMatmulDescSetAttribute(BIAS_POINTER)", msg);
    /* the bias defaults to D's type; said only when it differs (older cuBLASLt lacks it) */
    if (s == MP_OK && p.bias_type >= 0 && p.bias_type != p.c_type) {
        int32_t bias_type = (int32_t)p.bias_type;
        s = set_attr(lt, lt.desc_set, d.op, MP_LT_DESC_BIAS_DATA_TYPE, bias_type,
                     "cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)", msg);
    }
    return s;
}

mp_status make_descs(const LtApi &lt, const Problem &p, const void *bias, Descs &d,
                     mp_msg *msg)
{
    mp_status s = make_op(lt, p, bias, d, msg);
    if (s == MP_OK)
        s = make_layout(lt, &d.x, p.x_type, p.x_rows, p.x_cols, p.ldx, p.batch, p.stride_x,
                        msg);
    if (s == MP_OK)
        s = make_layout(lt, &d.y, p.y_type, p.y_rows, p.y_cols, p.ldy, p.batch, p.stride_y,
                        msg);
    if (s == MP_OK)
        s = make_layout(lt, &d.c, p.c_type, p.rows, p.cols, p.ldc, p.batch, p.stride_c, msg);
    return s;
}

struct Pref {
    const LtApi &lt;
    mp_lt_pref pref = nullptr;
    explicit Pref(const LtApi &api) : lt(api) {}
    Pref(const Pref &) = delete;
    Pref &operator=(const Pref &) = delete;
    ~Pref() { if (pref) lt.pref_destroy(pref); }
};

mp_status make_pref(const LtApi &lt, const Problem &p, Pref &pr, mp_msg *msg)
{
    mp_lt_status st = lt.pref_create(&pr.pref);
    if (st != MP_LT_STATUS_SUCCESS)
        return lt_fail(lt, msg, "cublasLtMatmulPreferenceCreate", st);
    uint64_t ws = (uint64_t)p.ws_bytes;
    mp_status s = set_attr(lt, lt.pref_set, pr.pref, MP_LT_PREF_MAX_WORKSPACE_BYTES, ws,
                           "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)", msg);
    const int32_t attr[4] = {MP_LT_PREF_MIN_ALIGNMENT_A_BYTES, MP_LT_PREF_MIN_ALIGNMENT_B_BYTES,
                             MP_LT_PREF_MIN_ALIGNMENT_C_BYTES, MP_LT_PREF_MIN_ALIGNMENT_D_BYTES};
    const uint32_t align[4] = {(uint32_t)p.align_x, (uint32_t)p.align_y, (uint32_t)p.align_c,
                               (uint32_t)p.align_c};     /* D is C */
    for (int i = 0; i < 4 && s == MP_OK; i++)
        s = set_attr(lt, lt.pref_set, pr.pref, attr[i], align[i],
                     "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)", msg);
    return s;
}

/* cuBLASLt's best algorithm for p within the workspace. */
mp_status pick_algo(const LtApi &lt, const Problem &p, const Descs &d, mp_lt_algo *algo,
                    mp_msg *msg)
{
    Pref pr(lt);
    mp_status s = make_pref(lt, p, pr, msg);
    if (s != MP_OK)
        return s;
    mp_lt_heuristic res;
    memset(&res, 0, sizeof res);
    int found = 0;
    mp_lt_status st = lt.heuristic(lt.handle, d.op, d.x, d.y, d.c, d.c, pr.pref, 1, &res,
                                   &found);
    if (st != MP_LT_STATUS_SUCCESS)
        return lt_fail(lt, msg, "cublasLtMatmulAlgoGetHeuristic", st);
    if (found < 1 || res.state != MP_LT_STATUS_SUCCESS)
        return mp_cuda_fail(msg, MP_ERR_CUDA, "cuBLASLt has no algorithm for this matmul "
                            "(rows %lld, cols %lld, inner %lld, batch %lld, %s x %s -> %s, "
                            "epilogue %d, workspace %lld bytes)", (long long)p.rows,
                            (long long)p.cols, (long long)(p.op_x == MP_LT_OP_T ? p.x_rows :
                            p.x_cols), (long long)p.batch, lt_type_name(p.x_type),
                            lt_type_name(p.y_type), lt_type_name(p.c_type), (int)p.epilogue,
                            (long long)p.ws_bytes);
    *algo = res.algo;
    return MP_OK;
}

/* ---- inner == 0: no product, C = act(beta * C + bias) ---- */

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

struct ScaleArgs {
    void *c;
    const void *bias;                   /* NULL: none */
    int64_t rows, cols, ldc, batch, stride_c;
    float beta;
    mp_dtype c_dtype, bias_dtype;
    int relu;
};

__device__ float load_f32(const void *p, mp_dtype dt, int64_t i)
{
    switch (dt) {
    case MP_DTYPE_FLOAT16: return mp_half_to_f32(static_cast<const mp_half *>(p)[i]);
    case MP_DTYPE_BFLOAT16: return mp_bf16_to_f32(static_cast<const mp_bf16 *>(p)[i]);
    default: return static_cast<const float *>(p)[i];
    }
}

__device__ void store_f32(void *p, mp_dtype dt, int64_t i, float v)
{
    switch (dt) {
    case MP_DTYPE_FLOAT16: static_cast<mp_half *>(p)[i] = mp_f32_to_half(v); break;
    case MP_DTYPE_BFLOAT16: static_cast<mp_bf16 *>(p)[i] = mp_f32_to_bf16(v); break;
    default: static_cast<float *>(p)[i] = v; break;
    }
}

__global__ void scale_c_kernel(ScaleArgs a)
{
    int64_t total = a.batch * a.rows * a.cols;
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        int64_t r = i % a.rows, t = i / a.rows;
        int64_t at = (t / a.cols) * a.stride_c + (t % a.cols) * a.ldc + r;
        /* beta == 0 never reads C (BLAS: it may hold anything, NaN included) */
        float v = a.beta == 0.0f ? 0.0f : a.beta * load_f32(a.c, a.c_dtype, at);
        if (a.bias)
            v += load_f32(a.bias, a.bias_dtype, r);
        if (a.relu && v < 0.0f)         /* NaN stays NaN, as torch's relu */
            v = 0.0f;
        store_f32(a.c, a.c_dtype, at, v);
    }
}

mp_status scale_c(const mp_gpu_gemm_cm *g, void *c, const void *bias, mp_msg *msg)
{
    ScaleArgs a;
    a.c = c;
    a.bias = has_bias(g->epilogue) ? bias : nullptr;
    a.rows = g->rows;
    a.cols = g->cols;
    a.ldc = g->ldc;
    a.batch = g->batch;
    a.stride_c = g->stride_c;
    a.beta = g->beta;
    a.c_dtype = g->c_dtype;
    a.bias_dtype = g->bias_dtype;
    a.relu = g->epilogue == MP_GPU_EPI_RELU || g->epilogue == MP_GPU_EPI_RELU_BIAS;
    int64_t blocks = (a.batch * a.rows * a.cols + kThreads - 1) / kThreads;
    scale_c_kernel<<<(unsigned)(blocks < kMaxBlocks ? blocks : kMaxBlocks), kThreads>>>(a);
    return mp_cuda_check(cudaGetLastError(), "matmul with inner size 0: scale kernel launch",
                         msg);
}

/* ---- the entry point ---- */

mp_status check_args(const mp_gpu_gemm_cm *g, const void *bias, mp_msg *msg)
{
    if (g->epilogue == MP_GPU_EPI_SEPARATE)
        return mp_cuda_fail(msg, MP_ERR_VALUE, "CUDA matmul: this bias or activation cannot "
                            "be fused into cuBLASLt's epilogue (MP_GPU_EPI_SEPARATE): the "
                            "caller runs the product without it, then its own kernels");
    if (g->epilogue < MP_GPU_EPI_DEFAULT || g->epilogue > MP_GPU_EPI_RELU)
        return mp_cuda_fail(msg, MP_ERR_VALUE, "CUDA matmul: unknown epilogue %d",
                            g->epilogue);
    if (lt_type(g->x_dtype) < 0 || lt_type(g->y_dtype) < 0 || lt_type(g->c_dtype) < 0 ||
        (has_bias(g->epilogue) && lt_type(g->bias_dtype) < 0))
        return mp_cuda_fail(msg, MP_ERR_TYPE, "CUDA matmul: operands, output and bias must "
                            "be float32, float16 or bfloat16");
    if (g->compute != MP_DTYPE_FLOAT32)  /* TF32 is chosen here, from allow_tf32 */
        return mp_cuda_fail(msg, MP_ERR_VALUE, "CUDA matmul: only float32 accumulation is "
                            "implemented");
    if (g->rows < 0 || g->cols < 0 || g->inner < 0 || g->batch < 1 || g->batch > INT32_MAX)
        return mp_cuda_fail(msg, MP_ERR_VALUE, "CUDA matmul: sizes must be non-negative and "
                            "the batch count in 1..2^31-1");
    if (g->batch > 1 && g->stride_c == 0)
        return mp_cuda_fail(msg, MP_ERR_VALUE, "CUDA matmul: a batch of products cannot share "
                            "one output (stride_c 0)");
    if (has_bias(g->epilogue) && !bias)
        return mp_cuda_fail(msg, MP_ERR_VALUE, "CUDA matmul: the epilogue adds a bias but "
                            "none was given");
    return MP_OK;
}

mp_status lt_gemm(const mp_gpu_gemm_cm *g, const void *x, const void *y, void *c,
                  const void *bias, void *workspace, size_t ws_bytes, int allow_tf32,
                  mp_msg *msg)
{
    const LtApi &lt = lt_api();
    if (lt.status != MP_OK)
        return mp_cuda_fail(msg, lt.status, "%s", lt.error);
    if (!workspace)
        ws_bytes = 0;
    Problem p = make_problem(g, x, y, c, bias, ws_bytes, allow_tf32);
    Descs d(lt);
    mp_status s = make_descs(lt, p, bias, d, msg);
    if (s != MP_OK)
        return s;
    mp_lt_algo algo;
    if (!cache_find(p, &algo)) {
        s = pick_algo(lt, p, d, &algo, msg);
        if (s != MP_OK)
            return s;
        cache_put(p, algo);
    }
    float alpha = g->alpha, beta = g->beta;   /* scale type fp32, host pointer mode */
    mp_lt_status st = lt.matmul(lt.handle, d.op, &alpha, x, d.x, y, d.y, &beta, c, d.c, c,
                                d.c, &algo, workspace, ws_bytes, nullptr /* legacy stream */);
    return st == MP_LT_STATUS_SUCCESS ? MP_OK : lt_fail(lt, msg, "cublasLtMatmul", st);
}

}  // namespace

extern "C" mp_status mp_cuda_gemm(const mp_gpu_gemm_cm *g, const void *x, const void *y,
                                  void *c, const void *bias, void *workspace, size_t ws_bytes,
                                  int allow_tf32, mp_msg *msg)
{
    mp_status st = mp_cuda_require_device(msg);
    if (st == MP_OK)
        st = check_args(g, bias, msg);
    if (st != MP_OK)
        return st;
    if (g->rows == 0 || g->cols == 0)
        return MP_OK;
    if (g->inner == 0)                  /* no product to ask cuBLASLt for */
        return scale_c(g, c, bias, msg);
    return lt_gemm(g, x, y, c, bias, workspace, ws_bytes, allow_tf32, msg);
}
