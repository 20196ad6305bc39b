/* The job as Chrome trace-event JSON (the format Perfetto and chrome://tracing open): a
 * recording of what was measured beside the model's prediction.
 *
 * Time: microseconds since the Unix epoch on each rank's CLOCK_REALTIME (the runtime maps its
 * device events onto that clock), the time base of the PyTorch profiler's traces, so that this
 * trace and a profiler's of the same run line up; ranks on different hosts are as far apart as
 * their clocks.  Reports without recordings (an older usbyte) give the model alone, from 0.
 *
 * One process per rank: per communicator its warm-up calls (each collective's measured start and
 * end, a mark where its data was ready) and iterations, and in schedule mode the plan's blocks of
 * each recorded steady iteration with the iterations, each beside the chosen plan's prediction
 * placed at the same iteration's start.  One more process, "model", holds per communicator the
 * agreed profile's backward pass and every policy's predicted link and forward tracks, once.
 * Each rank's tracks are drawn from its own report only (its plan with its own profile). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "usbyte/atomic_write.h"
#include "usbyte/model.h"

#define TRACKS_PER_COMM 100 /* tid = comm index * TRACKS_PER_COMM + track */
/* The prediction at each recorded iteration alternates between two tracks: a predicted iteration
 * longer than the measured one would otherwise overlap the next one's on one track. */
enum { T_WARMUP_CALLS, T_WARMUP_ITER, T_SCHED_BLOCKS, T_SCHED_ITER, T_PREDICTED, T_PREDICTED_ODD, T_MODEL_BACKWARD = 10 };

typedef struct trace {
    json_t *ev;
    double base;  /* seconds added to model times (0, or where the model is drawn) */
} trace;

static void meta(json_t *ev, int pid, int tid, const char *what, const char *name, int sort)
{
    json_array_append_new(ev, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "ph", "M", "name", what, "pid", pid, "tid", tid,
                                        "args", "name", name));
    const char *sort_what = strcmp(what, "process_name") ? "thread_sort_index" : "process_sort_index";
    json_array_append_new(ev, json_pack("{s:s, s:s, s:i, s:i, s:{s:i}}", "ph", "M", "name", sort_what, "pid", pid,
                                        "tid", tid, "args", "sort_index", sort));
}

/* Microseconds on the trace's clock.  Since the epoch a double resolves a quarter of a
 * microsecond: whole microseconds (as the PyTorch profiler writes) keep the order of adjacent
 * events, so that one ending where the next starts never appears to overlap it. */
static double us(double seconds)
{
    double v = seconds * 1e6;
    return fabs(v) > 1e12 ? rint(v) : v;
}

/* A complete event from start to end (seconds on the trace's clock). */
static void complete(json_t *ev, int pid, int tid, const char *cat, const char *name, double start, double end,
                     json_t *args)
{
    json_array_append_new(ev, json_pack("{s:s, s:s, s:s, s:i, s:i, s:f, s:f, s:o}", "ph", "X", "cat", cat, "name", name,
                                        "pid", pid, "tid", tid, "ts", us(start), "dur", us(end) - us(start), "args",
                                        args ? args : json_object()));
}

static void instant(json_t *ev, int pid, int tid, const char *cat, const char *name, double at, json_t *args)
{
    json_array_append_new(ev, json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:f, s:o}", "ph", "i", "s", "t", "cat", cat,
                                        "name", name, "pid", pid, "tid", tid, "ts", us(at), "args",
                                        args ? args : json_object()));
}

/* What a block carries: its bytes, calls and segments. */
static json_t *block_args(const ub_plan *p, uint32_t b, const char *policy)
{
    const ub_block *blk = &p->blocks[b];
    json_t *segs = json_array(), *calls = json_array();
    json_int_t bytes = 0;
    int last = -1;
    for (uint32_t k = 0; k < blk->n_segments; k++) {
        const ub_segment *s = &p->segments[blk->first_segment + k];
        json_array_append_new(segs, json_pack("[i, I, I]", s->call, (json_int_t)s->offset, (json_int_t)s->length));
        if (s->call != last)
            json_array_append_new(calls, json_integer(s->call));
        last = s->call;
        bytes += (json_int_t)s->length;
    }
    return json_pack("{s:s, s:i, s:I, s:o, s:o}", "policy", policy, "block", (int)b, "bytes", bytes, "calls", calls,
                     "segments", segs);
}

