/* gemm.c - the GEMM driver of gemm.h, BLIS/Goto style. The output is cut into pieces along
 * its larger side, two per thread, which the threads take from a shared counter; each piece
 * (packing its own panels) loops over NC
 * columns of B, KC-deep slices of B packed once into NR-wide panels, MC rows of A packed into
 * MR-high panels (an fp32 A that few columns reuse is read in place instead: see
 * unpacked_a_pays), and runs the micro-kernel (gemm_ukr.h) on every MR x NR tile. Results are
 * accumulated in fp32: in C itself when C is fp32 and nothing else is to be done, otherwise in
 * a buffer of one 256-column group of tiles (one KC slice) or an fp32 scratch (several), from
 * which the epilogue - alpha, beta * C, bias, activation, rounding to C's dtype - writes C
 * once, along its rows. */
#include "gemm.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "../shared/mp_half.h"
#include "../shared/mp_math.h"
#include "copy_bytes.h"
#include "gemm_epilogue.h"
#include "gemm_pack.h"
#include "parallel.h"

#define GEMM_STACK_BYTES (40 * 1024)     /* small products pack on the stack: no malloc */
#define GEMM_THREAD_MACS (1 << 21)       /* fewer multiply-adds than this: one thread */
#define GEMM_MAX_TILE 1024               /* MR * NR of the largest micro-kernel (AMX 32x32) */
#define GEMM_GROUP_COLS 256              /* a multiple of every NR: see run_piece */
#define GEMM_MAX_PIECES 64
#ifndef GEMM_PIECES_PER_THREAD
#define GEMM_PIECES_PER_THREAD 2         /* more pieces than threads: a busy core takes fewer */
#endif
#define GEMM_PIECE_MACS (1 << 25)        /* smaller pieces than this: one per thread */

#define MIN(x, y) ((x) < (y) ? (x) : (y))
#define ROUND_UP(x, r) (((x) + (r) - 1) / (r) * (r))

/* The block size for an extent cut into blocks of at most max: equal blocks rounded up to a
 * multiple of align (never above max when max is a multiple of align), so 4096 columns with
 * NC 4080 are two blocks of 2048, not 4080 + a 16-column sliver that repacks all of A. */
static int64_t balanced(int64_t extent, int64_t max, int64_t align)
{
    if (extent <= max)
        return extent;
    int64_t blocks = (extent + max - 1) / max;
    int64_t b = ROUND_UP((extent + blocks - 1) / blocks, align);
    return b < max ? b : max;
}

typedef enum { TARGET_C, TARGET_SCRATCH, TARGET_GROUP } target_kind;

/* Packing buffers outlive a call: a training step runs the same products every step, and a
 * fresh multi-MiB block from malloc is a fresh mmap, page-faulted and zeroed each time. They
 * come from the allocator the core installs (its caching allocator, core/alloc.c, which keeps
 * a freed block for the next product and releases every cache before it gives up); programs
 * that link the GEMM alone get aligned_alloc/free. */
static void *system_alloc(size_t nbytes)
{
    return aligned_alloc(64, (nbytes + 63) & ~(size_t)63);
}

static void system_free(void *p, size_t nbytes)
{
    (void)nbytes;
    free(p);
}

static void *(*buffer_alloc)(size_t) = system_alloc;
static void (*buffer_free)(void *, size_t) = system_free;

void mp_gemm_set_allocator(void *(*alloc)(size_t nbytes), void (*release)(void *p, size_t nbytes))
{
    buffer_alloc = alloc ? alloc : system_alloc;
    buffer_free = alloc && release ? release : system_free;
}

static void *take_buffer(size_t bytes, size_t *got)
{
    *got = bytes;
    return buffer_alloc(bytes);
}

static void give_buffer(void *p, size_t size)
{
    buffer_free(p, size);
}

