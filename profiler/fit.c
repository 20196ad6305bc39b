/* Constrained least-squares fit of duration = alpha + beta * bytes (see usbyte/fit.h). */
#include "usbyte/fit.h"
#include "usbyte/median.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int valid_sample(const ub_fit_sample *s, ub_fit_weighting w)
{
    if (!isfinite(s->bytes) || !isfinite(s->seconds) || s->bytes < 0 || s->seconds < 0)
        return 0;
    return w != UB_FIT_RELATIVE || s->seconds > 0;
}

static double weight_of(const ub_fit_sample *s, ub_fit_weighting w)
{
    return w == UB_FIT_RELATIVE ? 1.0 / (s->seconds * s->seconds) : 1.0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Weighted squared error of a candidate line over the valid samples. */
static double weighted_sse(const ub_fit_sample *s, size_t n, ub_fit_weighting w, double alpha, double beta)
{
    double sse = 0;
    for (size_t i = 0; i < n; i++) {
        if (!valid_sample(&s[i], w))
            continue;
        double r = s[i].seconds - alpha - beta * s[i].bytes;
        sse += weight_of(&s[i], w) * r * r;
    }
    return sse;
}

static size_t count_distinct(const ub_fit_sample *s, size_t n, ub_fit_weighting w, size_t valid, int *oom)
{
    double *x = malloc(valid * sizeof *x);
    if (!x) {
        *oom = 1;
        return 0;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (valid_sample(&s[i], w))
            x[k++] = s[i].bytes;
    qsort(x, k, sizeof *x, cmp_double);
    size_t distinct = 0;
    for (size_t i = 0; i < k; i++)
        if (i == 0 || x[i] != x[i - 1])
            distinct++;
    free(x);
    return distinct;
}

/* Solves the problem on the faces alpha = 0 and beta = 0 and keeps the better feasible one. */
static void constrained_fit(const ub_fit_sample *s, size_t n, ub_fit_weighting w, double mean_y, ub_fit_result *out)
{
    double sxy = 0, sxx = 0;
    for (size_t i = 0; i < n; i++) {
        if (!valid_sample(&s[i], w))
            continue;
        double wi = weight_of(&s[i], w);
        sxy += wi * s[i].bytes * s[i].seconds;
        sxx += wi * s[i].bytes * s[i].bytes;
    }
    double beta_origin = sxx > 0 ? sxy / sxx : 0;
    if (beta_origin < 0)
        beta_origin = 0;
    double alpha_flat = mean_y > 0 ? mean_y : 0;
    double sse_origin = weighted_sse(s, n, w, 0, beta_origin);
    double sse_flat = weighted_sse(s, n, w, alpha_flat, 0);
    if (sse_origin <= sse_flat) {
        out->alpha = 0;
        out->beta = beta_origin;
        out->flags |= UB_FIT_ALPHA_CLAMPED | (beta_origin == 0 ? UB_FIT_BETA_CLAMPED : 0);
    } else {
        out->alpha = alpha_flat;
        out->beta = 0;
        out->flags |= UB_FIT_BETA_CLAMPED | (alpha_flat == 0 ? UB_FIT_ALPHA_CLAMPED : 0);
    }
}

static void residuals(const ub_fit_sample *s, size_t n, ub_fit_weighting w, ub_fit_result *out)
{
    double sum_r2 = 0, sum_y = 0, max_abs = 0;
    for (size_t i = 0; i < n; i++) {
        if (!valid_sample(&s[i], w))
            continue;
        double r = s[i].seconds - out->alpha - out->beta * s[i].bytes;
        sum_r2 += r * r;
        sum_y += s[i].seconds;
        if (fabs(r) > max_abs)
            max_abs = fabs(r);
    }
    double k = (double)out->samples;
    out->rms = sqrt(sum_r2 / k);
    double mean = sum_y / k;
    out->rel_rms = mean > 0 ? out->rms / mean : 0;
    out->max_abs = max_abs;
}

int ub_fit_linear(const ub_fit_sample *s, size_t n, ub_fit_weighting w, ub_fit_result *out)
{
    memset(out, 0, sizeof *out);
    double sw = 0, swx = 0, swy = 0;
    for (size_t i = 0; i < n; i++) {
        if (!valid_sample(&s[i], w)) {
            out->ignored++;
            continue;
        }
        double wi = weight_of(&s[i], w);
        out->samples++;
        sw += wi;
        swx += wi * s[i].bytes;
        swy += wi * s[i].seconds;
    }
    if (out->samples == 0 || !(sw > 0) || !isfinite(sw)) {
        out->samples = 0;
        out->flags = UB_FIT_EMPTY;
        return -1;
    }
    int oom = 0;
    out->distinct_sizes = count_distinct(s, n, w, out->samples, &oom);
    if (oom) {
        out->samples = 0;
        out->flags = UB_FIT_EMPTY;
        return -1;
    }
    double mx = swx / sw, my = swy / sw;

    if (out->distinct_sizes == 1) {
        out->flags |= UB_FIT_ONE_SIZE;
        if (mx > 0) {
            out->alpha = 0;
            out->beta = my / mx;
        } else {
            out->alpha = my;
            out->beta = 0;
        }
        residuals(s, n, w, out);
        return 0;
    }

    /* Centred sums: no cancellation between huge byte counts and tiny durations. */
    double sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; i++) {
        if (!valid_sample(&s[i], w))
            continue;
        double wi = weight_of(&s[i], w);
        double dx = s[i].bytes - mx, dy = s[i].seconds - my;
        sxx += wi * dx * dx;
        sxy += wi * dx * dy;
    }
    double beta = sxy / sxx;
    double alpha = my - beta * mx;
    if (alpha >= 0 && beta >= 0) {
        out->alpha = alpha;
        out->beta = beta;
    } else {
        constrained_fit(s, n, w, my, out);
    }
    residuals(s, n, w, out);
    return 0;
}

int ub_fit_to_ring(double alpha, double beta, int ranks, double *a0, double *b0)
{
    if (ranks < 2)
        return -1;
    double hops = 2.0 * (ranks - 1);
    *a0 = alpha / hops;
    *b0 = beta * ranks / hops;
    return 0;
}

int ub_ring_to_fit(double a0, double b0, int ranks, double *alpha, double *beta)
{
    if (ranks < 2)
        return -1;
    double hops = 2.0 * (ranks - 1);
    *alpha = hops * a0;
    *beta = hops / ranks * b0;
    return 0;
}

/* ---- the cost curve's knots (usbyte/fit.h, ub_fit_knots) ---- */

static int by_bytes(const void *a, const void *b)
{
    const ub_fit_sample *x = a, *y = b;
    if (x->bytes != y->bytes)
        return (x->bytes > y->bytes) - (x->bytes < y->bytes);
    return (x->seconds > y->seconds) - (x->seconds < y->seconds);
}

/* Pools the sizes (bytes rising, each its median time) into bins of sizes within `ratio` of the
 * bin's smallest; each bin is one knot at the means of its sizes and times, weighted by its
 * number of sizes.  Returns the number of bins. */
static int bin_sizes(const ub_fit_sample *size, size_t m, double ratio, ub_fit_knot *knot, double *weight)
{
    int k = 0;
    for (size_t i = 0; i < m;) {
        double lo = size[i].bytes, sb = 0, ss = 0;
        size_t j = i;
        while (j < m && (j == i || size[j].bytes <= lo * ratio)) {
            sb += size[j].bytes;
            ss += size[j].seconds;
            j++;
        }
        double cnt = (double)(j - i);
        knot[k] = (ub_fit_knot){sb / cnt, ss / cnt};
        weight[k++] = cnt;
        i = j;
    }
    return k;
}

/* Pool-adjacent-violators: the least-squares non-decreasing fit of the knots' seconds. */
static void make_monotone(ub_fit_knot *knot, double *weight, int k)
{
    /* Blocks of pooled knots: start index, weight, value. */
    int *start = malloc(sizeof(int) * (size_t)k);
    double *w = malloc(sizeof(double) * (size_t)k), *v = malloc(sizeof(double) * (size_t)k);
    if (!start || !w || !v) {
        /* without memory: the running maximum, monotone too */
        for (int i = 1; i < k; i++)
            if (knot[i].seconds < knot[i - 1].seconds)
                knot[i].seconds = knot[i - 1].seconds;
        free(start);
        free(w);
        free(v);
        return;
    }
    int nb = 0;
    for (int i = 0; i < k; i++) {
        start[nb] = i;
        w[nb] = weight[i];
        v[nb] = knot[i].seconds;
        nb++;
        while (nb > 1 && v[nb - 2] > v[nb - 1]) {
            double ww = w[nb - 2] + w[nb - 1];
            v[nb - 2] = (w[nb - 2] * v[nb - 2] + w[nb - 1] * v[nb - 1]) / ww;
            w[nb - 2] = ww;
            nb--;
        }
    }
    for (int b = 0; b < nb; b++) {
        int end = b + 1 < nb ? start[b + 1] : k;
        for (int i = start[b]; i < end; i++)
            knot[i].seconds = v[b];
    }
    free(start);
    free(w);
    free(v);
}

int ub_fit_knots(const ub_fit_sample *s, size_t n, int max_knots, ub_fit_knot *out, int *n_out)
{
    *n_out = 0;
    if (max_knots < 1)
        return -1;
    ub_fit_sample *size = malloc(sizeof *size * (n ? n : 1));
    ub_fit_knot *knot = malloc(sizeof *knot * (n ? n : 1));
    double *weight = malloc(sizeof *weight * (n ? n : 1));
    if (!size || !knot || !weight) {
        free(size);
        free(knot);
        free(weight);
        return -1;
    }
    size_t v = 0;
    for (size_t i = 0; i < n; i++)
        if (valid_sample(&s[i], UB_FIT_RELATIVE))
            size[v++] = s[i];
    qsort(size, v, sizeof *size, by_bytes);
    /* Each size once, at the median of its times (`weight` is free until the bins). */
    size_t m = 0;
    for (size_t i = 0; i < v;) {
        size_t j = i;
        while (j < v && size[j].bytes == size[i].bytes) {
            weight[j - i] = size[j].seconds;
            j++;
        }
        size[m++] = (ub_fit_sample){size[i].bytes, ub_median(weight, (int)(j - i))};
        i = j;
    }
    int k = 0;
    if (m > 0) {
        double ratio = UB_FIT_KNOT_RATIO;
        while ((k = bin_sizes(size, m, ratio, knot, weight)) > max_knots)
            ratio *= ratio;
        make_monotone(knot, weight, k);
        memcpy(out, knot, sizeof *knot * (size_t)k);
    }
    *n_out = k;
    free(size);
    free(knot);
    free(weight);
    return m > 0 ? 0 : -1;
}
