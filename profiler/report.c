/* The runtime's report (see usbyte/report.h).  Key names are the contract with the tests and
 * tools/usbyte-report: see docs/runtime.md. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "usbyte/atomic_write.h"
#include "usbyte/io.h"
#include "usbyte/report.h"

void ub_comm_report_init(ub_comm_report *r)
{
    memset(r, 0, sizeof *r);
    r->state = "detect";
    r->local.origin = NAN;
    r->other_completion = NAN;
    ub_plan_init(&r->plan, "");
}

void ub_comm_report_clear_reasons(ub_comm_report *r)
{
    for (int i = 0; i < r->n_reasons; i++)
        free(r->reasons[i]);
    free(r->reasons);
    r->reasons = NULL;
    r->n_reasons = 0;
}

static void local_free(ub_rank_local *l)
{
    free(l->ready);
    free(l->rec);
    memset(l, 0, sizeof *l);
    l->origin = NAN;
}

void ub_comm_report_free(ub_comm_report *r)
{
    if (r->have_profile)
        ub_profile_free(&r->profile);
    free(r->fit_samples);
    ub_plan_free(&r->plan);
    ub_comm_report_clear_reasons(r);
    local_free(&r->local);
    memset(r, 0, sizeof *r);
}

void ub_comm_report_add_reason(ub_comm_report *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    char **list = text ? realloc(r->reasons, sizeof *list * (size_t)(r->n_reasons + 1)) : NULL;
    if (!list) {
        free(text);
        return;
    }
    va_start(ap, fmt);
    vsnprintf(text, (size_t)n + 1, fmt, ap);
    va_end(ap);
    r->reasons = list;
    r->reasons[r->n_reasons++] = text;
}

void ub_comm_report_set_local(ub_comm_report *r, const ub_rank_local *l)
{
    local_free(&r->local);
    r->local = *l;
}

void ub_comm_id_text(uint64_t id, char out[17])
{
    snprintf(out, 17, "%016llx", (unsigned long long)id);
}

ub_spread ub_spread_of(const double *v, int n)
{
    ub_spread s = {0, NAN, NAN, NAN, NAN};
    double sum = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) {
            if (!s.n || v[i] < s.min)
                s.min = v[i];
            if (!s.n || v[i] > s.max)
                s.max = v[i];
            sum += v[i];
            s.n++;
        }
    if (!s.n)
        return s;
    s.mean = sum / s.n;
    double sq = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i]))
            sq += (v[i] - s.mean) * (v[i] - s.mean);
    s.stdev = s.n > 1 ? sqrt(sq / (s.n - 1)) : 0.0;
    return s;
}

static json_t *number_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

json_t *ub_spread_json(const ub_spread *s)
{
    return json_pack("{s:i, s:o, s:o, s:o, s:o}", "n", s->n, "mean", number_or_null(s->mean), "min",
                     number_or_null(s->min), "max", number_or_null(s->max), "stdev", number_or_null(s->stdev));
}

json_t *ub_calib_report_json(const ub_calib_report *k)
{
    json_t *sizes = json_array(), *secs = json_array(), *spread = json_array();
    for (int i = 0; i < k->n && i < UB_CALIB_MAX_PROBES; i++) {
        json_array_append_new(sizes, json_integer((json_int_t)k->sizes[i]));
        json_array_append_new(secs, number_or_null(k->seconds[i]));
        json_array_append_new(spread, number_or_null(k->spread[i]));
    }
    return json_pack("{s:o, s:o, s:o, s:i, s:b, s:o, s:o, s:o, s:o, s:s, s:o, s:o, s:b}", "sizes", sizes, "seconds", secs,
                     "repeat_spread", spread, "repeats", k->repeats, "agreed", k->agreed,
                     "probe_call", k->probe_call >= 0 ? json_integer((json_int_t)k->probe_call) : json_null(),
                     "agree_call", k->agree_call >= 0 ? json_integer((json_int_t)k->agree_call) : json_null(),
                     "apply_call", k->apply_call >= 0 ? json_integer((json_int_t)k->apply_call) : json_null(),
                     "series_seconds", number_or_null(k->series_seconds), "policy_before", k->policy_before,
                     "predicted_before", number_or_null(k->predicted_before),
                     "predicted_after", number_or_null(k->predicted_after), "plan_changed", k->plan_changed);
}

json_t *ub_verify_report_json(const ub_verify_report *v)
{
    json_t *cands = json_array();
    for (int i = 0; i < v->n_candidates && i < UB_VERIFY_MAX_CANDIDATES; i++) {
        const ub_verify_candidate_report *c = &v->candidates[i];
        json_array_append_new(cands, json_pack("{s:s, s:o, s:o, s:o, s:i, s:i, s:o, s:b}", "policy", c->policy,
                                               "predicted_iteration", number_or_null(c->predicted_iteration),
                                               "measured_iteration", number_or_null(c->measured_iteration),
                                               "refit_predicted_iteration",
                                               number_or_null(c->refit_predicted_iteration),
                                               "iterations", c->iterations, "windows", c->windows,
                                               "spread", number_or_null(c->spread), "refit", c->refit));
    }
    json_t *slots = json_array();
    for (int j = 0; j < v->n_slots && j < 2 * UB_VERIFY_MAX_PAIRS; j++)
        json_array_append_new(slots, json_pack("{s:s, s:i, s:o}", "runs", j % 2 ? "pass-through" : v->slots_policy,
                                               "window", j / UB_VERIFY_SLOTS, "iteration", number_or_null(v->slots[j])));
    return json_pack("{s:o, s:o, s:o, s:i, s:o, s:o, s:o, s:i, s:i, s:s}", "candidates", cands, "slots", slots,
                     "pass_through_iteration",
                     number_or_null(v->pass_through_iteration), "pass_through_iterations", v->pass_through_iterations,
                     "pass_through_spread", number_or_null(v->pass_through_spread), "kept",
                     v->kept[0] ? json_string(v->kept) : json_null(), "at_call",
                     v->at_call >= 0 ? json_integer((json_int_t)v->at_call) : json_null(), "checks", v->checks,
                     "every", v->every, "reason", v->reason);
}

/* This rank's own numbers: its iteration spread, its ready times and the warm-up's recording. */
static json_t *local_json(const ub_comm_report *r)
{
    const ub_rank_local *l = &r->local;
    json_t *ready = json_array();
    for (int k = 0; k < l->n_calls && l->ready; k++)
        json_array_append_new(ready, number_or_null(l->ready[k]));
    json_t *o = json_pack("{s:o, s:o}", "iteration", ub_spread_json(&l->iteration), "ready", ready);
    if (isfinite(l->origin) && l->rec) {
        json_t *its = json_array();
        for (int it = 0; it < l->rec_iterations; it++) {
            json_t *calls = json_array();
            for (int k = 0; k < l->n_calls; k++) {
                const double *x = &l->rec[((size_t)it * (size_t)l->n_calls + (size_t)k) * 3];
                json_array_append_new(calls, json_pack("[o, o, o]", number_or_null(x[0]), number_or_null(x[1]),
                                                       number_or_null(x[2])));
            }
            json_array_append_new(its, calls);
        }
        json_object_set_new(o, "warmup", json_pack("{s:s, s:f, s:s, s:o}", "clock", "CLOCK_REALTIME", "origin",
                                                   l->origin, "calls_are", "[ready, start, end] seconds from origin",
                                                   "iterations", its));
    }
    return o;
}