typedef struct {
    const mp_gemm_args *g;
    const mp_gemm_ukr *u;
    const mp_cpu_kernels *cvt;   /* the level's casts: packing and the epilogue's rounding */
    mp_pack_src sa, sb;
    const float *bias;       /* n values with bias_scale applied; NULL: none */
    int direct;              /* C is fp32 and the product is all there is to do */
    int unpacked_a;          /* the tiles read A where it lies (u->kernel_sa): no A panels */
    int split_rows;
    /* The operand every piece needs whole - A when pieces are column ranges, B when they are
     * row ranges - packed once into `shared` by whichever threads get there first (see
     * pack_shared) instead of once per piece. NULL: each piece packs its own. */
    char *shared;
    int *ready;              /* per sub-block of a block: 0 free, 1 being packed, 2 packed */
    int64_t blocks_k;        /* KC slices of k */
    int64_t subs;            /* sub-blocks per block */
    size_t block_bytes;
    int64_t step;            /* rows (or columns) per piece */
    int64_t pieces, next;    /* piece count; the next piece to take (atomic) */
    mp_status status[GEMM_MAX_PIECES];
} plan;

mp_gemm_args mp_gemm_plain(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                           const void *a, int64_t lda, const void *b, int64_t ldb, void *c,
                           int64_t ldc)
{
    mp_gemm_args g;
    memset(&g, 0, sizeof g);
    g.trans_a = trans_a, g.trans_b = trans_b, g.m = m, g.n = n, g.k = k;
    g.a_dtype = g.b_dtype = g.c_dtype = g.bias_dtype = MP_DTYPE_FLOAT32;
    g.a = a, g.lda = lda, g.b = b, g.ldb = ldb, g.c = c, g.ldc = ldc;
    g.alpha = 1.0f, g.bias_scale = 1.0f, g.bias_stride = 1;
    return g;
}

/* The micro-kernel of one ISA level for these operand dtypes (cpu/dispatch.c chose them);
 * a level this process cannot run falls back to the scalar kernel's name. */
static const mp_gemm_ukr *pick(mp_isa isa, mp_dtype a, mp_dtype b)
{
    const mp_cpu_kernels *k = mp_cpu_for_isa(isa);
    if (!k)
        return &mp_gemm_ukr_f32_scalar;
    if (k->gemm_bf16 && a == MP_DTYPE_BFLOAT16 && b == MP_DTYPE_BFLOAT16)
        return k->gemm_bf16;
    return k->gemm_f32;
}

const char *mp_gemm_kernel_name(mp_isa isa, mp_dtype a_dtype, mp_dtype b_dtype)
{
    return pick(isa, a_dtype, b_dtype)->name;
}

static float load_f(const void *p, mp_dtype dt, int64_t i)
{
    switch (dt) {
    case MP_DTYPE_FLOAT16:
        return mp_half_to_f32(((const mp_half *)p)[i]);
    case MP_DTYPE_BFLOAT16:
        return mp_bf16_to_f32(((const mp_bf16 *)p)[i]);
    default:
        return ((const float *)p)[i];
    }
}

/* An edge tile computed into buf (ld nr) goes into t: copied, or added when accumulate. */
static void merge(const float *buf, int nr, float *t, int64_t ldt, int64_t rows, int64_t cols,
                  int accumulate)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t q = 0; q < cols; q++)
            t[r * ldt + q] = accumulate ? t[r * ldt + q] + buf[r * nr + q] : buf[r * nr + q];
}

/* Cache blocks of a piece of m x n (x k). KC depends on k alone, so every piece sums in the
 * same order (bit-identical results for any thread count); a multiple of 8 keeps the packing
 * on its 8-wide path. */
static void blocking(const mp_gemm_ukr *u, int64_t m, int64_t n, int64_t k, int64_t *kcb,
                     int64_t *mcb, int64_t *ncb)
{
    *kcb = balanced(k, u->kc, 8), *mcb = balanced(m, u->mc, u->mr);
    *ncb = balanced(n, u->nc, u->nr);
}

/* The panel format and packer of operand A (is_a) or B: one format for both, unless the
 * micro-kernel reads A in its own (AMX: rows of A, pairs of B). */
