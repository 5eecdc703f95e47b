/* fake_cublaslt.cpp - a stand-in libcublasLt for testing cuda/gemm.cu's host side on a
 * machine without a GPU or cuBLAS (tests/test_cuda_abi.py builds it as a shared library and
 * points MPAMP_CUBLASLT_PATH at it). It exports the real names, logs every call as a line of
 * text, checks each attribute's size against the type cublasLt.h documents for it (as the
 * real library does), hands out numbered algorithms and counts live descriptors, so the
 * driver can assert what gemm.cu asked for. Never dereferences a data pointer. */
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cublaslt_abi.h"

#define FAKE_API extern "C" __attribute__((visibility("default")))

namespace {

std::string log_text;
int live = 0;               /* descriptors and preferences created and not destroyed */
int algos_handed = 0;
std::string fail_fn;        /* fake_lt_fail: this function returns fail_status */
int fail_status = 0;
int no_algo = 0;

void logf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void logf(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    log_text += line;
    log_text += '\n';
}

bool failing(const char *fn) { return fail_fn == fn; }

struct Object {
    int kind;
};

template <class T> mp_lt_status create(T *out, int kind)
{
    Object *o = new Object{kind};
    *out = reinterpret_cast<T>(o);
    live++;
    return MP_LT_STATUS_SUCCESS;
}

template <class T> mp_lt_status destroy(T obj)
{
    delete reinterpret_cast<Object *>(obj);
    live--;
    return MP_LT_STATUS_SUCCESS;
}

struct Attr {
    int id;
    const char *name;
    size_t size;            /* the documented value type's size */
    int is_pointer;
};

const Attr desc_attrs[] = {{MP_LT_DESC_TRANSA, "TRANSA", 4, 0},
                           {MP_LT_DESC_TRANSB, "TRANSB", 4, 0},
                           {MP_LT_DESC_EPILOGUE, "EPILOGUE", 4, 0},
                           {MP_LT_DESC_BIAS_POINTER, "BIAS_POINTER", 8, 1},
                           {MP_LT_DESC_BIAS_DATA_TYPE, "BIAS_DATA_TYPE", 4, 0}};
const Attr layout_attrs[] = {{MP_LT_LAYOUT_BATCH_COUNT, "BATCH_COUNT", 4, 0},
                             {MP_LT_LAYOUT_STRIDED_BATCH_OFFSET, "STRIDED_BATCH_OFFSET", 8, 0}};
const Attr pref_attrs[] = {{MP_LT_PREF_MAX_WORKSPACE_BYTES, "MAX_WORKSPACE_BYTES", 8, 0},
                           {MP_LT_PREF_MIN_ALIGNMENT_A_BYTES, "MIN_ALIGNMENT_A_BYTES", 4, 0},
                           {MP_LT_PREF_MIN_ALIGNMENT_B_BYTES, "MIN_ALIGNMENT_B_BYTES", 4, 0},
                           {MP_LT_PREF_MIN_ALIGNMENT_C_BYTES, "MIN_ALIGNMENT_C_BYTES", 4, 0},
                           {MP_LT_PREF_MIN_ALIGNMENT_D_BYTES, "MIN_ALIGNMENT_D_BYTES", 4, 0}};

template <size_t N>
mp_lt_status set_attr(const char *fn, const char *what, const Attr (&table)[N], int attr,
                      const void *buf, size_t size)
{
    if (failing(fn))
        return fail_status;
    for (const Attr &a : table) {
        if (a.id != attr)
            continue;
        if (size != a.size) {
            logf("%s %s: wrong size %zu", what, a.name, size);
            return MP_LT_STATUS_INVALID_VALUE;
        }
        long long v = 0;
        if (a.is_pointer)
            v = (long long)(uintptr_t) * static_cast<const void *const *>(buf);
        else if (size == 4)
            v = *static_cast<const int32_t *>(buf);
        else
            v = *static_cast<const int64_t *>(buf);
        logf(a.is_pointer ? "%s %s=%#llx" : "%s %s=%lld", what, a.name, v);
        return MP_LT_STATUS_SUCCESS;
    }
    logf("%s unknown attribute %d", what, attr);
    return MP_LT_STATUS_INVALID_VALUE;
}

}  // namespace

/* ---- test controls ---- */
FAKE_API const char *fake_lt_log(void) { return log_text.c_str(); }
FAKE_API void fake_lt_reset(void) { log_text.clear(); fail_fn.clear(); no_algo = 0; }
FAKE_API int fake_lt_live(void) { return live; }
FAKE_API void fake_lt_fail(const char *fn, int status) { fail_fn = fn; fail_status = status; }
FAKE_API void fake_lt_no_algo(int on) { no_algo = on; }