static json_t *fit_json(const ub_comm_report *r)
{
    const ub_fit_result *f = &r->fit;
    json_t *flags = json_array();
    if (f->flags & UB_FIT_EMPTY) json_array_append_new(flags, json_string("empty"));
    if (f->flags & UB_FIT_ONE_SIZE) json_array_append_new(flags, json_string("one-size"));
    if (f->flags & UB_FIT_ALPHA_CLAMPED) json_array_append_new(flags, json_string("alpha-clamped"));
    if (f->flags & UB_FIT_BETA_CLAMPED) json_array_append_new(flags, json_string("beta-clamped"));
    json_t *points = json_array();
    for (size_t i = 0; i < r->n_fit_samples && r->fit_samples; i++)
        json_array_append_new(points, json_pack("[f, f]", r->fit_samples[i].bytes, r->fit_samples[i].seconds));
    return json_pack("{s:f, s:f, s:f, s:f, s:f, s:I, s:I, s:o, s:s, s:o, s:s}", "alpha", f->alpha, "beta", f->beta,
                     "rms", f->rms, "rel_rms", f->rel_rms, "max_abs", f->max_abs,
                     "samples", (json_int_t)f->samples, "distinct_sizes", (json_int_t)f->distinct_sizes,
                     "flags", flags, "samples_are",
                     "per call: from where the model starts it to its end, the median over warm-up iterations, the least over ranks", "points", points,
                     "points_are", "[bytes, seconds]: every sample the net was fitted on (the calls', then "
                     "calibration's probes)");
}