/* A policy's link and forward tracks of one modelled iteration, from `at` seconds. */
static void plan_tracks(json_t *ev, int pid, int base, int comm, const ub_profile *prof, const ub_plan *p, int track,
                        double at)
{
    char name[96];
    snprintf(name, sizeof name, "comm %d: %.31s link", comm, p->policy);
    meta(ev, pid, base + track, "thread_name", name, base + track);
    snprintf(name, sizeof name, "comm %d: %.31s forward", comm, p->policy);
    meta(ev, pid, base + track + 1, "thread_name", name, base + track + 1);
    for (uint32_t b = 0; b < p->n_blocks; b++) {
        snprintf(name, sizeof name, "%.31s block %u", p->policy, b);
        complete(ev, pid, base + track, "predicted", name, at + p->blocks[b].start, at + p->blocks[b].end,
                 block_args(p, b, p->policy));
    }
    double *done = calloc((size_t)prof->n_calls, sizeof(double)), *fs = calloc((size_t)prof->n_forward, sizeof(double));
    if (done && fs) {
        ub_evaluate_const(prof, p, done);
        sim_forward_starts(prof, done, fs);
        for (int s = 0; s < prof->n_forward; s++) {
            snprintf(name, sizeof name, "forward segment %d", s);
            complete(ev, pid, base + track + 1, "predicted", name, at + fs[s], at + fs[s] + prof->forward[s],
                     json_pack("{s:s, s:i}", "policy", p->policy, "segment", s));
        }
    }
    free(done);
    free(fs);
}

/* Where the model is drawn: the reference's first recorded iteration (its first call's ready,
 * the model's time 0), else 0. */
static double model_origin(const rp_comm *c)
{
    const rp_local *l = &c->local;
    if (isfinite(l->origin) && l->rec_iterations > 0 && l->n_ready > 0 && isfinite(l->rec[0]))
        return l->origin + l->rec[0];
    const rp_schedule *s = &c->schedule;
    if (isfinite(s->origin) && s->n_rec > 0)
        return s->origin + s->rec[0].start;
    return 0;
}

/* A rank's warm-up as recorded: each call's collective and its ready mark, and the iterations. */
static void warmup_tracks(json_t *ev, int pid, int base, const rp_comm *c)
{
    const rp_local *l = &c->local;
    if (!isfinite(l->origin) || !l->rec_iterations || !l->n_ready)
        return;
    char name[96];
    snprintf(name, sizeof name, "comm %d: warm-up calls (measured)", c->index);
    meta(ev, pid, base + T_WARMUP_CALLS, "thread_name", name, base + T_WARMUP_CALLS);
    snprintf(name, sizeof name, "comm %d: warm-up iterations (measured)", c->index);
    meta(ev, pid, base + T_WARMUP_ITER, "thread_name", name, base + T_WARMUP_ITER);
    int n = l->n_ready;
    bool sizes = c->have_profile && c->profile.n_calls == n;
    for (int it = 0; it < l->rec_iterations; it++) {
        const double *row = &l->rec[(size_t)it * (size_t)n * 3];
        double prev_end = -INFINITY;
        for (int k = 0; k < n; k++) {
            const double *x = &row[k * 3];
            json_t *args = json_pack("{s:i, s:i}", "iteration", it, "call", k);
            if (sizes)
                json_object_set_new(args, "bytes", json_integer((json_int_t)c->profile.calls[k].bytes));
            if (isfinite(x[0])) {
                snprintf(name, sizeof name, "call %d ready", k);
                instant(ev, pid, base + T_WARMUP_CALLS, "measured", name, l->origin + x[0], json_deep_copy(args));
            }
            /* Collectives on one stream do not overlap; a start read before the previous end (a
             * group's calls share their end event) is drawn from that end. */
            if (isfinite(x[1]) && isfinite(x[2]) && x[2] >= x[1]) {
                double s0 = fmax(x[1], prev_end);
                if (x[2] >= s0) {
                    snprintf(name, sizeof name, "call %d", k);
                    complete(ev, pid, base + T_WARMUP_CALLS, "measured", name, l->origin + s0, l->origin + x[2], args);
                    args = NULL;
                    prev_end = x[2];
                }
            }
            json_decref(args);
        }
        double t0 = row[0], t1 = it + 1 < l->rec_iterations ? l->rec[(size_t)(it + 1) * (size_t)n * 3] : NAN;
        if (isfinite(t0) && isfinite(t1) && t1 >= t0) {
            snprintf(name, sizeof name, "warm-up iteration %d", it);
            complete(ev, pid, base + T_WARMUP_ITER, "measured", name, l->origin + t0, l->origin + t1,
                     json_pack("{s:i}", "iteration", it));
        }
    }
}

