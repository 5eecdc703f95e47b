/* pool.c - the per-plane pooling loops of pool.h. Sums are fp32 over a window (a window is
 * small), the adaptive bins too; NaN wins a max window (the last NaN's index, as torch). */
#include "pool.h"

#include <math.h>

/* First tap at or after `start` that lands inside [0, n) for steps of `dil`. */
static int64_t first_tap(int64_t start, int64_t dil)
{
    while (start < 0)
        start += dil;
    return start;
}

void mp_max_pool_plane(const mp_pool_desc *d, const float *x, float *y, int64_t *idx)
{
    for (int64_t oy = 0; oy < d->oh; oy++) {
        int64_t hs = oy * d->sh - d->ph, he = hs + (d->kh - 1) * d->dh + 1;
        he = he < d->h ? he : d->h;
        hs = first_tap(hs, d->dh);
        for (int64_t ox = 0; ox < d->ow; ox++) {
            int64_t ws = ox * d->sw - d->pw, we = ws + (d->kw - 1) * d->dw + 1;
            we = we < d->w ? we : d->w;
            ws = first_tap(ws, d->dw);
            float best = -INFINITY;
            int64_t bi = hs * d->w + ws;
            for (int64_t i = hs; i < he; i += d->dh)
                for (int64_t j = ws; j < we; j += d->dw) {
                    float v = x[i * d->w + j];
                    if (v > best || isnan(v)) {
                        best = v;
                        bi = i * d->w + j;
                    }
                }
            y[oy * d->ow + ox] = best;
            idx[oy * d->ow + ox] = bi;
        }
    }
}

void mp_max_pool_plane_backward(const mp_pool_desc *d, const float *gy, const int64_t *idx,
                                float *gx)
{
    int64_t n = d->oh * d->ow, plane = d->h * d->w;
    for (int64_t o = 0; o < n; o++)
        if (idx[o] >= 0 && idx[o] < plane)
            gx[idx[o]] += gy[o];
}

/* Window of output (oy, ox), clipped to the input, and its divisor. */
typedef struct {
    int64_t hs, he, ws, we;
    float div;
} window;

static window avg_window(const mp_pool_desc *d, int64_t oy, int64_t ox)
{
    window r;
    int64_t hs = oy * d->sh - d->ph, ws = ox * d->sw - d->pw;
    int64_t he = hs + d->kh, we = ws + d->kw;
    he = he < d->h + d->ph ? he : d->h + d->ph;
    we = we < d->w + d->pw ? we : d->w + d->pw;
    int64_t padded = (he - hs) * (we - ws);
    r.hs = hs > 0 ? hs : 0, r.ws = ws > 0 ? ws : 0;
    r.he = he < d->h ? he : d->h, r.we = we < d->w ? we : d->w;
    int64_t inside = (r.he - r.hs) * (r.we - r.ws);
    r.div = (float)(d->divisor ? d->divisor : d->count_include_pad ? padded : inside);
    return r;
}

void mp_avg_pool_plane(const mp_pool_desc *d, const float *x, float *y)
{
    for (int64_t oy = 0; oy < d->oh; oy++)
        for (int64_t ox = 0; ox < d->ow; ox++) {
            window r = avg_window(d, oy, ox);
            float s = 0.0f;
            for (int64_t i = r.hs; i < r.he; i++)
                for (int64_t j = r.ws; j < r.we; j++)
                    s += x[i * d->w + j];
            y[oy * d->ow + ox] = r.he > r.hs && r.we > r.ws ? s / r.div : 0.0f;
        }
}

void mp_avg_pool_plane_backward(const mp_pool_desc *d, const float *gy, float *gx)
{
    for (int64_t oy = 0; oy < d->oh; oy++)
        for (int64_t ox = 0; ox < d->ow; ox++) {
            window r = avg_window(d, oy, ox);
            float g = gy[oy * d->ow + ox] / r.div;
            for (int64_t i = r.hs; i < r.he; i++)
                for (int64_t j = r.ws; j < r.we; j++)
                    gx[i * d->w + j] += g;
        }
}

static int64_t bin_start(int64_t o, int64_t in, int64_t out) { return o * in / out; }
static int64_t bin_end(int64_t o, int64_t in, int64_t out)
{
    return ((o + 1) * in + out - 1) / out;
}

void mp_adaptive_avg_plane(const mp_pool_desc *d, const float *x, float *y)
{
    for (int64_t oy = 0; oy < d->oh; oy++) {
        int64_t hs = bin_start(oy, d->h, d->oh), he = bin_end(oy, d->h, d->oh);
        for (int64_t ox = 0; ox < d->ow; ox++) {
            int64_t ws = bin_start(ox, d->w, d->ow), we = bin_end(ox, d->w, d->ow);
            float s = 0.0f;
            for (int64_t i = hs; i < he; i++)
                for (int64_t j = ws; j < we; j++)
                    s += x[i * d->w + j];
            y[oy * d->ow + ox] = s / (float)((he - hs) * (we - ws));
        }
    }
}

void mp_adaptive_avg_plane_backward(const mp_pool_desc *d, const float *gy, float *gx)
{
    for (int64_t oy = 0; oy < d->oh; oy++) {
        int64_t hs = bin_start(oy, d->h, d->oh), he = bin_end(oy, d->h, d->oh);
        for (int64_t ox = 0; ox < d->ow; ox++) {
            int64_t ws = bin_start(ox, d->w, d->ow), we = bin_end(ox, d->w, d->ow);
            float g = gy[oy * d->ow + ox] / (float)((he - hs) * (we - ws));
            for (int64_t i = hs; i < he; i++)
                for (int64_t j = ws; j < we; j++)
                    gx[i * d->w + j] += g;
        }
    }
}