static mp_panel_format op_format(const mp_gemm_ukr *u, int is_a)
{
    return is_a && u->split_formats ? u->a_format : u->format;
}

static mp_gemm_pack_fn op_pack(const mp_gemm_ukr *u, int is_a)
{
    mp_gemm_pack_fn p = is_a && u->split_formats ? u->a_pack : u->pack;
    return p ? p : mp_gemm_pack;
}

/* Bytes of one panel of width w, kc deep, of operand A (is_a) or B. */
static size_t panel_bytes(const mp_gemm_ukr *u, int is_a, int w, int64_t kc)
{
    mp_panel_format f = op_format(u, is_a);
    return (size_t)mp_gemm_panel_elems(f, w, kc) * mp_gemm_panel_elem_size(f);
}

/* Bytes of the packed panels of `rows` rows (width w) for kc-deep slices. */
static size_t block_size(const mp_gemm_ukr *u, int is_a, int w, int64_t rows, int64_t kc)
{
    return ROUND_UP((size_t)(ROUND_UP(rows, w) / w) * panel_bytes(u, is_a, w, kc), 64);
}

#define GEMM_SUB_PANELS 4                /* panels per sub-block of a shared block */
#define GEMM_SHARED_MAX_BYTES ((size_t)64 << 20)

static void cpu_relax(int *spins)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (++*spins > 1000)                 /* the packer may have lost its core: let it run */
        sched_yield(), *spins = 0;
}

/* Rows [r0, r0 + rows) x k [k0, k0 + kc) of a shared operand into dst: the sub-blocks no one
 * has claimed yet are packed here, then every sub-block is waited for. Threads that meet at a
 * block split its packing between them; one alone packs it all; a thread only ever waits for
 * a sub-block another thread is packing at that moment, so there is no deadlock, and the
 * panels are the same whoever packs them. */
static void pack_shared(const plan *pl, int is_a, int w, int64_t r0, int64_t rows,
                        int64_t k0, int64_t kc, char *dst, int *ready)
{
    const mp_gemm_ukr *u = pl->u;
    const mp_pack_src *s = is_a ? &pl->sa : &pl->sb;
    mp_gemm_pack_fn pack = op_pack(u, is_a);
    mp_panel_format fmt = op_format(u, is_a);
    int64_t sub_rows = (int64_t)GEMM_SUB_PANELS * w, nsub = (rows + sub_rows - 1) / sub_rows;
    size_t panel = panel_bytes(u, is_a, w, kc);
    for (int64_t q = 0; q < nsub; q++) {
        int free_state = 0;
        if (__atomic_load_n(&ready[q], __ATOMIC_RELAXED) == 0 &&
            __atomic_compare_exchange_n(&ready[q], &free_state, 1, 0, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED)) {
            int64_t r = q * sub_rows;
            pack(s, fmt, w, r0 + r, MIN(sub_rows, rows - r), k0, kc,
                 dst + (size_t)(r / w) * panel);
            __atomic_store_n(&ready[q], 2, __ATOMIC_RELEASE);
        }
    }
    for (int64_t q = 0; q < nsub; q++) {
        int spins = 0;
        while (__atomic_load_n(&ready[q], __ATOMIC_ACQUIRE) != 2)
            cpu_relax(&spins);
    }
}

/* One MR x NR tile: from the packed A panel pa, or, for a plan that reads A in place, from
 * the `rows` rows of A at gi (k from pc). */
static inline void tile(const plan *pl, const char *pa, int64_t gi, int64_t rows, int64_t pc,
                        int64_t kc, const char *pb, float *c, int64_t ldc, int accumulate)
{
    const mp_gemm_ukr *u = pl->u;
    if (pl->unpacked_a)
        u->kernel_sa(kc, (const float *)(const void *)pl->sa.base + gi * pl->sa.rs +
                     pc * pl->sa.ks, pl->sa.rs, pl->sa.ks, (int)rows, pb, c, ldc, accumulate);
    else
        u->kernel(kc, pa, pb, c, ldc, accumulate);
}