/* Schedule mode as recorded: each timed iteration's blocks, the iterations, and the chosen plan's
 * prediction placed at each of those iterations' start. */
static void schedule_tracks(json_t *ev, int pid, int base, const rp_comm *c)
{
    const rp_schedule *s = &c->schedule;
    if (!isfinite(s->origin) || !s->n_rec || !c->have_plan)
        return;
    const ub_plan *p = s->has_plan ? &s->plan : &c->plan;
    char name[96];
    snprintf(name, sizeof name, "comm %d: scheduled blocks (measured)", c->index);
    meta(ev, pid, base + T_SCHED_BLOCKS, "thread_name", name, base + T_SCHED_BLOCKS);
    snprintf(name, sizeof name, "comm %d: scheduled iterations (measured)", c->index);
    meta(ev, pid, base + T_SCHED_ITER, "thread_name", name, base + T_SCHED_ITER);
    for (int odd = 0; odd < 2 && odd < s->n_rec; odd++) {
        snprintf(name, sizeof name, "comm %d: %.31s plan predicted at the %s recorded iterations", c->index, p->policy,
                 odd ? "2nd, 4th, ..." : "1st, 3rd, ...");
        meta(ev, pid, base + T_PREDICTED + odd, "thread_name", name, base + T_PREDICTED + odd);
    }
    double prev_end = -INFINITY; /* blocks run one at a time on the private stream */
    for (int i = 0; i < s->n_rec; i++) {
        const rp_rec_iteration *ri = &s->rec[i];
        double at = s->origin + ri->start, last = -INFINITY;
        for (uint32_t b = 0; b < p->n_blocks && b < s->plan_blocks; b++) {
            const sim_span *m = &ri->blocks[b];
            if (!isfinite(m->start) || !isfinite(m->end))
                continue;
            double s0 = fmax(m->start, prev_end);
            if (m->end < s0)
                continue;
            json_t *args = block_args(p, b, p->policy);
            json_object_set_new(args, "iteration", json_integer(ri->iteration));
            json_object_set_new(args, "run", json_integer(ri->run));
            json_object_set_new(args, "predicted_start_ms", json_real(p->blocks[b].start * 1e3));
            json_object_set_new(args, "predicted_end_ms", json_real(p->blocks[b].end * 1e3));
            json_object_set_new(args, "measured_start_ms", json_real((m->start - ri->start) * 1e3));
            json_object_set_new(args, "measured_end_ms", json_real((m->end - ri->start) * 1e3));
            snprintf(name, sizeof name, "block %u", b);
            complete(ev, pid, base + T_SCHED_BLOCKS, "measured", name, s->origin + s0, s->origin + m->end, args);
            prev_end = m->end;
            last = fmax(last, m->end);
        }
        double next = i + 1 < s->n_rec && s->rec[i + 1].iteration == ri->iteration + 1 ? s->rec[i + 1].start : NAN;
        double end = isfinite(next) ? next : last;
        if (isfinite(end) && end >= ri->start) {
            snprintf(name, sizeof name, "iteration %ld", ri->iteration);
            complete(ev, pid, base + T_SCHED_ITER, "measured", name, at, s->origin + end,
                     json_pack("{s:I, s:I, s:b}", "iteration", (json_int_t)ri->iteration, "run", (json_int_t)ri->run,
                               "to_next_start", isfinite(next)));
        }
        for (uint32_t b = 0; b < p->n_blocks; b++) {
            snprintf(name, sizeof name, "%.31s block %u", p->policy, b);
            json_t *args = block_args(p, b, p->policy);
            json_object_set_new(args, "iteration", json_integer(ri->iteration));
            complete(ev, pid, base + T_PREDICTED + i % 2, "predicted", name, at + p->blocks[b].start,
                     at + p->blocks[b].end, args);
        }
    }
}