/* ---- cuBLASLt ---- */
FAKE_API mp_lt_status cublasLtCreate(mp_lt_handle *handle)
{
    const char *st = getenv("FAKE_LT_CREATE_STATUS");
    if (st && *st)
        return atoi(st);
    static int h;
    *handle = reinterpret_cast<mp_lt_handle>(&h);
    return MP_LT_STATUS_SUCCESS;
}

FAKE_API const char *cublasLtGetStatusName(mp_lt_status st)
{
    return st == MP_LT_STATUS_EXECUTION_FAILED ? "CUBLAS_STATUS_EXECUTION_FAILED" : "FAKE_NAME";
}

FAKE_API const char *cublasLtGetStatusString(mp_lt_status st) { return "fake description"; }

FAKE_API mp_lt_status cublasLtMatmulDescCreate(mp_lt_matmul_desc *d, mp_lt_compute_type c,
                                               mp_lt_data_type s)
{
    if (failing("cublasLtMatmulDescCreate"))
        return fail_status;
    logf("desc_create compute=%d scale=%d", c, s);
    return create(d, 1);
}

FAKE_API mp_lt_status cublasLtMatmulDescDestroy(mp_lt_matmul_desc d) { return destroy(d); }

FAKE_API mp_lt_status cublasLtMatmulDescSetAttribute(mp_lt_matmul_desc d, mp_lt_desc_attr a,
                                                     const void *buf, size_t size)
{
    return set_attr("cublasLtMatmulDescSetAttribute", "desc", desc_attrs, a, buf, size);
}

FAKE_API mp_lt_status cublasLtMatrixLayoutCreate(mp_lt_layout *l, mp_lt_data_type t,
                                                 uint64_t rows, uint64_t cols, int64_t ld)
{
    if (failing("cublasLtMatrixLayoutCreate"))
        return fail_status;
    logf("layout_create type=%d rows=%llu cols=%llu ld=%lld", t, (unsigned long long)rows,
         (unsigned long long)cols, (long long)ld);
    return create(l, 2);
}

FAKE_API mp_lt_status cublasLtMatrixLayoutDestroy(mp_lt_layout l) { return destroy(l); }

FAKE_API mp_lt_status cublasLtMatrixLayoutSetAttribute(mp_lt_layout l, mp_lt_layout_attr a,
                                                       const void *buf, size_t size)
{
    return set_attr("cublasLtMatrixLayoutSetAttribute", "layout", layout_attrs, a, buf, size);
}

FAKE_API mp_lt_status cublasLtMatmulPreferenceCreate(mp_lt_pref *p)
{
    if (failing("cublasLtMatmulPreferenceCreate"))
        return fail_status;
    logf("pref_create");
    return create(p, 3);
}

FAKE_API mp_lt_status cublasLtMatmulPreferenceDestroy(mp_lt_pref p) { return destroy(p); }

FAKE_API mp_lt_status cublasLtMatmulPreferenceSetAttribute(mp_lt_pref p, mp_lt_pref_attr a,
                                                           const void *buf, size_t size)
{
    return set_attr("cublasLtMatmulPreferenceSetAttribute", "pref", pref_attrs, a, buf, size);
}

FAKE_API mp_lt_status cublasLtMatmulAlgoGetHeuristic(mp_lt_handle h, mp_lt_matmul_desc d,
                                                     mp_lt_layout a, mp_lt_layout b,
                                                     mp_lt_layout c, mp_lt_layout dd,
                                                     mp_lt_pref p, int requested,
                                                     mp_lt_heuristic *res, int *returned)
{
    if (failing("cublasLtMatmulAlgoGetHeuristic"))
        return fail_status;
    logf("heuristic requested=%d c_is_d=%d", requested, c == dd);
    *returned = no_algo ? 0 : 1;
    memset(res, 0, sizeof *res);
    res->algo.data[0] = (uint64_t)++algos_handed;
    res->state = MP_LT_STATUS_SUCCESS;
    return MP_LT_STATUS_SUCCESS;
}

#ifndef FAKE_WITHOUT_MATMUL   /* the variant that tests a library missing a function */
FAKE_API mp_lt_status cublasLtMatmul(mp_lt_handle h, mp_lt_matmul_desc d, const void *alpha,
                                     const void *a, mp_lt_layout ad, const void *b,
                                     mp_lt_layout bd, const void *beta, const void *c,
                                     mp_lt_layout cd, void *dp, mp_lt_layout dd,
                                     const mp_lt_algo *algo, void *ws, size_t ws_bytes,
                                     mp_lt_stream stream)
{
    if (failing("cublasLtMatmul"))
        return fail_status;
    logf("matmul alpha=%g beta=%g x=%p y=%p c=%p c_is_d=%d algo=%llu ws=%p ws_bytes=%zu "
         "stream=%p live=%d", *static_cast<const float *>(alpha),
         *static_cast<const float *>(beta), a, b, c, c == dp && cd == dd,
         (unsigned long long)algo->data[0], ws, ws_bytes, (void *)stream, live);
    return MP_LT_STATUS_SUCCESS;
}
#endif