/* Rows [i0, i1) x columns [j0, j1) of C. */
static mp_status run_piece(const plan *pl, int64_t i0, int64_t i1, int64_t j0, int64_t j1)
{
    const mp_gemm_args *g = pl->g;
    const mp_gemm_ukr *u = pl->u;
    int64_t m = i1 - i0, n = j1 - j0, k = g->k;
    int mr = u->mr, nr = u->nr;
    int64_t kcb, mcb, ncb;
    blocking(u, m, n, k, &kcb, &mcb, &ncb);
    int share_a = pl->shared && !pl->split_rows, share_b = pl->shared && pl->split_rows;
    size_t abytes = share_a || pl->unpacked_a ? 0 : block_size(u, 1, mr, mcb, kcb);
    size_t bbytes = share_b ? 0 : block_size(u, 0, nr, ncb, kcb);
    target_kind tk = TARGET_GROUP;
    if (pl->direct || (k > u->kc && g->c_dtype == MP_DTYPE_FLOAT32 && g->beta == 0.0f))
        tk = TARGET_C;                      /* fp32 C holds the partial sums itself */
    else if (k > u->kc)
        tk = TARGET_SCRATCH;
    /* Otherwise the accumulators live in groups of NR-column strips 256 columns wide, each
     * group's rows gw floats apart, and the epilogue writes C once a group is finished, along
     * its rows. Written a tile (or a narrow strip) at a time, consecutive stores went to rows
     * of C ldc apart - with a power-of-two ldc all in one cache set, so at most 8 misses were
     * in flight and lines were fetched twice: any epilogue cost ~2.5 ns per element of C.
     * TARGET_GROUP holds one group (one KC slice), TARGET_SCRATCH every group of the piece. */
    int64_t gw = MIN(GEMM_GROUP_COLS, ROUND_UP(ncb, nr));
    int64_t groups_per_nc = (ncb + gw - 1) / gw, mpad = ROUND_UP(m, mr);
    size_t sbytes = 0;
    if (tk == TARGET_SCRATCH)
        sbytes = (size_t)((n + ncb - 1) / ncb * groups_per_nc * mpad * gw) * sizeof(float);
    else if (tk == TARGET_GROUP)
        sbytes = (size_t)(ROUND_UP(mcb, mr) * gw) * sizeof(float);
    _Alignas(64) char stack[GEMM_STACK_BYTES];
    char *buf = stack;
    size_t bufsize = 0;
    if (abytes + bbytes + sbytes > sizeof stack) {
        buf = take_buffer(abytes + bbytes + ROUND_UP(sbytes, 64), &bufsize);
        if (!buf)
            return MP_ERR_NOMEM;
    }
    char *ap = buf, *bp = buf + abytes;
    float *scratch = (float *)(buf + abytes + bbytes);      /* or the one group */
    _Alignas(64) float edge[GEMM_MAX_TILE];
    float *cf = (float *)g->c;
    mp_gemm_pack_fn pack_a = op_pack(u, 1), pack_b = op_pack(u, 0);
    mp_panel_format fmt_a = op_format(u, 1), fmt_b = op_format(u, 0);
    int64_t blocks_m = (m + mcb - 1) / mcb;
    for (int64_t jc = 0; jc < n; jc += ncb) {
        int64_t nc = MIN(ncb, n - jc);
        for (int64_t pc = 0; pc < k; pc += kcb) {
            int64_t kc = MIN(kcb, k - pc);
            int last = pc + kc == k;
            int64_t as = (int64_t)panel_bytes(u, 1, mr, kc);
            int64_t bs = (int64_t)panel_bytes(u, 0, nr, kc);
            if (share_b) {                  /* block (jc, pc) of the whole B */
                int64_t b = jc / ncb * pl->blocks_k + pc / kcb;
                bp = pl->shared + (size_t)b * pl->block_bytes;
                pack_shared(pl, 0, nr, j0 + jc, nc, pc, kc, bp, pl->ready + b * pl->subs);
            } else {
                pack_b(&pl->sb, fmt_b, nr, j0 + jc, nc, pc, kc, bp);
            }
            for (int64_t ic = 0; ic < m; ic += mcb) {
                int64_t mc = MIN(mcb, m - ic);
                if (share_a) {              /* block (pc, ic) of the whole A */
                    int64_t b = pc / kcb * blocks_m + ic / mcb;
                    ap = pl->shared + (size_t)b * pl->block_bytes;
                    pack_shared(pl, 1, mr, i0 + ic, mc, pc, kc, ap, pl->ready + b * pl->subs);
                } else if (!pl->unpacked_a) {
                    pack_a(&pl->sa, fmt_a, mr, i0 + ic, mc, pc, kc, ap);
                }
                for (int64_t jr = 0; jr < nc; jr += nr) {
                    int64_t cols = MIN(nr, nc - jr), gj = j0 + jc + jr, g0 = jr / gw * gw;
                    float *group = scratch;
                    if (tk == TARGET_SCRATCH)
                        group += ((jc / ncb) * groups_per_nc + jr / gw) * mpad * gw + ic * gw;
                    for (int64_t ir = 0; ir < mc; ir += mr) {
                        int64_t rows = MIN(mr, mc - ir), gi = i0 + ic + ir;
                        const char *pa = pl->unpacked_a ? NULL : ap + (ir / mr) * as;
                        const char *pb = bp + (jr / nr) * bs;
                        if (tk != TARGET_C) {     /* a group has room for whole tiles */
                            tile(pl, pa, gi, rows, pc, kc, pb, group + ir * gw + (jr - g0), gw,
                                 pc > 0);
                            continue;
                        }
                        float *t = cf + gi * g->ldc + gj;
                        int acc = pc > 0 || (pl->direct && g->beta != 0.0f);
                        if (rows == mr && cols == nr) {
                            tile(pl, pa, gi, rows, pc, kc, pb, t, g->ldc, acc);
                        } else {
                            tile(pl, pa, gi, rows, pc, kc, pb, edge, nr, 0);
                            merge(edge, nr, t, g->ldc, rows, cols, acc);
                        }
                        if (last && !pl->direct)      /* alpha, bias, activation in place */
                            mp_gemm_epilogue(g, pl->bias, pl->cvt, t, g->ldc, gi, gj, rows, cols);
                    }
                    if (last && tk != TARGET_C && (jr + nr >= nc || (jr + nr) % gw == 0))
                        mp_gemm_epilogue(g, pl->bias, pl->cvt, group, gw, i0 + ic, j0 + jc + g0, mc,
                                     MIN(gw, nc - g0));
                }
            }
        }
    }
    if (buf != stack)
        give_buffer(buf, bufsize);
    return MP_OK;
}

