/* From agreed numbers to a docs/model.md profile (see usbyte/record.h).
 *
 * Rules, all on the agreed (identical) numbers:
 *  - ready: the agreed ready times; call 0 is the origin (docs/model.md: measured profiles put 0 at
 *    the first call's ready time); backward_end = the latest ready.
 *  - need segments: walk the calls that were waited on in order of their need time.  The consumer
 *    (the forward pass) reached that wait at `need` and got past it at max(need, done), done being
 *    the call's completion.  A wait that comes less than max(UB_SEGMENT_MIN_GAP,
 *    UB_SEGMENT_REL_GAP * iteration) after the previous one was passed belongs to the same forward
 *    segment (no compute between them: DDP's finalize waiting on each bucket in a row); a later one
 *    opens a new segment, and the time between is the previous segment's forward compute.  That
 *    time rule is the fallback: when CUPTI watched every rank, the structure decides instead: a
 *    wait opens a new segment iff compute (a kernel or host function) was enqueued since the
 *    consumer's previous wait on some rank (`split`); copies do not count (DDP copies each bucket
 *    back right after its wait).  Timing noise cannot split or join segments then.
 *  - completion semantics: with CUDA's stream rule (an event recorded after call k completes once
 *    calls 0..k have, USBYTE_COMPLETION=stream) a wait on call j is a wait on every call before
 *    it, so a call's need is the earliest wait on it or on any later call (`need` and `split`
 *    are taken from that wait); with per-call completion each call keeps its own;
 *  - calls nobody waited on before the next iteration belong to the last segment (their buffers
 *    are reused by the next iteration, so they are needed by then at the latest);
 *  - gap = first segment's wait - backward_end (>= 0); forward[last] runs to the iteration's end;
 *  - net: fitted on (bytes, cost sample) per call (ub_record_summarize: from where the model
 *    starts the call to its end, the median over iterations), the least over ranks: the rank that
 *    arrives last at a collective measures the link alone, the others include their wait for it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "usbyte/record.h"

typedef struct { double need; int call; } waited;

static int by_need(const void *a, const void *b)
{
    const waited *x = a, *y = b;
    if (x->need != y->need)
        return x->need < y->need ? -1 : 1;
    return x->call - y->call;
}

static double max2(double a, double b) { return a > b ? a : b; }

void ub_need_transitive(int n, const double *own_need, int *from)
{
    int best = -1;
    for (int k = n - 1; k >= 0; k--) {
        if (own_need[k] >= 0 && (best < 0 || own_need[k] <= own_need[best]))
            best = k;
        from[k] = best;
    }
}

/* The calls' own numbers (bytes, ready, type, barrier, measured time) and the fit's samples;
 * returns backward_end, *latest_done the latest completion. */
static double fill_calls(const ub_agreed *a, const uint64_t *bytes, const int *dtype, const int *op,
                         ub_profile *out, double *latest_done)
{
    double backward_end = 0;
    *latest_done = 0;
    for (int c = 0; c < a->n_calls; c++) {
        ub_call *k = &out->calls[c];
        k->bytes = bytes[c];
        k->ready = c == 0 ? 0.0 : max2(0.0, a->calls[c].ready);
        k->dtype = (ub_dtype)dtype[c];
        k->op = (ub_op)op[c];
        k->merge = !a->calls[c].barrier;
        k->measured_comm = a->calls[c].comm_mean;
        backward_end = max2(backward_end, k->ready);
        *latest_done = max2(*latest_done, a->calls[c].done);
    }
    return backward_end;
}

ub_fit_sample *ub_derive_fit_samples(const ub_agreed *a, const uint64_t *bytes, const ub_fit_sample *extra,
                                     int n_extra, size_t *n)
{
    size_t calls = a->n_calls > 0 ? (size_t)a->n_calls : 0, m = calls + (size_t)(n_extra > 0 ? n_extra : 0);
    ub_fit_sample *s = calloc(m ? m : 1, sizeof *s);
    if (!s)
        return NULL;
    for (size_t c = 0; c < calls; c++)
        s[c] = (ub_fit_sample){(double)bytes[c], a->calls[c].comm_cost};
    for (size_t i = calls; i < m; i++) /* calibration probes: sizes the calls never had */
        s[i] = extra[i - calls];
    *n = m;
    return s;
}

/* The need segments (the header's rules): each call's segment in out->calls[].need, each
 * segment's first wait in start[] and the time the consumer got past it in pass[]; returns how
 * many segments.  own/from: each call's own need and the call whose wait releases it (-1: none);
 * order: room for n_calls. */
