/* cast_avx2.c - avx2 conversion kernels (to be vectorised); until then the table keeps the
 * scalar entries it was initialised with. */
#include "dispatch.h"

void mp_cpu_fill_avx2(mp_cpu_kernels *k)
{
    (void)k;
}