/* A worker: takes pieces from the shared counter until none is left, so a thread slowed
 * down by other work on its core does fewer of them. Which thread computes a piece does not
 * change its values. */
static void run_pieces(void *ctx, int64_t begin, int64_t end)
{
    plan *pl = ctx;
    (void)begin, (void)end;
    int64_t extent = pl->split_rows ? pl->g->m : pl->g->n;
    for (;;) {
        int64_t p = __atomic_fetch_add(&pl->next, 1, __ATOMIC_RELAXED);
        if (p >= pl->pieces)
            break;
        int64_t lo = p * pl->step, hi = MIN(extent, lo + pl->step);
        if (lo >= hi)
            pl->status[p] = MP_OK;
        else if (pl->split_rows)
            pl->status[p] = run_piece(pl, lo, hi, 0, pl->g->n);
        else
            pl->status[p] = run_piece(pl, 0, pl->g->m, lo, hi);
    }
}

static int float_dtype(mp_dtype dt)
{
    return dt == MP_DTYPE_FLOAT32 || dt == MP_DTYPE_FLOAT16 || dt == MP_DTYPE_BFLOAT16;
}

/* Sets up the shared packing of the operand every piece needs whole (see plan): A when the
 * pieces are column ranges, B when they are row ranges. Without it each of the 2 x threads
 * pieces packed all of it: 4 times on 2 threads, and the shared packing made a 2048^3 product
 * 3.6-7% faster and the MLP training step ~6% (paired runs). Stays off when the packed
 * operand would pass GEMM_SHARED_MAX_BYTES or memory is short. */