static json_t *pattern_json(const ub_comm_report *r)
{
    json_t *ready = json_pack("{s:i, s:i, s:s}", "upstream_event_calls", r->ready_upstream_calls,
                              "fallback_calls", r->ready_fallback_calls, "source",
                              r->ready_fallback_calls == 0 ? "producer events (cudaStreamWaitEvent on the NCCL stream)"
                              : r->ready_upstream_calls == 0 ? "fallback: events on the NCCL stream (no upstream event seen)"
                                                             : "mixed: producer events where seen, else the NCCL stream");
    json_t *consumers = json_pack("{s:i, s:i, s:i, s:b, s:i, s:i}", "stream_waits", r->consumers_stream,
                                  "host_waits", r->consumers_host, "host_waits_other_thread",
                                  r->consumers_host_other, "end_events_on_nccl_stream", r->end_records,
                                  "merge_barriers", r->merge_barriers, "need_segments", r->need_segments);
    json_t *so = json_pack("{s:f, s:s, s:b, s:s}", "operations", r->stream_ordered, "example",
                           r->stream_ordered_example, "cupti", r->cupti, "cupti_detail", r->cupti_detail);
    return json_pack("{s:o, s:o, s:o, s:i}", "ready", ready, "consumers", consumers, "stream_ordered_work", so,
                     "other_calls_per_iteration", r->other_calls);
}

json_t *ub_comm_report_json(const ub_comm_report *r)
{
    json_t *c = json_object();
    json_object_set_new(c, "index", json_integer(r->index));
    if (r->id) {
        char id[17];
        ub_comm_id_text(r->id, id);
        json_object_set_new(c, "id", json_string(id));
    }
    json_object_set_new(c, "rank", json_integer(r->rank));
    json_object_set_new(c, "nranks", json_integer(r->nranks));
    json_object_set_new(c, "state", json_string(r->state));
    if (r->state_reason[0])
        json_object_set_new(c, "state_reason", json_string(r->state_reason));
    json_object_set_new(c, "calls_per_iteration", json_integer(r->calls_per_iteration));
    json_object_set_new(c, "nccl_calls_per_iteration", json_integer(r->nccl_calls_per_iteration));
    json_object_set_new(c, "iterations_observed", json_integer((json_int_t)r->iterations_observed));
    json_object_set_new(c, "warmup_iterations", json_integer(r->warmup));
    json_t *used = json_array();
    for (int it = 0; it < r->warmup && it < 1024; it++)
        if (r->warmup_used[it / 64] >> (it % 64) & 1)
            json_array_append_new(used, json_integer(it));
    json_object_set_new(c, "warmup_iterations_used", used);
    json_object_set_new(c, "measured_iteration", json_real(r->measured_iteration));
    json_object_set_new(c, "profile", r->have_profile ? ub_profile_to_json(&r->profile) : json_null());
    json_object_set_new(c, "fit", r->have_profile ? fit_json(r) : json_null());
    json_object_set_new(c, "pattern", pattern_json(r));
    json_t *reasons = json_array();
    for (int i = 0; i < r->n_reasons; i++)
        json_array_append_new(reasons, json_string(r->reasons[i]));
    bool plans = r->have_plans && !r->profiling;
    if (r->n_reasons == 0 && !plans && !r->have_profile) {
        /* No verdict yet: a disabled record says why, any other is still detecting or profiling. */
        char text[300];
        if (r->state && !strcmp(r->state, "disabled") && r->state_reason[0])
            snprintf(text, sizeof text, "%s", r->state_reason);
        else
            snprintf(text, sizeof text, "not profiled yet (state %s)", r->state ? r->state : "unknown");
        json_array_append_new(reasons, json_string(text));
    }
    json_object_set_new(c, "verdict", json_pack("{s:b, s:o}", "schedulable", plans || r->have_profile ? r->schedulable
                                                                                                      : false,
                                                 "reasons", reasons));
    json_t *policies = json_array();
    if (plans)
        for (int id = 0; id < UB_POLICY_COUNT; id++)
            json_array_append_new(policies, json_pack("{s:s, s:f}", "policy", ub_policy_name((ub_policy_id)id),
                                                      "iteration", r->policy_iteration[id]));
    json_object_set_new(c, "policies", policies);
    json_object_set_new(c, "plan", plans ? ub_plan_to_json(&r->plan) : json_null());
    json_object_set_new(c, "local", local_json(r));
    return c;
}

/* A value from the environment as a JSON string: jansson refuses text that is not UTF-8 (and the
 * key would vanish from the report), so each byte of an invalid sequence becomes U+FFFD. */
