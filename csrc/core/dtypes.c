/* dtypes.c - the rows of dtypes.h, indexed by mp_dtype. */
#include "dtypes.h"

#include <string.h>

static const char *const f32[] = {"fp32", "float32", NULL};
static const char *const f16[] = {"fp16", "float16", "half", NULL};
static const char *const bf16[] = {"bf16", "bfloat16", NULL};
static const char *const none[] = {NULL};

static const mp_dtype_row rows[MP_DTYPE_COUNT] = {
    [MP_DTYPE_FLOAT32] = {"float32", "Float", "FloatStorage", "F32", f32},
    [MP_DTYPE_FLOAT16] = {"float16", "Half", "HalfStorage", "F16", f16},
    [MP_DTYPE_BFLOAT16] = {"bfloat16", "BFloat16", "BFloat16Storage", "BF16", bf16},
    [MP_DTYPE_INT64] = {"int64", "Long", "LongStorage", "I64", none},
    [MP_DTYPE_BOOL] = {"bool", "Bool", "BoolStorage", "BOOL", none},
    [MP_DTYPE_UINT8] = {"uint8", "Byte", "ByteStorage", "U8", none},
};

const mp_dtype_row *mp_dtype_info(int dt)
{
    return dt >= 0 && dt < MP_DTYPE_COUNT ? &rows[dt] : NULL;
}

const char *mp_dtype_name(int dt)
{
    return dt >= 0 && dt < MP_DTYPE_COUNT ? rows[dt].name : "unknown";
}

const char *mp_dtype_torch_name(int dt)
{
    return dt >= 0 && dt < MP_DTYPE_COUNT ? rows[dt].torch_name : "Unknown";
}

int mp_dtype_from_string(const char *s)
{
    for (int dt = 0; dt < MP_DTYPE_COUNT; dt++)
        for (const char *const *p = rows[dt].spellings; *p; p++)
            if (strcmp(s, *p) == 0)
                return dt;
    return -1;
}

const char *mp_dtype_spellings_text(void)
{
    static char text[160];
    static int built;
    if (!built) {           /* built once, under the GIL or a single import */
        size_t n = 0;
        for (int dt = 0; dt < MP_DTYPE_COUNT; dt++)
            for (const char *const *p = rows[dt].spellings; *p; p++) {
                size_t len = strlen(*p);
                if (n + len + 5 >= sizeof text)
                    break;
                if (n)
                    text[n++] = ',', text[n++] = ' ';
                text[n++] = '\'';
                memcpy(text + n, *p, len);
                n += len;
                text[n++] = '\'';
            }
        text[n] = '\0';
        built = 1;
    }
    return text;
}
