/* Packing one rank's summary into the agreement vectors and unpacking the combined result (see
 * usbyte/record.h).  Only max and sum are used: both are exact on doubles in any order, so every
 * rank decodes bit-identical numbers whatever order NCCL reduces in. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "usbyte/record.h"

#define AGREE_FORMAT 1.0

void ub_agree_header_encode(int n_calls, uint32_t period, uint64_t seq_hash, double out[UB_AGREE_HEADER_LEN])
{
    double v[UB_AGREE_HEADER_FIELDS] = {
        (double)n_calls, (double)period,
        (double)((seq_hash >> 48) & 0xffff), (double)((seq_hash >> 32) & 0xffff),
        (double)((seq_hash >> 16) & 0xffff), (double)(seq_hash & 0xffff),
        AGREE_FORMAT,
    };
    for (int i = 0; i < UB_AGREE_HEADER_FIELDS; i++) {
        out[i] = v[i];
        out[UB_AGREE_HEADER_FIELDS + i] = -v[i];
    }
}

bool ub_agree_header_unanimous(const double combined[UB_AGREE_HEADER_LEN])
{
    for (int i = 0; i < UB_AGREE_HEADER_FIELDS; i++)
        if (!(combined[i] == -combined[UB_AGREE_HEADER_FIELDS + i]))
            return false;
    return true;
}

int ub_agree_max_len(int n_calls) { return UB_AGREE_PER_CALL * n_calls + UB_AGREE_GLOBALS; }
int ub_agree_sum_len(int n_calls) { return n_calls + 1; }

static double finite_or(double v, double none) { return isfinite(v) ? v : none; }

void ub_agree_encode(const ub_summary *s, const ub_agree_flags *f, double *max_vec, double *sum_vec)
{
    int n = s->n_calls;
    for (int c = 0; c < n; c++) {
        const ub_summary_call *k = &s->calls[c];
        double *m = &max_vec[UB_AGREE_PER_CALL * c];
        m[0] = finite_or(k->ready, 0.0);
        m[1] = finite_or(k->need, -1.0);
        m[2] = finite_or(k->done, -1.0);
        m[3] = -finite_or(k->comm_min, 0.0);
        m[4] = k->barrier ? 1.0 : 0.0;
        m[5] = k->fallback ? 1.0 : 0.0;
        m[6] = k->split ? 1.0 : 0.0;
        sum_vec[c] = finite_or(k->comm_mean, 0.0);
    }
    double *g = &max_vec[UB_AGREE_PER_CALL * n];
    g[0] = f->stream_ordered;
    g[1] = f->cupti_missing;
    g[2] = f->no_end_records;
    g[3] = f->other_calls;
    g[4] = finite_or(s->iteration, 0.0);
    sum_vec[n] = 1.0;
}

int ub_agree_decode(int n_calls, const double *max_vec, const double *sum_vec, ub_agreed *out)
{
    memset(out, 0, sizeof *out);
    if (n_calls < 1)
        return -1;
    out->calls = calloc((size_t)n_calls, sizeof *out->calls);
    if (!out->calls)
        return -1;
    out->n_calls = n_calls;
    out->ranks = (int)lround(sum_vec[n_calls]);
    if (out->ranks < 1)
        out->ranks = 1;
    for (int c = 0; c < n_calls; c++) {
        const double *m = &max_vec[UB_AGREE_PER_CALL * c];
        ub_summary_call *k = &out->calls[c];
        k->ready = m[0];
        k->need = m[1];
        k->done = m[2];
        k->comm_min = -m[3];
        k->barrier = m[4] > 0.5;
        k->fallback = m[5] > 0.5;
        k->split = m[6] > 0.5;
        k->comm_mean = sum_vec[c] / out->ranks;
    }
    const double *g = &max_vec[UB_AGREE_PER_CALL * n_calls];
    out->flags = (ub_agree_flags){g[0], g[1], g[2], g[3]};
    out->iteration = g[4];
    return 0;
}

void ub_agreed_free(ub_agreed *a)
{
    free(a->calls);
    memset(a, 0, sizeof *a);
}