static void share_operand(plan *pl, size_t *size)
{
    const mp_gemm_args *g = pl->g;
    const mp_gemm_ukr *u = pl->u;
    int64_t kcb, mcb, ncb;
    blocking(u, g->m, g->n, g->k, &kcb, &mcb, &ncb);
    int w = pl->split_rows ? u->nr : u->mr;
    int64_t rows = pl->split_rows ? ncb : mcb, extent = pl->split_rows ? g->n : g->m;
    int64_t blocks_k = (g->k + kcb - 1) / kcb, blocks = blocks_k * ((extent + rows - 1) / rows);
    int64_t sub_rows = (int64_t)GEMM_SUB_PANELS * w;
    size_t block = block_size(u, !pl->split_rows, w, rows, kcb);
    if ((double)block * (double)blocks > (double)GEMM_SHARED_MAX_BYTES)
        return;
    pl->subs = (rows + sub_rows - 1) / sub_rows;
    pl->ready = calloc((size_t)(blocks * pl->subs), sizeof(int));
    pl->shared = pl->ready ? take_buffer(block * (size_t)blocks, size) : NULL;
    if (!pl->shared) {
        free(pl->ready);
        pl->ready = NULL;
        return;
    }
    pl->blocks_k = blocks_k, pl->block_bytes = block;
}

/* Whether the full tiles read A unpacked (u->kernel_sa): an fp32 A that at most
 * GEMM_UNPACKED_A_COLS columns of C reuse. Packing it cost up to a fifth of such products
 * (N = 64 on Zen 3: 64-75 GFLOP/s packed, 85-95 unpacked, one core); with more columns the
 * packed panels win again (N = 1024: 93 vs 91). A transposed A (contiguous along the rows) is
 * read a few floats per k row, one row lda apart: with lda past GEMM_UNPACKED_A_LDA floats
 * those rows fall on different pages and the unpacked reads were slower (1024 x 64 x 64:
 * 57 vs 69 GFLOP/s). */
#define GEMM_UNPACKED_A_COLS 512
#define GEMM_UNPACKED_A_LDA 512
static int unpacked_a_pays(const plan *pl)
{
    const mp_gemm_args *g = pl->g;
    if (!pl->u->kernel_sa || g->a_dtype != MP_DTYPE_FLOAT32 || g->n > GEMM_UNPACKED_A_COLS)
        return 0;
    return !g->trans_a || g->lda <= GEMM_UNPACKED_A_LDA;
}

