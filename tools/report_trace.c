/* The job as Chrome trace-event JSON (the format Perfetto and chrome://tracing open): one
 * process per rank; per communicator a track with the backward pass and each call's ready mark,
 * per policy a track of its link blocks and one of its forward segments, and a track of the
 * blocks measured in schedule mode.  Complete events ("ph": "X") with ts and dur in
 * microseconds from the iteration's start: one iteration, as the model and the plan see it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "usbyte/atomic_write.h"
#include "usbyte/model.h"

#define TRACKS_PER_COMM 100 /* tid = comm index * TRACKS_PER_COMM + track */
#define TRACK_MEASURED 99

/* Tracks sort by tid, except the measured blocks, which follow the chosen plan's link track. */
static void meta(json_t *ev, int pid, int tid, const char *what, const char *name, int sort)
{
    json_array_append_new(ev, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "ph", "M", "name", what, "pid", pid, "tid", tid,
                                        "args", "name", name));
    const char *sort_what = strcmp(what, "process_name") ? "thread_sort_index" : "process_sort_index";
    json_array_append_new(ev, json_pack("{s:s, s:s, s:i, s:i, s:{s:i}}", "ph", "M", "name", sort_what, "pid", pid,
                                        "tid", tid, "args", "sort_index", sort));
}

static void complete(json_t *ev, int pid, int tid, const char *cat, const char *name, double start, double end,
                     json_t *args)
{
    json_array_append_new(ev, json_pack("{s:s, s:s, s:s, s:i, s:i, s:f, s:f, s:o}", "ph", "X", "cat", cat, "name", name,
                                        "pid", pid, "tid", tid, "ts", start * 1e6, "dur", (end - start) * 1e6, "args",
                                        args ? args : json_object()));
}

static void plan_tracks(json_t *ev, int pid, int base, int comm, const ub_profile *prof, const ub_plan *p, int track)
{
    char name[96];
    snprintf(name, sizeof name, "comm %d: %.31s link", comm, p->policy);
    meta(ev, pid, base + track, "thread_name", name, 2 * (base + track));
    snprintf(name, sizeof name, "comm %d: %.31s forward", comm, p->policy);
    meta(ev, pid, base + track + 1, "thread_name", name, 2 * (base + track + 1));
    for (uint32_t b = 0; b < p->n_blocks; b++) {
        const ub_block *blk = &p->blocks[b];
        json_t *segs = json_array();
        json_int_t bytes = 0;
        for (uint32_t k = 0; k < blk->n_segments; k++) {
            const ub_segment *s = &p->segments[blk->first_segment + k];
            json_array_append_new(segs, json_pack("[i, I, I]", s->call, (json_int_t)s->offset, (json_int_t)s->length));
            bytes += (json_int_t)s->length;
        }
        snprintf(name, sizeof name, "%.31s block %u", p->policy, b);
        complete(ev, pid, base + track, "predicted", name, blk->start, blk->end,
                 json_pack("{s:s, s:i, s:I, s:o}", "policy", p->policy, "block", (int)b, "bytes", bytes, "segments", segs));
    }
    double *done = calloc((size_t)prof->n_calls, sizeof(double)), *fs = calloc((size_t)prof->n_forward, sizeof(double));
    if (done && fs) {
        ub_evaluate_const(prof, p, done);
        sim_forward_starts(prof, done, fs);
        for (int s = 0; s < prof->n_forward; s++) {
            snprintf(name, sizeof name, "forward segment %d", s);
            complete(ev, pid, base + track + 1, "predicted", name, fs[s], fs[s] + prof->forward[s],
                     json_pack("{s:s, s:i}", "policy", p->policy, "segment", s));
        }
    }
    free(done);
    free(fs);
}

int rp_write_trace(const rp_job *job, const char *path, char *err, size_t errlen)
{
    json_t *ev = json_array();
    char name[96];
    for (int i = 0; i < job->n; i++) {
        snprintf(name, sizeof name, "rank %d", job->r[i].rank);
        meta(ev, job->r[i].rank, 0, "process_name", name, job->r[i].rank);
    }
    for (int k = 0; k < job->n_comm_ids; k++) {
        int id = job->comm_ids[k];
        const rp_comm *ref = rp_job_reference(job, id, NULL);
        ub_plan plans[UB_POLICY_COUNT];
        rp_plans(ref, plans);
        for (int i = 0; i < job->n; i++) {
            const rp_report *r = &job->r[i];
            const rp_comm *c = rp_comm_find(r, id);
            if (!c)
                continue;
            int pid = r->rank, base = id * TRACKS_PER_COMM;
            if (!c->have_profile)
                continue;
            const ub_profile *prof = &c->profile;
            snprintf(name, sizeof name, "comm %d: backward (ready marks)", id);
            meta(ev, pid, base, "thread_name", name, 2 * base);
            complete(ev, pid, base, "profile", "backward", 0, prof->backward_end, NULL);
            for (int call = 0; call < prof->n_calls; call++) {
                snprintf(name, sizeof name, "call %d ready", call);
                json_array_append_new(
                    ev, json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:f, s:{s:i, s:I, s:i}}", "ph", "i", "s", "t", "cat",
                                  "profile", "name", name, "pid", pid, "tid", base, "ts", prof->calls[call].ready * 1e6,
                                  "args", "call", call, "bytes", (json_int_t)prof->calls[call].bytes, "need",
                                  prof->calls[call].need));
            }
            for (int p = 0; p < UB_POLICY_COUNT; p++)
                if (plans[p].n_blocks)
                    plan_tracks(ev, pid, base, id, prof, &plans[p], 1 + 2 * p);
            if (c->schedule.present) {
                snprintf(name, sizeof name, "comm %d: measured blocks (schedule)", id);
                int chosen = c->have_plan ? ub_policy_parse(c->plan.policy) : -1;
                meta(ev, pid, base + TRACK_MEASURED, "thread_name", name, 2 * (base + 1 + 2 * (chosen < 0 ? 0 : chosen)) + 1);
                for (int b = 0; b < c->schedule.n_blocks; b++) {
                    snprintf(name, sizeof name, "measured block %d", b);
                    complete(ev, pid, base + TRACK_MEASURED, "measured", name, c->schedule.blocks[b].start,
                             c->schedule.blocks[b].end, json_pack("{s:i}", "block", b));
                }
            }
        }
        rp_plans_free(plans);
    }
    json_t *doc = json_pack("{s:o, s:s, s:{s:s, s:s}}", "traceEvents", ev, "displayTimeUnit", "ms", "otherData",
                            "generator", "usbyte-report", "time", "microseconds from the start of one iteration");
    int rc = ub_write_json_atomic(path, doc, JSON_COMPACT | JSON_REAL_PRECISION(12), err, errlen);
    json_decref(doc);
    return rc;
}