static json_t *text_json(const char *t)
{
    json_t *v = json_string(t);
    if (v)
        return v;
    size_t n = strlen(t);
    char *out = malloc(3 * n + 1);
    if (!out)
        return json_null();
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        unsigned char b = (unsigned char)t[i];
        size_t len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
        char seq[5] = {0};
        if (len && i + len <= n) {
            memcpy(seq, t + i, len);
            json_t *probe = json_string(seq);
            if (probe) {
                json_decref(probe);
                memcpy(out + o, seq, len);
                o += len;
                i += len;
                continue;
            }
        }
        memcpy(out + o, "\xef\xbf\xbd", 3);
        o += 3;
        i++;
    }
    out[o] = '\0';
    v = json_string(out);
    free(out);
    return v ? v : json_null();
}

static json_t *text_or_null(const char *t) { return t ? text_json(t) : json_null(); }

/* The job: every rank of one job shares its communicators' identities; the report names the one
 * of the first communicator that spans the whole job (else of the first one). */
static json_t *job_json(int world_size, const ub_comm_report *const *comms, int n)
{
    const ub_comm_report *pick = NULL;
    for (int i = 0; i < n && !pick; i++)
        if (comms[i]->id && comms[i]->nranks == world_size)
            pick = comms[i];
    for (int i = 0; i < n && !pick; i++)
        if (comms[i]->id)
            pick = comms[i];
    if (!pick)
        return json_pack("{s:n, s:s}", "id", "source", "no communicator with a known identity");
    char id[17], src[96];
    ub_comm_id_text(pick->id, id);
    snprintf(src, sizeof src, "communicator %d's identity (a hash of its ncclUniqueId)", pick->index);
    return json_pack("{s:s, s:s}", "id", id, "source", src);
}

static json_t *run_json(const ub_run_info *run)
{
    json_t *o = json_object();
    char when[64] = "";
    if (isfinite(run->started)) {
        time_t t = (time_t)run->started;
        struct tm tm;
        if (gmtime_r(&t, &tm))
            strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    }
    json_object_set_new(o, "started", when[0] ? json_string(when) : json_null());
    json_object_set_new(o, "started_unix", number_or_null(run->started));
    json_object_set_new(o, "host", text_or_null(run->host));
    json_object_set_new(o, "pid", json_integer(run->pid));
    json_object_set_new(o, "command", text_or_null(run->command));
    json_object_set_new(o, "gpu", text_or_null(run->gpu));
    json_object_set_new(o, "device", json_integer(run->device));
    return o;
}

json_t *ub_report_json(int rank, int world_size, const ub_config *cfg, const ub_versions *v,
                       const ub_run_info *run, const ub_comm_report *const *comms, int n)
{
    /* Typed values (the warm-up is a number, switches are booleans) and where each came from. */
    json_t *config = json_object(), *sources = json_object(), *ignored = json_object();
    char value[600];
    for (int id = 0; id < UB_CFG_COUNT; id++) {
        const char *name = ub_config_name((ub_config_id)id);
        json_t *v;
        if (id == UB_CFG_warmup)
            v = json_integer(cfg->warmup);
        else if (id == UB_CFG_cupti)
            v = json_boolean(cfg->cupti);
        else if (id == UB_CFG_dump_config)
            v = json_boolean(cfg->dump_config);
        else
            v = text_json(ub_config_value_text(cfg, (ub_config_id)id, value, sizeof value));
        json_object_set_new(config, name, v);
        json_object_set_new(sources, name, json_string(ub_config_source_name(cfg->source[id])));
    }
    for (int i = 0; run && i < run->n_ignored && i < 32; i++)
        json_object_set_new(ignored, run->ignored_name[i], text_or_null(run->ignored_value[i]));
    json_object_set_new(config, "sources", sources);
    json_object_set_new(config, "ignored", ignored);
    json_t *versions = json_pack("{s:s, s:i, s:i, s:i, s:o, s:o}", "usbyte", v->usbyte, "nccl", v->nccl,
                                 "cuda_runtime", v->cuda_runtime, "cuda_driver", v->cuda_driver, "nccl_library",
                                 text_or_null(v->nccl_library), "cudart_library", text_or_null(v->cudart_library));
    json_t *arr = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(arr, ub_comm_report_json(comms[i]));
    ub_run_info none = {.started = NAN, .device = -1};
    return json_pack("{s:i, s:i, s:i, s:o, s:o, s:o, s:o, s:o}", "usbyte_report", 1, "rank", rank, "world_size",
                     world_size, "job", job_json(world_size, comms, n), "run", run_json(run ? run : &none),
                     "config", config, "versions", versions, "comms", arr);
}

int ub_report_write(const char *path, const json_t *doc, char *err, size_t errlen)
{
    return ub_write_json_atomic(path, doc, JSON_INDENT(1) | JSON_REAL_PRECISION(17), err, errlen);
}