static int need_segments(const ub_agreed *a, const double *own, const int *from, double iteration,
                         double backward_end, waited *order, double *start, double *pass, ub_profile *out)
{
    int n = a->n_calls;
    double join = max2(UB_SEGMENT_MIN_GAP, UB_SEGMENT_REL_GAP * iteration);
    bool structural = a->flags.cupti_missing == 0 && a->flags.cupti_taken == 0;
    int n_waited = 0;
    for (int c = 0; c < n; c++)
        if (from[c] >= 0)
            order[n_waited++] = (waited){own[from[c]], c};
    qsort(order, (size_t)n_waited, sizeof *order, by_need);
    int segs = 0;
    for (int i = 0; i < n_waited; i++) {
        int c = order[i].call;
        double need = order[i].need, done = a->calls[c].done;
        /* The calls one wait released share its segment: only the first of them may open one. */
        bool same_wait = i > 0 && from[order[i - 1].call] == from[c];
        bool opens = !same_wait && (structural ? a->calls[from[c]].split : need - pass[segs > 0 ? segs - 1 : 0] > join);
        if (segs == 0 || opens) {
            start[segs] = need;
            pass[segs] = max2(need, done);
            segs++;
        } else {
            pass[segs - 1] = max2(pass[segs - 1], max2(need, done));
        }
        out->calls[c].need = segs - 1;
    }
    if (segs == 0) {
        /* Nobody waited: the model's consumer needs everything right after the backward pass. */
        start[0] = backward_end;
        pass[0] = backward_end;
        segs = 1;
    }
    for (int c = 0; c < n; c++)
        if (from[c] < 0) {
            out->calls[c].need = segs - 1;
            pass[segs - 1] = max2(pass[segs - 1], a->calls[c].done);
        }
    return segs;
}

int ub_derive_profile(const ub_agreed *a, const uint64_t *bytes, const int *dtype, const int *op,
                      bool stream_semantics, ub_profile *out, ub_fit_result *fit)
{
    return ub_derive_profile_with(a, bytes, dtype, op, stream_semantics, NULL, 0, out, fit);
}

int ub_derive_profile_with(const ub_agreed *a, const uint64_t *bytes, const int *dtype, const int *op,
                           bool stream_semantics, const ub_fit_sample *extra, int n_extra, ub_profile *out,
                           ub_fit_result *fit)
{
    size_t n_samples = 0;
    memset(out, 0, sizeof *out);
    int n = a->n_calls;
    if (n < 1)
        return -1;
    out->calls = calloc((size_t)n, sizeof *out->calls);
    waited *order = calloc((size_t)n, sizeof *order);
    double *start = calloc((size_t)n + 1, sizeof *start);
    double *pass = calloc((size_t)n + 1, sizeof *pass);
    ub_fit_sample *samples = ub_derive_fit_samples(a, bytes, extra, n_extra, &n_samples);
    double *own = calloc((size_t)n, sizeof *own);
    int *from = calloc((size_t)n, sizeof *from);
    int segs = 0;
    double backward_end = 0, latest_done = 0, iteration = 0;
    if (!out->calls || !order || !start || !pass || !samples || !own || !from)
        goto oom;
    for (int c = 0; c < n; c++) {
        own[c] = a->calls[c].need;
        from[c] = own[c] >= 0 ? c : -1;
    }
    if (stream_semantics)
        ub_need_transitive(n, own, from);
    out->n_calls = n;
    out->ranks = a->ranks;
    backward_end = fill_calls(a, bytes, dtype, op, out, &latest_done);
    iteration = a->iteration > 0 ? a->iteration : max2(backward_end, latest_done);
    segs = need_segments(a, own, from, iteration, backward_end, order, start, pass, out);

    out->forward = calloc((size_t)segs, sizeof *out->forward);
    if (!out->forward)
        goto oom;
    out->n_forward = segs;
    out->backward_end = backward_end;
    out->gap = max2(0.0, start[0] - backward_end);
    for (int s = 0; s + 1 < segs; s++)
        out->forward[s] = max2(0.0, start[s + 1] - pass[s]);
    out->forward[segs - 1] = max2(0.0, iteration - pass[segs - 1]);

    ub_fit_cost_model(samples, n_samples, out, fit);
    out->has_net = true;
    out->copy_beta = a->flags.copy_beta > 0 ? a->flags.copy_beta : 0.0;
    free(own);
    free(from);
    free(order);
    free(start);
    free(pass);
    free(samples);
    return 0;
oom:
    free(own);
    free(from);
    free(order);
    free(start);
    free(pass);
    free(samples);
    free(out->calls);
    memset(out, 0, sizeof *out);
    return -1;
}