mp_status mp_gemm_at(const mp_gemm_args *g, mp_isa isa, int threads)
{
    const mp_cpu_kernels *cvt = mp_cpu_for_isa(isa);
    if (!cvt)
        return MP_ERR_VALUE;
    if (!float_dtype(g->a_dtype) || !float_dtype(g->b_dtype) || !float_dtype(g->c_dtype) ||
        (g->bias && !float_dtype(g->bias_dtype)) ||
        (g->beta != 0.0f && g->c_dtype != MP_DTYPE_FLOAT32) || !float_dtype(g->round_dtype) ||
        (g->round_dtype != MP_DTYPE_FLOAT32 && (g->c_dtype != MP_DTYPE_FLOAT32 ||
                                                 g->beta != 0.0f)))
        return MP_ERR_TYPE;
    if (g->m <= 0 || g->n <= 0)
        return MP_OK;
    plan pl;
    memset(&pl, 0, sizeof pl);
    pl.g = g;
    pl.u = pick(isa, g->a_dtype, g->b_dtype);
    float *bias = NULL;
    if (g->bias) {
        bias = malloc(sizeof(float) * (size_t)g->n);
        if (!bias)
            return MP_ERR_NOMEM;
        for (int64_t j = 0; j < g->n; j++)
            bias[j] = g->bias_scale * load_f(g->bias, g->bias_dtype, j * g->bias_stride);
        pl.bias = bias;
    }
    pl.cvt = cvt;
    if (g->k <= 0 || g->alpha == 0.0f) {      /* C = act(beta * C + bias): A, B not read */
        mp_gemm_epilogue(g, pl.bias, pl.cvt, NULL, 0, 0, 0, g->m, g->n);
        free(bias);
        return MP_OK;
    }
    pl.direct = g->c_dtype == MP_DTYPE_FLOAT32 && g->alpha == 1.0f && !g->bias &&
                g->act == MP_GEMM_ACT_NONE && (g->beta == 0.0f || g->beta == 1.0f) &&
                g->round_dtype == MP_DTYPE_FLOAT32;
    /* op(A)(i, p) and op(B)(p, j), seen as (panel row, k) */
    pl.sa = (mp_pack_src){(const char *)g->a, g->a_dtype, g->trans_a ? 1 : g->lda,
                          g->trans_a ? g->lda : 1, cvt};
    pl.sb = (mp_pack_src){(const char *)g->b, g->b_dtype, g->trans_b ? g->ldb : 1,
                          g->trans_b ? 1 : g->ldb, cvt};
    pl.unpacked_a = unpacked_a_pays(&pl);
    int64_t nthreads = threads > 0 ? threads : mp_get_num_threads();
    if ((double)g->m * (double)g->n * (double)g->k < GEMM_THREAD_MACS)
        nthreads = 1;
    /* Pieces of rows repack all of B, pieces of columns all of A: cut the larger side. */
    int64_t mt = (g->m + pl.u->mr - 1) / pl.u->mr, nt = (g->n + pl.u->nr - 1) / pl.u->nr;
    pl.split_rows = g->m > g->n;
    int64_t along = pl.split_rows ? mt : nt, across = pl.split_rows ? nt : mt;
    if (along < nthreads && across > along)
        pl.split_rows = !pl.split_rows;            /* too few tiles that way */
    int64_t tiles = pl.split_rows ? mt : nt, unit = pl.split_rows ? pl.u->mr : pl.u->nr;
    /* A piece repacks the whole of the other operand: below GEMM_PIECE_MACS per piece, one
     * piece per thread (a 256 x 512 x 512 product: 6% faster MLP step than with two). */
    double macs = (double)g->m * (double)g->n * (double)g->k;
    int per = macs < (double)nthreads * GEMM_PIECES_PER_THREAD * GEMM_PIECE_MACS
                  ? 1 : GEMM_PIECES_PER_THREAD;
    int64_t pieces = nthreads > 1 ? nthreads * per : 1;
    if (pieces > GEMM_MAX_PIECES)
        pieces = GEMM_MAX_PIECES;
    if (pieces > tiles)
        pieces = tiles;
    pl.step = (tiles + pieces - 1) / pieces * unit;
    pl.pieces = pieces;
    size_t shared_size = 0;
    if (pieces > 1 && !(pl.unpacked_a && !pl.split_rows))   /* an unpacked A is not shared */
        share_operand(&pl, &shared_size);
    mp_parallel_for(MIN(nthreads, pieces), 1, run_pieces, &pl);
    if (pl.shared) {
        give_buffer(pl.shared, shared_size);
        free(pl.ready);
    }
    free(bias);
    for (int64_t p = 0; p < pieces; p++)
        if (pl.status[p] != MP_OK)
            return pl.status[p];
    return MP_OK;
}

mp_status mp_gemm(const mp_gemm_args *g)
{
    return mp_gemm_at(g, mp_cpu()->isa, 0);
}
