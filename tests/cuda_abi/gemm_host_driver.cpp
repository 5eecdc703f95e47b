/* gemm_host_driver.cpp - runs cuda/gemm.cu's mp_cuda_gemm against the fake cuBLASLt
 * (fake_cublaslt.cpp) and checks what it asked the library for: layouts, attributes and
 * their sizes, the heuristic cache, error messages, descriptor cleanup. Linked with gemm.cu
 * alone: mp_cuda_require_device is stubbed to "a device is there", so this runs on machines
 * without one (the inner == 0 kernel then checks its launch error instead of its result).
 * Usage: driver fake | missing | nosym | create_fails (tests/test_cuda_abi.py sets the env). */
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cublaslt_abi.h"
#include "cuda_common.cuh"

mp_status mp_cuda_require_device(mp_msg *msg) { return MP_OK; }

mp_status mp_cuda_check(cudaError_t err, const char *what, mp_msg *msg)
{
    if (err == cudaSuccess)
        return MP_OK;
    (void)cudaGetLastError();
    return mp_cuda_fail(msg, MP_ERR_CUDA, "%s: %s", what, cudaGetErrorString(err));
}

namespace {

int failures = 0;
const char *(*fake_log)(void);
void (*fake_reset)(void);
int (*fake_live)(void);
void (*fake_fail)(const char *, int);
void (*fake_no_algo)(int);

#define CHECK(cond) \
    do { \
        if (!(cond)) { \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n--- log ---\n%s-----------\n", __FILE__, \
                    __LINE__, #cond, fake_log ? fake_log() : ""); \
            failures++; \
        } \
    } while (0)

bool has(const char *text, const char *part) { return strstr(text, part) != nullptr; }
int count(const char *text, const char *part)
{
    int n = 0;
    for (const char *p = strstr(text, part); p; p = strstr(p + 1, part))
        n++;
    return n;
}

void *const X = (void *)0x10000, *const Y = (void *)0x20000, *const C = (void *)0x30000;
void *const BIAS = (void *)0x40000, *const WS = (void *)0x50000;

/* fp16 x fp16 -> fp32, X transposed, bias epilogue: cuBLAS m 8, n 4, k 16 */
mp_gpu_gemm_cm base()
{
    mp_gpu_gemm_cm g;
    memset(&g, 0, sizeof g);
    g.trans_x = 1;
    g.rows = 8, g.cols = 4, g.inner = 16;
    g.ldx = 16, g.ldy = 16, g.ldc = 8;
    g.batch = 1;
    g.x_dtype = g.y_dtype = MP_DTYPE_FLOAT16;
    g.c_dtype = g.bias_dtype = MP_DTYPE_FLOAT32;
    g.compute = MP_DTYPE_FLOAT32;
    g.alpha = 1.5f, g.beta = 0.0f;
    g.epilogue = MP_GPU_EPI_BIAS;
    g.swapped = 1;
    return g;
}

mp_status call(const mp_gpu_gemm_cm &g, mp_msg *m, const void *x = X, size_t ws = 1 << 20,
               int tf32 = 1)
{
    fake_reset();
    m->text[0] = '\0';
    return mp_cuda_gemm(&g, x, Y, C, BIAS, WS, ws, tf32, m);
}

void test_first_call()
{
    mp_msg m;
    mp_gpu_gemm_cm g = base();
    CHECK(call(g, &m) == MP_OK);
    const char *expect =
        "desc_create compute=68 scale=0\n"          /* fp16: never TF32 */
        "desc TRANSA=1\n"
        "desc TRANSB=0\n"
        "desc EPILOGUE=4\n"
        "desc BIAS_POINTER=0x40000\n"               /* no BIAS_DATA_TYPE: it is C's */
        "layout_create type=2 rows=16 cols=8 ld=16\n"
        "layout_create type=2 rows=16 cols=4 ld=16\n"
        "layout_create type=0 rows=8 cols=4 ld=8\n"
        "pref_create\n"
        "pref MAX_WORKSPACE_BYTES=1048576\n"
        "pref MIN_ALIGNMENT_A_BYTES=16\n"
        "pref MIN_ALIGNMENT_B_BYTES=16\n"
        "pref MIN_ALIGNMENT_C_BYTES=16\n"
        "pref MIN_ALIGNMENT_D_BYTES=16\n"
        "heuristic requested=1 c_is_d=1\n"
        "matmul alpha=1.5 beta=0 x=0x10000 y=0x20000 c=0x30000 c_is_d=1 algo=1 ws=0x50000 "
        "ws_bytes=1048576 stream=(nil) live=4\n";
    CHECK(strcmp(fake_log(), expect) == 0);
    CHECK(fake_live() == 0);
}

void test_cache()
{
    mp_msg m;
    mp_gpu_gemm_cm g = base();
    g.alpha = 2.0f, g.beta = 1.0f;              /* scalars do not pick the algorithm */
    CHECK(call(g, &m) == MP_OK);
    CHECK(count(fake_log(), "heuristic") == 0 && has(fake_log(), "algo=1 "));
    CHECK(call(g, &m, (const char *)X + 2) == MP_OK);   /* X 2-byte aligned: a new key */
    CHECK(has(fake_log(), "MIN_ALIGNMENT_A_BYTES=2\n") && has(fake_log(), "algo=2 "));
    CHECK(call(g, &m, X, 4096) == MP_OK);               /* other workspace: a new key */
    CHECK(has(fake_log(), "MAX_WORKSPACE_BYTES=4096\n") && has(fake_log(), "algo=3 "));
    CHECK(call(g, &m) == MP_OK && has(fake_log(), "algo=1 ") && !has(fake_log(), "pref"));
    g.stride_x = 999, g.stride_c = 5;           /* unseen by cuBLASLt without a batch */
    CHECK(call(g, &m) == MP_OK && has(fake_log(), "algo=1 ") && !has(fake_log(), "pref"));
    /* more problems than the table holds: the oldest is asked again */
    for (int i = 0; i < 64; i++) {
        g.rows = 100 + i, g.ldc = 100 + i;
        CHECK(call(g, &m) == MP_OK && has(fake_log(), "heuristic"));
    }
    g = base();
    CHECK(call(g, &m) == MP_OK && has(fake_log(), "heuristic"));
}

void test_tf32_and_batch()
{
    mp_msg m;
    mp_gpu_gemm_cm g = base();
    g.x_dtype = g.y_dtype = MP_DTYPE_FLOAT32;
    g.epilogue = MP_GPU_EPI_DEFAULT;
    CHECK(call(g, &m) == MP_OK && has(fake_log(), "compute=77 ") && !has(fake_log(), "desc E"));
    CHECK(call(g, &m, X, 1 << 20, 0) == MP_OK && has(fake_log(), "compute=68 "));
    CHECK(!has(fake_log(), "BATCH_COUNT"));
    g.trans_x = 0, g.trans_y = 1, g.ldx = 8, g.ldy = 4;
    g.batch = 3, g.stride_x = 0, g.stride_y = 64, g.stride_c = 32;   /* X broadcast */
    CHECK(call(g, &m) == MP_OK);
    CHECK(has(fake_log(), "desc TRANSA=0\ndesc TRANSB=1\n"));
    CHECK(has(fake_log(), "layout_create type=0 rows=8 cols=16 ld=8\nlayout BATCH_COUNT=3\n"
                          "layout STRIDED_BATCH_OFFSET=0\n"));
    CHECK(has(fake_log(), "layout_create type=0 rows=4 cols=16 ld=4\nlayout BATCH_COUNT=3\n"
                          "layout STRIDED_BATCH_OFFSET=64\n"));
    CHECK(has(fake_log(), "layout_create type=0 rows=8 cols=4 ld=8\nlayout BATCH_COUNT=3\n"
                          "layout STRIDED_BATCH_OFFSET=32\n"));
    g.stride_c = 0;
    CHECK(call(g, &m) == MP_ERR_VALUE && has(m.text, "share one output"));
}

void test_epilogues()
{
    mp_msg m;
    mp_gpu_gemm_cm g = base();
    g.epilogue = MP_GPU_EPI_RELU;
    CHECK(call(g, &m) == MP_OK && has(fake_log(), "EPILOGUE=2\n") && !has(fake_log(), "BIAS"));
    g.epilogue = MP_GPU_EPI_RELU_BIAS;
    g.bias_dtype = MP_DTYPE_BFLOAT16;
    CHECK(call(g, &m) == MP_OK && has(fake_log(), "EPILOGUE=6\ndesc BIAS_POINTER=0x40000\n"
                                                  "desc BIAS_DATA_TYPE=14\n"));
    g.epilogue = MP_GPU_EPI_SEPARATE;
    CHECK(call(g, &m) == MP_ERR_VALUE && has(m.text, "MP_GPU_EPI_SEPARATE"));
    CHECK(fake_log()[0] == '\0');
    g.epilogue = MP_GPU_EPI_BIAS;
    fake_reset();
    CHECK(mp_cuda_gemm(&g, X, Y, C, nullptr, WS, 0, 0, &m) == MP_ERR_VALUE &&
          has(m.text, "none was given"));
    g.compute = MP_DTYPE_FLOAT16;
    CHECK(call(g, &m) == MP_ERR_VALUE && has(m.text, "float32 accumulation"));
    g.compute = MP_DTYPE_FLOAT32;
    g.c_dtype = MP_DTYPE_INT64;
    CHECK(call(g, &m) == MP_ERR_TYPE && fake_log()[0] == '\0');
}

void test_errors()
{
    mp_msg m;
    mp_gpu_gemm_cm g = base();
    g.rows = 7;                                 /* not cached yet */
    const char *fns[] = {"cublasLtMatmulDescCreate", "cublasLtMatmulDescSetAttribute",
                         "cublasLtMatrixLayoutCreate", "cublasLtMatmulPreferenceCreate",
                         "cublasLtMatmulPreferenceSetAttribute",
                         "cublasLtMatmulAlgoGetHeuristic", "cublasLtMatmul"};
    for (const char *fn : fns) {
        fake_reset();
        fake_fail(fn, MP_LT_STATUS_EXECUTION_FAILED);
        m.text[0] = '\0';
        CHECK(mp_cuda_gemm(&g, X, Y, C, BIAS, WS, 1 << 20, 0, &m) == MP_ERR_CUDA);
        std::string want = std::string(fn);
        CHECK(has(m.text, want.c_str()) &&
              has(m.text, "failed: CUBLAS_STATUS_EXECUTION_FAILED (13): fake description"));
        CHECK(fake_live() == 0);
    }
    g.batch = 2, g.stride_c = 64;
    fake_reset();
    fake_fail("cublasLtMatrixLayoutSetAttribute", MP_LT_STATUS_INVALID_VALUE);
    CHECK(mp_cuda_gemm(&g, X, Y, C, BIAS, WS, 0, 0, &m) == MP_ERR_CUDA);
    CHECK(has(m.text, "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT) failed: FAKE_NAME (7)"));
    fake_reset();
    fake_no_algo(1);
    CHECK(mp_cuda_gemm(&g, X, Y, C, BIAS, WS, 0, 0, &m) == MP_ERR_CUDA);
    CHECK(has(m.text, "no algorithm") && has(m.text, "float16 x float16 -> float32"));
    CHECK(has(m.text, "rows 7, cols 4, inner 16, batch 2"));
    CHECK(fake_live() == 0);
}

void test_empty()
{
    mp_msg m;
    mp_gpu_gemm_cm g = base();
    g.rows = 0;
    CHECK(call(g, &m) == MP_OK && fake_log()[0] == '\0');
    g = base();
    g.cols = 0;
    CHECK(call(g, &m) == MP_OK && fake_log()[0] == '\0');
    /* inner 0: C = relu(beta * C + bias) by gemm.cu's kernel, never cuBLASLt */
    g = base();
    g.inner = 0, g.rows = 2, g.cols = 3, g.ldc = 2, g.beta = 2.0f, g.x_dtype = g.y_dtype =
        MP_DTYPE_FLOAT32;
    g.epilogue = MP_GPU_EPI_RELU_BIAS;
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        (void)cudaGetLastError();
        CHECK(call(g, &m) == MP_ERR_CUDA && has(m.text, "inner size 0: scale kernel launch"));
        CHECK(fake_log()[0] == '\0');
        return;
    }
    float host[6] = {1, 1, 1, 1, 1, 1}, bias[2] = {1, -5}, *dc = nullptr, *db = nullptr;
    CHECK(cudaMalloc(&dc, sizeof host) == cudaSuccess && cudaMalloc(&db, sizeof bias) == 0);
    cudaMemcpy(dc, host, sizeof host, cudaMemcpyHostToDevice);
    cudaMemcpy(db, bias, sizeof bias, cudaMemcpyHostToDevice);
    fake_reset();
    CHECK(mp_cuda_gemm(&g, X, Y, dc, db, WS, 0, 0, &m) == MP_OK && fake_log()[0] == '\0');
    CHECK(cudaMemcpy(host, dc, sizeof host, cudaMemcpyDeviceToHost) == cudaSuccess);
    for (int i = 0; i < 6; i++)
        CHECK(host[i] == (i % 2 ? 0.0f : 3.0f));
    cudaFree(dc);
    cudaFree(db);
}

bool any_real_library()
{
    for (const char *name : {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"})
        if (void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
            dlclose(lib);
            return true;
        }
    return false;
}

template <class F> void need(void *lib, const char *name, F *out)
{
    *out = reinterpret_cast<F>(dlsym(lib, name));
    if (!*out) {
        fprintf(stderr, "the fake library has no %s\n", name);
        exit(2);
    }
}

int run_fake()
{
    void *lib = dlopen(getenv("MPAMP_CUBLASLT_PATH"), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "cannot open the fake: %s\n", dlerror());
        return 2;
    }
    need(lib, "fake_lt_log", &fake_log);
    need(lib, "fake_lt_reset", &fake_reset);
    need(lib, "fake_lt_live", &fake_live);
    need(lib, "fake_lt_fail", &fake_fail);
    need(lib, "fake_lt_no_algo", &fake_no_algo);
    test_first_call();   /* first: it expects an empty heuristic cache */
    test_cache();
    test_tf32_and_batch();
    test_epilogues();
    test_errors();
    test_empty();
    return failures ? 1 : 0;
}

/* One product in a process whose library fails to load: prints mp_cuda_gemm's message. */
int run_load_failure()
{
    mp_msg m;
    mp_gpu_gemm_cm g = base();
    mp_status st = mp_cuda_gemm(&g, X, Y, C, BIAS, WS, 0, 0, &m);
    printf("status=%d\n%s\n", (int)st, m.text);
    return 0;
}

}  // namespace

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "fake")) {
        int rc = run_fake();
        printf(rc ? "FAILED (%d checks)\n" : "OK\n", failures);
        return rc;
    }
    if (!strcmp(mode, "missing") && any_real_library()) {
        printf("SKIP: a libcublasLt is on the loader's path\n");
        return 0;
    }
    if (!strcmp(mode, "missing") || !strcmp(mode, "nosym") || !strcmp(mode, "create_fails"))
        return run_load_failure();
    fprintf(stderr, "usage: %s fake | missing | nosym | create_fails\n", argv[0]);
    return 2;
}
