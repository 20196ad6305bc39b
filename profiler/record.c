/* The warm-up recorder and its per-rank summary (see usbyte/record.h). */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "usbyte/median.h"
#include "usbyte/record.h"

int ub_record_init(ub_record *r, int warmup, int capacity)
{
    memset(r, 0, sizeof *r);
    if (warmup < 1 || capacity < 1)
        return -1;
    r->warmup = warmup;
    r->capacity = capacity;
    r->end_ready = NAN;
    size_t cells = (size_t)warmup * (size_t)capacity;
    r->calls = malloc(cells * sizeof *r->calls);
    r->bytes = calloc((size_t)capacity, sizeof *r->bytes);
    r->dtype = calloc((size_t)capacity, sizeof *r->dtype);
    r->op = calloc((size_t)capacity, sizeof *r->op);
    if (!r->calls || !r->bytes || !r->dtype || !r->op) {
        ub_record_free(r);
        return -1;
    }
    for (size_t i = 0; i < cells; i++)
        r->calls[i] = (ub_rec_call){.ready = NAN, .start = NAN, .end = NAN, .need = NAN};
    return 0;
}

void ub_record_free(ub_record *r)
{
    free(r->calls);
    free(r->bytes);
    free(r->dtype);
    free(r->op);
    memset(r, 0, sizeof *r);
}

ub_rec_call *ub_record_at(ub_record *r, int iteration, int call)
{
    if (iteration < 0 || iteration >= r->warmup || call < 0 || call >= r->capacity)
        return NULL;
    return &r->calls[(size_t)iteration * (size_t)r->capacity + (size_t)call];
}

/* Iteration `it`'s length on the device's timeline: from its first ready to the next one's. */
static double iteration_length(const ub_record *r, int it)
{
    ub_record *rr = (ub_record *)r;  /* ub_record_at does not modify */
    double t0 = ub_record_at(rr, it, 0)->ready;
    double t1 = it + 1 < r->warmup ? ub_record_at(rr, it + 1, 0)->ready : r->end_ready;
    return isfinite(t0) && isfinite(t1) && t1 > t0 ? t1 - t0 : NAN;
}

void ub_record_iterations(const ub_record *r, double *out)
{
    for (int it = 0; it < r->warmup; it++)
        out[it] = iteration_length(r, it);
}

/* Running mean of the finite samples. */
typedef struct { double sum; int n; } mean_acc;
static void acc(mean_acc *m, double v) { if (isfinite(v)) { m->sum += v; m->n++; } }
static double mean_or(const mean_acc *m, double none) { return m->n ? m->sum / m->n : none; }

/* Each covered iteration whose next one's first ready is known says where it begins, on its own
 * ready times and its own wrap (profiler/phase.c says why not on the summary's means). */
static int vote_phase(const ub_record *r, ub_summary *out)
{
    int n = out->n_calls;
    ub_record *rr = (ub_record *)r;  /* ub_record_at does not modify */
    out->phase_votes = calloc((size_t)n, sizeof *out->phase_votes);
    double *ready = malloc((size_t)n * sizeof *ready);
    double *length = malloc((size_t)r->warmup * sizeof *length);
    if (!out->phase_votes || !ready || !length) {
        free(ready);
        free(length);
        return -1;
    }
    ub_record_iterations(r, length);
    for (int it = 0; it < r->warmup; it++) {
        if (!out->used[it])
            continue;
        double t0 = ub_record_at(rr, it, 0)->ready;
        for (int c = 0; c < n; c++)
            ready[c] = ub_record_at(rr, it, c)->ready - t0;
        out->phase_votes[ub_iteration_phase(ready, n, length[it])]++;
        out->phase_voters++;
    }
    free(ready);
    free(length);
    return 0;
}

/* Where the cost model starts each call of iteration it (docs/model.md, rule 1: a block starts at
 * the later of its ready time and the previous block's end): the later of its ready time and the
 * latest end of the iteration's earlier calls, never after its own start event.  Its cost sample
 * runs from there to its end, so that what the timeline loses between one collective's end and
 * the next one's start (the stream's turn, the wait on the producer's event, the peers' arrival)
 * is in the cost the model adds, as it is in the iteration the job runs.  out: room for n. */
