/* dtypes.h - the one table of dtype names: mpamp's name ("float32"), torch's scalar-type
 * name ("Float", as its messages print), torch's storage name and the safetensors code, and
 * the strings autocast and .to() accept for the floating dtypes. The bindings, the ops'
 * messages and Python (through _C._dtype_table()) read it; nothing else spells a dtype. */
#ifndef MP_DTYPES_H
#define MP_DTYPES_H

#include "../shared/mp_defs.h"

typedef struct {
    const char *name;             /* mpamp.<name>, the dtype's repr and pickle name */
    const char *torch_name;       /* torch's ScalarType name: "Float", "Half", ... */
    const char *storage;          /* torch's typed storage class: "FloatStorage", ... */
    const char *safetensors;      /* "F32", "F16", "BF16", "I64", "BOOL", "U8" */
    const char *const *spellings; /* NULL-terminated strings accepted as this dtype */
} mp_dtype_row;

/* The row of dt (NULL outside 0..MP_DTYPE_COUNT-1). */
const mp_dtype_row *mp_dtype_info(int dt);
/* mpamp's name of dt, or "unknown" */
const char *mp_dtype_name(int dt);
/* torch's scalar-type name of dt ("Float"), or "Unknown" */
const char *mp_dtype_torch_name(int dt);
/* The dtype a string spells ('fp16', 'half', 'bfloat16', ...), or -1. */
int mp_dtype_from_string(const char *s);
/* The accepted strings, quoted and comma-separated ("'fp32', 'float32', ..."), for messages. */
const char *mp_dtype_spellings_text(void);

#endif