int rp_write_trace(const rp_job *job, const char *path, char *err, size_t errlen)
{
    json_t *ev = json_array();
    char name[160];
    int model_pid = job->world_size; /* not a rank */
    bool recorded = false;
    for (int i = 0; i < job->n; i++) {
        const rp_report *r = &job->r[i];
        snprintf(name, sizeof name, "rank %d%s%.100s%s", r->rank, r->run.host ? " (" : "", r->run.host ? r->run.host : "",
                 r->run.host ? ")" : "");
        meta(ev, r->rank, 0, "process_name", name, r->rank + 1);
        for (int k = 0; k < r->n_comms; k++) {
            const rp_comm *c = &r->comms[k];
            int base = c->index * TRACKS_PER_COMM;
            warmup_tracks(ev, r->rank, base, c);
            schedule_tracks(ev, r->rank, base, c);
            recorded |= isfinite(c->local.origin) || isfinite(c->schedule.origin);
        }
    }
    meta(ev, model_pid, 0, "process_name", "model (the agreed profile, every policy's prediction)", 0);
    for (int k = 0; k < job->n_comm_ids; k++) {
        int id = job->comm_ids[k];
        const rp_comm *ref = rp_job_reference(job, id, NULL);
        if (!ref->have_profile)
            continue;
        const ub_profile *prof = &ref->profile;
        double at = model_origin(ref);
        int base = id * TRACKS_PER_COMM;
        snprintf(name, sizeof name, "comm %d: backward (ready marks)", id);
        meta(ev, model_pid, base + T_MODEL_BACKWARD, "thread_name", name, base + T_MODEL_BACKWARD);
        complete(ev, model_pid, base + T_MODEL_BACKWARD, "profile", "backward", at, at + prof->backward_end, NULL);
        for (int call = 0; call < prof->n_calls; call++) {
            snprintf(name, sizeof name, "call %d ready", call);
            instant(ev, model_pid, base + T_MODEL_BACKWARD, "profile", name, at + prof->calls[call].ready,
                    json_pack("{s:i, s:I, s:i}", "call", call, "bytes", (json_int_t)prof->calls[call].bytes, "need",
                              prof->calls[call].need));
        }
        ub_plan plans[UB_POLICY_COUNT];
        rp_plans(ref, plans); /* the reference's plans, with the reference's profile */
        for (int p = 0; p < UB_POLICY_COUNT; p++)
            if (plans[p].n_blocks)
                plan_tracks(ev, model_pid, base, id, prof, &plans[p], T_MODEL_BACKWARD + 1 + 2 * p, at);
        rp_plans_free(plans);
    }
    json_t *doc = json_pack(
        "{s:o, s:s, s:{s:s, s:s, s:s}}", "traceEvents", ev, "displayTimeUnit", "ms", "otherData", "generator",
        "usbyte-report", "clock",
        recorded ? "microseconds since the Unix epoch on each rank's CLOCK_REALTIME (the PyTorch profiler's time base)"
                 : "microseconds from the start of one modelled iteration (the reports hold no recording)",
        "model", "the model process draws one iteration of the agreed profile from the first recorded iteration's "
                 "first ready time");
    /* 17 digits: microseconds since the epoch keep sub-microsecond resolution. */
    int rc = ub_write_json_atomic(path, doc, JSON_COMPACT | JSON_REAL_PRECISION(17), err, errlen);
    json_decref(doc);
    return rc;
}