static void model_starts(ub_record *r, int it, int n, double *out)
{
    double latest_end = -INFINITY;
    for (int c = 0; c < n; c++) {
        const ub_rec_call *k = ub_record_at(r, it, c);
        double from = isfinite(k->ready) ? k->ready : k->start;
        if (latest_end > from)
            from = latest_end;
        out[c] = from < k->start ? from : k->start;
        if (isfinite(k->end) && k->end > latest_end)
            latest_end = k->end;
    }
}

int ub_record_summarize(const ub_record *r, const bool *settled, ub_summary *out)
{
    memset(out, 0, sizeof *out);
    int n = r->n_calls;
    if (n < 1)
        return -1;
    out->calls = calloc((size_t)n, sizeof *out->calls);
    out->used = calloc((size_t)r->warmup, sizeof *out->used);
    if (!out->calls || !out->used) {
        ub_summary_free(out);
        return -1;
    }
    out->n_calls = n;
    ub_record *rr = (ub_record *)r;  /* ub_record_at does not modify */
    /* The iterations summarised: those whose timing has settled (every timing event recorded for
     * them has completed; the agreement is issued without waiting for the rest) and whose length
     * is known (its first ready and the next iteration's, both on the device's timeline: the
     * device may run iterations behind the host).  A value never measured (a wait before the
     * warm-up watched) is left out of its call's means alone. */
    mean_acc iter = {0, 0};
    for (int it = 0; it < r->warmup; it++) {
        double length = iteration_length(r, it);
        if ((!settled || settled[it]) && isfinite(length)) {
            out->used[it] = true;
            out->iterations_used++;
            acc(&iter, length);
        }
    }
    out->iteration = mean_or(&iter, 0.0);
    double *starts = malloc((size_t)r->warmup * (size_t)n * sizeof *starts);
    double *costs = malloc((size_t)r->warmup * sizeof *costs);
    if (!starts || !costs || vote_phase(r, out) < 0) {
        free(starts);
        free(costs);
        ub_summary_free(out);
        return -1;
    }
    for (int it = 0; it < r->warmup; it++)
        model_starts(rr, it, n, &starts[(size_t)it * (size_t)n]);
    for (int c = 0; c < n; c++) {
        mean_acc ready = {0, 0}, need = {0, 0}, done = {0, 0}, comm = {0, 0};
        int n_costs = 0;
        ub_summary_call *s = &out->calls[c];
        for (int it = 0; it < r->warmup; it++) {
            if (!out->used[it])
                continue;
            double t0 = ub_record_at(rr, it, 0)->ready;
            const ub_rec_call *k = ub_record_at(rr, it, c);
            acc(&ready, k->ready - t0);
            acc(&done, k->end - t0);
            if (k->needed)
                acc(&need, k->need - t0);
            double d = k->end - k->start;
            if (isfinite(d) && d >= 0)
                acc(&comm, d);
            double cost = k->end - starts[(size_t)it * (size_t)n + (size_t)c];
            if (isfinite(cost) && cost >= 0)
                costs[n_costs++] = cost;
            s->barrier |= k->barrier;
            s->split |= k->needed && k->split;
            s->fallback |= !k->upstream;
        }
        s->ready = c == 0 ? 0.0 : mean_or(&ready, 0.0);
        s->need = mean_or(&need, -1.0);
        if (s->need < -0.5)
            s->need = -1.0;
        else if (s->need < 0)
            s->need = 0.0;  /* a wait before the first ready, measured with jitter */
        s->done = mean_or(&done, -1.0);
        s->comm_mean = mean_or(&comm, 0.0);
        s->comm_cost = n_costs ? ub_median(costs, n_costs) : 0.0;
    }
    free(starts);
    free(costs);
    /* The last call has no "next call" to be merged with: a wait on it is the ordinary end. */
    out->calls[n - 1].barrier = false;
    return 0;
}

void ub_summary_free(ub_summary *s)
{
    free(s->calls);
    free(s->used);
    free(s->phase_votes);
    memset(s, 0, sizeof *s);
}
