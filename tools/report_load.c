/* Loading and checking one rank's report JSON (docs/runtime.md).  The reader is strict about
 * what the page and the trace show (a wrong type or an inconsistent length is an error naming
 * its place, never a blank cell or a read past an array) and ignores the rest. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "usbyte/alloc.h"
#include "usbyte/io.h"
#include "usbyte/model.h"

typedef struct ctx {
    const char *path;
    char *err;
    size_t errlen;
} ctx;

static int fail(ctx *x, const char *place, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(ctx *x, const char *place, const char *fmt, ...)
{
    int n = snprintf(x->err, x->errlen, "%s: %s%s", x->path, place, *place ? ": " : "");
    if (n < 0 || (size_t)n >= x->errlen)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->err + n, x->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

/* "base.key" (or "key" at the top) into buf. */
static const char *place(char *buf, size_t len, const char *base, const char *key)
{
    snprintf(buf, len, "%s%s%s", base, *base ? "." : "", key);
    return buf;
}

/* What a member must hold. */
typedef enum { K_NUM, K_INT, K_STR, K_OBJ, K_ARR, K_REAL, K_SINT } kind;

static bool is_kind(const json_t *v, kind k)
{
    switch (k) {
    case K_NUM: return json_is_number(v) && isfinite(json_number_value(v)) && json_number_value(v) >= 0;
    case K_INT: return json_is_integer(v) && json_integer_value(v) >= 0;
    case K_STR: return json_is_string(v);
    case K_OBJ: return json_is_object(v);
    case K_ARR: return json_is_array(v);
    case K_REAL: return json_is_number(v) && isfinite(json_number_value(v));
    case K_SINT: return json_is_integer(v);
    }
    return false;
}

/* Member `key` of obj, of kind k: 0 with *out set; 1 when it is absent or null and not
 * required (*out untouched); -1 with the message otherwise. */
static const char *const want[] = {"a non-negative number", "a non-negative integer", "a string", "an object",
                                   "an array", "a number", "an integer"};

static int member(ctx *x, const json_t *obj, const char *base, const char *key, bool required, kind k,
                  const json_t **out)
{
    const json_t *v = json_object_get(obj, key);
    char p[256];
    if (!v || json_is_null(v))
        return required ? fail(x, place(p, sizeof p, base, key), "missing") : 1;
    if (!is_kind(v, k)) {
        if (json_is_number(v))
            return fail(x, place(p, sizeof p, base, key), "must be %s, got %g", want[k], json_number_value(v));
        return fail(x, place(p, sizeof p, base, key), "must be %s, got %s", want[k], type_name(v));
    }
    *out = v;
    return 0;
}

/* Optional array member `key`: the array (NULL when absent), its length, and `items`: that many
 * (at least one) zeroed elements of `size` bytes for the caller to fill.  The place of its
 * elements ("base.key") goes into p. */
static int array(ctx *x, const json_t *obj, const char *base, const char *key, const json_t **arr, size_t *n,
                 void *items, size_t size, char *p, size_t len)
{
    *arr = NULL;
    if (member(x, obj, base, key, false, K_ARR, arr) < 0)
        return -1;
    *n = *arr ? json_array_size(*arr) : 0;
    *(void **)items = ub_xcalloc(*n ? *n : 1, size, "reading %s", x->path);
    place(p, len, base, key);
    return 0;
}

/* Element i of arr, of kind k; NULL with the message (naming "where[i]") otherwise. */
static const json_t *element(ctx *x, const json_t *arr, const char *where, size_t i, kind k)
{
    const json_t *e = json_array_get(arr, i);
    if (is_kind(e, k))
        return e;
    char p[300];
    snprintf(p, sizeof p, "%s[%zu]", where, i);
    fail(x, p, "must be %s, got %s", want[k], type_name(e));
    return NULL;
}

static int get_num(ctx *x, const json_t *obj, const char *base, const char *key, bool required, double *out)
{
    const json_t *v;
    int rc = member(x, obj, base, key, required, K_NUM, &v);
    if (rc == 0)
        *out = json_number_value(v);
    return rc;
}

/* A duration in seconds that a job can have measured: a million seconds (11.6 days) per iteration
 * is far beyond any; a larger value is a damaged file (1e308 would print as "inf ms"). */
#define MAX_SECONDS 1e6

static int get_seconds(ctx *x, const json_t *obj, const char *base, const char *key, bool required, double *out)
{
    double v;
    int rc = get_num(x, obj, base, key, required, &v);
    if (rc == 0 && v > MAX_SECONDS) {
        char p[256];
        return fail(x, place(p, sizeof p, base, key), "%g s is not a time a job measures (at most %g s)", v, MAX_SECONDS);
    }
    if (rc == 0)
        *out = v;
    return rc;
}

static int get_int(ctx *x, const json_t *obj, const char *base, const char *key, bool required, long *out)
{
    const json_t *v;
    int rc = member(x, obj, base, key, required, K_INT, &v);
    if (rc == 0)
        *out = (long)json_integer_value(v);
    return rc;
}

static int get_str(ctx *x, const json_t *obj, const char *base, const char *key, bool required, const char **out)
{
    const json_t *v;
    int rc = member(x, obj, base, key, required, K_STR, &v);
    if (rc == 0)
        *out = json_string_value(v);
    return rc;
}

/* Element i of arr: a finite number (any sign) into *out, or null (NAN); -1 otherwise. */
static int time_or_null(ctx *x, const json_t *arr, const char *where, size_t i, double *out)
{
    const json_t *e = json_array_get(arr, i);
    if (json_is_null(e)) {
        *out = NAN;
        return 0;
    }
    if (!element(x, arr, where, i, K_REAL))
        return -1;
    *out = json_number_value(e);
    return 0;
}

/* {"n", "mean", "min", "max", "stdev"} of a rank's iteration times. */
static int load_spread(ctx *x, const json_t *obj, const char *base, const char *key, rp_spread *sp)
{
    const json_t *o;
    sp->n = 0;
    sp->mean = sp->min = sp->max = sp->stdev = NAN;
    int rc = member(x, obj, base, key, false, K_OBJ, &o);
    if (rc)
        return rc < 0 ? -1 : 0;
    char b[200];
    place(b, sizeof b, base, key);
    if (get_int(x, o, b, "n", true, &sp->n) < 0 || get_num(x, o, b, "mean", false, &sp->mean) < 0 ||
        get_num(x, o, b, "min", false, &sp->min) < 0 || get_num(x, o, b, "max", false, &sp->max) < 0 ||
        get_num(x, o, b, "stdev", false, &sp->stdev) < 0)
        return -1;
    if (sp->n > 0 && !(sp->min <= sp->mean && sp->mean <= sp->max))
        return fail(x, b, "mean %g outside [min %g, max %g]", sp->mean, sp->min, sp->max);
    return 0;
}

/* The rank's own warm-up: its iteration spread, ready times and the recording of its calls. */
static int load_local(ctx *x, const json_t *c, const char *base, rp_local *l)
{
    const json_t *lj, *ready = NULL, *wu = NULL, *its = NULL;
    l->origin = NAN;
    int rc = member(x, c, base, "local", false, K_OBJ, &lj);
    if (rc)
        return rc < 0 ? -1 : 0;
    char b[200], where[240], p[300];
    size_t n = 0;
    place(b, sizeof b, base, "local");
    if (load_spread(x, lj, b, "iteration", &l->iteration) < 0 ||
        array(x, lj, b, "ready", &ready, &n, &l->ready, sizeof *l->ready, where, sizeof where) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (time_or_null(x, ready, where, i, &l->ready[i]) < 0)
            return -1;
    l->n_ready = (int)n;
    l->present = true;
    rc = member(x, lj, b, "warmup", false, K_OBJ, &wu);
    if (rc)
        return rc < 0 ? -1 : 0;
    char bw[240];
    place(bw, sizeof bw, b, "warmup");
    size_t n_it = 0;
    double origin = NAN;
    if (get_num(x, wu, bw, "origin", true, &origin) < 0 ||
        array(x, wu, bw, "iterations", &its, &n_it, &l->rec, sizeof *l->rec * 3 * (n ? n : 1), where, sizeof where) < 0)
        return -1;
    for (size_t it = 0; it < n_it; it++) {
        const json_t *calls = element(x, its, where, it, K_ARR);
        if (!calls)
            return -1;
        snprintf(p, sizeof p, "%s[%zu]", where, it);
        if (json_array_size(calls) != n)
            return fail(x, p, "%zu calls, local.ready has %zu", json_array_size(calls), n);
        for (size_t k = 0; k < n; k++) {
            char q[340];
            snprintf(q, sizeof q, "%s[%zu]", p, k);
            const json_t *t = element(x, calls, p, k, K_ARR);
            if (!t)
                return -1;
            if (json_array_size(t) != 3)
                return fail(x, q, "must be [ready, start, end], got %zu numbers", json_array_size(t));
            double *o = &l->rec[(it * n + k) * 3];
            for (size_t j = 0; j < 3; j++)
                if (time_or_null(x, t, q, j, &o[j]) < 0)
                    return -1;
        }
    }
    l->origin = origin;
    l->rec_iterations = (int)n_it;
    return 0;
}

static int load_fit(ctx *x, const json_t *c, const char *base, rp_comm *out)
{
    const json_t *fit;
    int rc = member(x, c, base, "fit", false, K_OBJ, &fit);
    if (rc)
        return rc < 0 ? -1 : 0;
    char b[64];
    snprintf(b, sizeof b, "%s.fit", base);
    if (get_num(x, fit, b, "alpha", true, &out->alpha) < 0 || get_num(x, fit, b, "beta", true, &out->beta) < 0 ||
        get_num(x, fit, b, "rms", false, &out->rms) < 0 || get_num(x, fit, b, "rel_rms", false, &out->rel_rms) < 0 ||
        get_num(x, fit, b, "max_abs", false, &out->max_abs) < 0 ||
        get_int(x, fit, b, "samples", false, &out->samples) < 0 ||
        get_int(x, fit, b, "distinct_sizes", false, &out->distinct_sizes) < 0 ||
        member(x, fit, b, "flags", false, K_ARR, &out->fit_flags) < 0)
        return -1;
    out->have_fit = true;
    return 0;
}

static int load_verdict(ctx *x, const json_t *c, const char *base, rp_comm *out)
{
    const json_t *v, *reasons = NULL, *s;
    char b[64], p[96];
    snprintf(b, sizeof b, "%s.verdict", base);
    if (member(x, c, base, "verdict", true, K_OBJ, &v) < 0)
        return -1;
    s = json_object_get(v, "schedulable");
    if (!json_is_boolean(s))
        return fail(x, place(p, sizeof p, b, "schedulable"), s ? "must be a boolean, got %s" : "missing%s",
                    s ? type_name(s) : "");
    out->schedulable = json_is_true(s);
    size_t n;
    if (array(x, v, b, "reasons", &reasons, &n, &out->reasons, sizeof *out->reasons, p, sizeof p) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const json_t *r = element(x, reasons, p, i, K_STR);
        if (!r)
            return -1;
        out->reasons[out->n_reasons++] = json_string_value(r);
    }
    return 0;
}

static int load_policies(ctx *x, const json_t *c, const char *base, rp_comm *out)
{
    const json_t *arr;
    char where[96], b[128];
    size_t n;
    if (array(x, c, base, "policies", &arr, &n, &out->policies, sizeof *out->policies, where, sizeof where) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = element(x, arr, where, i, K_OBJ);
        if (!e)
            return -1;
        snprintf(b, sizeof b, "%s[%zu]", where, i);
        rp_policy *p = &out->policies[out->n_policies++];
        p->iteration = NAN; /* a policy that failed carries no number */
        if (get_str(x, e, b, "policy", true, &p->name) < 0 || get_num(x, e, b, "iteration", false, &p->iteration) < 0)
            return -1;
    }
    return 0;
}

/* parent's member "plan" (at place `where`) into *plan, checked against the profile: 1 read, 0
 * absent, -1 refused (x->err says why; *plan holds nothing). */
static int read_plan(ctx *x, const json_t *parent, const char *where, const rp_comm *out, ub_plan *plan)
{
    const json_t *pj;
    int rc = member(x, parent, where, "plan", false, K_OBJ, &pj);
    if (rc)
        return rc < 0 ? -1 : 0;
    char b[256], origin[1200], err[1024];
    place(b, sizeof b, where, "plan");
    if (!out->have_profile)
        return fail(x, b, "a plan without a profile");
    snprintf(origin, sizeof origin, "%s: %s", x->path, b);
    if (ub_plan_from_json(pj, origin, plan, err, sizeof err) != 0) {
        snprintf(x->err, x->errlen, "%s", err); /* already names the file and the place */
        return -1;
    }
    if (ub_plan_validate(&out->profile, plan, err, sizeof err) != 0) {
        ub_plan_free(plan);
        return fail(x, b, "%s", err);
    }
    return 1;
}

static int load_plan(ctx *x, const json_t *c, const char *base, rp_comm *out)
{
    int rc = read_plan(x, c, base, out, &out->plan);
    if (rc <= 0)
        return rc;
    const json_t *pj = json_object_get(c, "plan");
    out->plan_reported = out->plan.iteration;
    /* Block times re-evaluated under the profile (the page compares them with the reported
     * iteration); the reported lower bound and planning time are kept as written. */
    double spent = out->plan.plan_seconds, lb = out->plan.lower_bound;
    ub_evaluate(&out->profile, &out->plan, NULL);
    out->plan.plan_seconds = spent;
    out->plan.lower_bound = lb;
    const json_t *opt = json_object_get(pj, "optimal");
    out->optimal = opt && json_is_boolean(opt) ? json_is_true(opt) : -1;
    out->has_lower_bound = json_is_number(json_object_get(pj, "lower_bound"));
    out->have_plan = true;
    return 0;
}

/* Schedule mode's recording: per timed iteration its start and the plan's blocks. */
static int load_recording(ctx *x, const json_t *sj, const char *base, rp_schedule *s)
{
    const json_t *rj, *its = NULL;
    int rc = member(x, sj, base, "recording", false, K_OBJ, &rj);
    if (rc)
        return rc < 0 ? -1 : 0;
    char b[240], where[280], p[320], q[360];
    size_t n = 0;
    double origin = NAN;
    place(b, sizeof b, base, "recording");
    if (get_num(x, rj, b, "origin", true, &origin) < 0 ||
        array(x, rj, b, "iterations", &its, &n, &s->rec, sizeof *s->rec, where, sizeof where) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = element(x, its, where, i, K_OBJ), *blocks;
        if (!e)
            return -1;
        snprintf(p, sizeof p, "%s[%zu]", where, i);
        rp_rec_iteration *ri = &s->rec[s->n_rec];
        ri->iteration = ri->run = 0;
        if (get_int(x, e, p, "iteration", false, &ri->iteration) < 0 || get_int(x, e, p, "run", false, &ri->run) < 0 ||
            member(x, e, p, "start", true, K_REAL, &blocks) < 0)
            return -1;
        ri->start = json_number_value(blocks);
        if (member(x, e, p, "blocks", true, K_ARR, &blocks) < 0)
            return -1;
        snprintf(q, sizeof q, "%s.blocks", p);
        /* Drawn against the plan's blocks: exactly as many. */
        if (json_array_size(blocks) != s->plan_blocks)
            return fail(x, q, "%zu blocks, the plan has %u", json_array_size(blocks), s->plan_blocks);
        ri->blocks = ub_xcalloc(s->plan_blocks ? s->plan_blocks : 1, sizeof *ri->blocks, "reading %s", x->path);
        s->n_rec++;
        for (size_t k = 0; k < json_array_size(blocks); k++) {
            char r[400];
            snprintf(r, sizeof r, "%s[%zu]", q, k);
            const json_t *t = element(x, blocks, q, k, K_ARR);
            if (!t)
                return -1;
            if (json_array_size(t) != 2)
                return fail(x, r, "must be [start, end], got %zu numbers", json_array_size(t));
            if (time_or_null(x, t, r, 0, &ri->blocks[k].start) < 0 || time_or_null(x, t, r, 1, &ri->blocks[k].end) < 0)
                return -1;
            if (ri->blocks[k].end < ri->blocks[k].start)
                return fail(x, r, "ends (%g s) before it starts (%g s)", ri->blocks[k].end, ri->blocks[k].start);
        }
    }
    s->origin = origin;
    return 0;
}

/* schedule.plan: the plan the schedule held, where verification loaded another than the chosen. */
static int load_held_plan(ctx *x, const json_t *c, const char *base, rp_comm *out)
{
    const json_t *sj = json_object_get(c, "schedule");
    if (!json_is_object(sj))
        return 0;
    char b[200];
    snprintf(b, sizeof b, "%s.schedule", base);
    rp_schedule *s = &out->schedule;
    int rc = read_plan(x, sj, b, out, &s->plan);
    if (rc <= 0)
        return rc;
    s->has_plan = true;
    s->plan_blocks = s->plan.n_blocks;
    return 0;
}

static int load_schedule(ctx *x, const json_t *c, const char *base, rp_schedule *s)
{
    const json_t *sj, *blocks = NULL;
    const char *from = NULL;
    int rc = member(x, c, base, "schedule", false, K_OBJ, &sj);
    if (rc)
        return rc < 0 ? -1 : 0;
    char b[200], p[300], where[240];
    size_t n = 0;
    snprintf(b, sizeof b, "%s.schedule", base);
    s->origin = NAN;
    /* A measurement not taken yet (too few scheduled iterations) is null: shown as a dash. */
    s->measured_iteration = s->measured_pass_through = s->measured_speedup = s->predicted_speedup = NAN;
    if (get_int(x, sj, b, "iterations", true, &s->iterations) < 0 ||
        get_seconds(x, sj, b, "measured_iteration", false, &s->measured_iteration) < 0 ||
        get_seconds(x, sj, b, "predicted_iteration", true, &s->predicted_iteration) < 0 ||
        get_seconds(x, sj, b, "measured_pass_through", false, &s->measured_pass_through) < 0 ||
        get_num(x, sj, b, "measured_speedup", false, &s->measured_speedup) < 0 ||
        get_num(x, sj, b, "predicted_speedup", false, &s->predicted_speedup) < 0 ||
        get_int(x, sj, b, "deviations", false, &s->deviations) < 0 ||
        get_int(x, sj, b, "flushes", false, &s->flushes) < 0 ||
        get_int(x, sj, b, "staging_bytes", false, &s->staging_bytes) < 0 ||
        get_str(x, sj, b, "completion", false, &s->completion) < 0 ||
        get_str(x, sj, b, "measured_pass_through_from", false, &from) < 0 ||
        array(x, sj, b, "blocks", &blocks, &n, &s->blocks, sizeof *s->blocks, where, sizeof where) < 0)
        return -1;
    s->pass_through_side_by_side = from && !strcmp(from, "verification");
    for (size_t i = 0; i < n; i++) {
        const json_t *e = element(x, blocks, where, i, K_OBJ);
        if (!e)
            return -1;
        snprintf(p, sizeof p, "%s[%zu]", where, i);
        sim_span *sp = &s->blocks[s->n_blocks++];
        if (get_num(x, e, p, "start", true, &sp->start) < 0 || get_num(x, e, p, "end", true, &sp->end) < 0)
            return -1;
        if (sp->end < sp->start)
            return fail(x, p, "ends (%g s) before it starts (%g s)", sp->end, sp->start);
    }
    if (load_spread(x, sj, b, "iteration_spread", &s->spread) < 0 || load_recording(x, sj, b, s) < 0)
        return -1;
    s->present = true;
    return 0;
}

static int load_verification(ctx *x, const json_t *c, const char *base, rp_verification *v)
{
    const json_t *vj, *cands = NULL;
    int rc = member(x, c, base, "verification", false, K_OBJ, &vj);
    if (rc)
        return rc < 0 ? -1 : 0;
    char b[200], p[300], where[240];
    size_t n = 0;
    snprintf(b, sizeof b, "%s.verification", base);
    v->pass_through_iteration = v->pass_through_spread = NAN;
    v->at_call = -1;
    if (get_num(x, vj, b, "pass_through_iteration", false, &v->pass_through_iteration) < 0 ||
        get_num(x, vj, b, "pass_through_spread", false, &v->pass_through_spread) < 0 ||
        get_int(x, vj, b, "pass_through_iterations", false, &v->pass_through_iterations) < 0 ||
        get_int(x, vj, b, "checks", false, &v->checks) < 0 || get_int(x, vj, b, "every", false, &v->every) < 0 ||
        get_int(x, vj, b, "at_call", false, &v->at_call) < 0 || get_str(x, vj, b, "kept", false, &v->kept) < 0 ||
        get_str(x, vj, b, "reason", true, &v->reason) < 0 ||
        array(x, vj, b, "candidates", &cands, &n, &v->candidates, sizeof *v->candidates, where, sizeof where) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = element(x, cands, where, i, K_OBJ);
        if (!e)
            return -1;
        snprintf(p, sizeof p, "%s[%zu]", where, i);
        rp_candidate *k = &v->candidates[v->n_candidates++];
        k->measured_iteration = k->spread = k->refit_predicted_iteration = NAN;
        if (get_str(x, e, p, "policy", true, &k->policy) < 0 ||
            get_num(x, e, p, "predicted_iteration", true, &k->predicted_iteration) < 0 ||
            get_num(x, e, p, "measured_iteration", false, &k->measured_iteration) < 0 ||
            get_num(x, e, p, "refit_predicted_iteration", false, &k->refit_predicted_iteration) < 0 ||
            get_num(x, e, p, "spread", false, &k->spread) < 0 ||
            get_int(x, e, p, "iterations", false, &k->iterations) < 0)
            return -1;
        const json_t *refit = json_object_get(e, "refit"); /* absent in older reports */
        k->refit = json_is_true(refit);
    }
    v->present = true;
    return 0;
}

static int load_comm(ctx *x, const json_t *c, int i, rp_comm *out)
{
    char b[32], p[200];
    snprintf(b, sizeof b, "comms[%d]", i);
    out->json = c;
    ub_plan_init(&out->plan, "");
    out->optimal = -1;
    if (!json_is_object(c))
        return fail(x, b, "must be an object, got %s", type_name(c));
    long index = i, rank = 0, nranks = 0;
    if (get_int(x, c, b, "index", false, &index) < 0 || get_int(x, c, b, "rank", false, &rank) < 0 ||
        get_str(x, c, b, "id", false, &out->id) < 0 ||
        get_int(x, c, b, "nranks", false, &nranks) < 0 || get_str(x, c, b, "state", true, &out->state) < 0 ||
        get_str(x, c, b, "state_reason", false, &out->state_reason) < 0 ||
        get_int(x, c, b, "calls_per_iteration", false, &out->calls_per_iteration) < 0 ||
        get_int(x, c, b, "nccl_calls_per_iteration", false, &out->nccl_calls_per_iteration) < 0 ||
        get_int(x, c, b, "iterations_observed", false, &out->iterations_observed) < 0 ||
        get_int(x, c, b, "warmup_iterations", false, &out->warmup) < 0 ||
        get_seconds(x, c, b, "measured_iteration", false, &out->measured_iteration) < 0)
        return -1;
    out->index = (int)index;
    out->rank = (int)rank;
    out->nranks = (int)nranks;
    const json_t *prof;
    int rc = member(x, c, b, "profile", false, K_OBJ, &prof);
    if (rc < 0)
        return -1;
    if (rc == 0) {
        char origin[1100], err[1024];
        snprintf(origin, sizeof origin, "%s: %s.profile", x->path, b);
        if (ub_profile_from_json(prof, origin, &out->profile, err, sizeof err) != 0) {
            snprintf(x->err, x->errlen, "%s", err);
            return -1;
        }
        out->have_profile = true;
    }
    if (load_fit(x, c, b, out) < 0 || load_verdict(x, c, b, out) < 0 || load_policies(x, c, b, out) < 0 ||
        load_plan(x, c, b, out) < 0)
        return -1;
    out->schedule.plan_blocks = out->have_plan ? out->plan.n_blocks : 0;
    if (load_held_plan(x, c, b, out) < 0 || load_schedule(x, c, b, &out->schedule) < 0 || load_verification(x, c, b, &out->verification) < 0 ||
        load_local(x, c, b, &out->local) < 0)
        return -1;
    if (out->schedule.present && !out->have_plan)
        return fail(x, place(p, sizeof p, b, "schedule"), "schedule measurements without a plan");
    return 0;
}

/* The document is a report of the version this tool reads. */
static int check_version(ctx *x, const json_t *root)
{
    if (!json_is_object(root))
        return fail(x, "", "not a usbyte report: the document is %s, not an object", type_name(root));
    const json_t *ver = json_object_get(root, "usbyte_report");
    if (!ver) {
        if (json_object_get(root, "usbyte_profile"))
            return fail(x, "", "a usbyte profile, not a report (replay it with usbyte-sim)");
        return fail(x, "", "not a usbyte report (no \"usbyte_report\" key)");
    }
    if (!json_is_integer(ver))
        return fail(x, "usbyte_report", "must be an integer version, got %s", type_name(ver));
    if (json_integer_value(ver) != RP_VERSION)
        return fail(x, "usbyte_report", "version %lld is not supported (this usbyte-report reads version %d)",
                    (long long)json_integer_value(ver), RP_VERSION);
    return 0;
}

/* The "run" object (may be NULL): when, where, what and on which device. */
static int load_run(ctx *x, const json_t *run, rp_report *out)
{
    const json_t *v;
    if (run && (get_str(x, run, "run", "started", false, &out->run.started) < 0 ||
                get_num(x, run, "run", "started_unix", false, &out->run.started_unix) < 0 ||
                get_str(x, run, "run", "host", false, &out->run.host) < 0 ||
                get_str(x, run, "run", "command", false, &out->run.command) < 0 ||
                get_str(x, run, "run", "gpu", false, &out->run.gpu) < 0 ||
                get_int(x, run, "run", "pid", false, &out->run.pid) < 0 ||
                member(x, run, "run", "device", false, K_SINT, &v) < 0))
        return -1;
    if (run && json_is_integer(json_object_get(run, "device")))
        out->run.device = (long)json_integer_value(json_object_get(run, "device"));
    return 0;
}

/* The settings shown and compared: strings, numbers or booleans; "sources" and "ignored" hold
 * strings. */
static int check_config(ctx *x, const json_t *cfg)
{
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)cfg, key, val) {
        char p[300];
        if (!strcmp(key, "sources") || !strcmp(key, "ignored")) {
            if (!json_is_object(val))
                return fail(x, place(p, sizeof p, "config", key), "must be an object, got %s", type_name(val));
            const char *k2;
            json_t *v2;
            json_object_foreach(val, k2, v2) if (!json_is_string(v2) && !json_is_null(v2)) {
                char q[400];
                snprintf(q, sizeof q, "config.%s.%s", key, k2);
                return fail(x, q, "must be a string, got %s", type_name(v2));
            }
        } else if (!json_is_string(val) && !json_is_number(val) && !json_is_boolean(val)) {
            return fail(x, place(p, sizeof p, "config", key), "must be a string, a number or a boolean, got %s",
                        type_name(val));
        }
    }
    return 0;
}

/* Every communicator, each holding some of the job's processes (at most all), indices distinct. */
static int load_comms(ctx *x, const json_t *comms, long world, const char *path, rp_report *out)
{
    size_t n = json_array_size(comms);
    out->comms = ub_xcalloc(n ? n : 1, sizeof *out->comms, "reading %s", path);
    for (size_t i = 0; i < n; i++) {
        out->n_comms++;
        if (load_comm(x, json_array_get(comms, i), (int)i, &out->comms[i]) < 0)
            return -1;
        const rp_comm *c = &out->comms[i];
        char p[48];
        if (c->nranks > world) {
            snprintf(p, sizeof p, "comms[%zu].nranks", i);
            return fail(x, p, "%d ranks in a job of world_size %ld", c->nranks, world);
        }
        if (c->nranks > 0 && (c->rank < 0 || c->rank >= c->nranks)) {
            snprintf(p, sizeof p, "comms[%zu].rank", i);
            return fail(x, p, "%d is not a rank of a communicator of %d", c->rank, c->nranks);
        }
        for (size_t j = 0; j < i; j++)
            if (out->comms[j].index == out->comms[i].index) {
                snprintf(p, sizeof p, "comms[%zu].index", i);
                return fail(x, p, "%d is also comms[%zu]'s index", out->comms[i].index, j);
            }
    }
    return 0;
}

int rp_from_json(json_t *root, const char *path, rp_report *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->path = strdup(path);
    out->root = root;
    ctx x = {path, err, errlen};
    out->nccl = out->cuda_runtime = out->cuda_driver = -1;
    if (check_version(&x, root) < 0)
        return -1;
    long rank = 0, world = 0;
    const json_t *comms, *cfg = NULL, *vers = NULL, *job = NULL, *run = NULL;
    out->run.started_unix = NAN;
    out->run.pid = out->run.device = -1;
    if (get_int(&x, root, "", "rank", true, &rank) < 0 || get_int(&x, root, "", "world_size", true, &world) < 0 ||
        member(&x, root, "", "comms", true, K_ARR, &comms) < 0 ||
        member(&x, root, "", "config", false, K_OBJ, &cfg) < 0 ||
        member(&x, root, "", "versions", false, K_OBJ, &vers) < 0 ||
        member(&x, root, "", "job", false, K_OBJ, &job) < 0 || member(&x, root, "", "run", false, K_OBJ, &run) < 0)
        return -1;
    if (job && get_str(&x, job, "job", "id", false, &out->job_id) < 0)
        return -1;
    if (load_run(&x, run, out) < 0)
        return -1;
    out->config = cfg;
    if (check_config(&x, cfg) < 0)
        return -1;
    if (world < 1 || rank >= world)
        return fail(&x, "rank", "%ld is not a rank of a job of world_size %ld", rank, world);
    out->rank = (int)rank;
    out->world_size = (int)world;
    if (cfg && (get_str(&x, cfg, "config", "USBYTE_MODE", false, &out->mode) < 0 ||
                get_str(&x, cfg, "config", "USBYTE_POLICY", false, &out->policy) < 0))
        return -1;
    if (vers && (get_str(&x, vers, "versions", "usbyte", false, &out->usbyte_version) < 0 ||
                 get_str(&x, vers, "versions", "nccl_library", false, &out->nccl_library) < 0 ||
                 get_str(&x, vers, "versions", "cudart_library", false, &out->cudart_library) < 0 ||
                 get_int(&x, vers, "versions", "nccl", false, &out->nccl) < 0 ||
                 get_int(&x, vers, "versions", "cuda_runtime", false, &out->cuda_runtime) < 0 ||
                 get_int(&x, vers, "versions", "cuda_driver", false, &out->cuda_driver) < 0))
        return -1;
    return load_comms(&x, comms, world, path, out);
}

int rp_load(const char *path, rp_report *out, char *err, size_t errlen)
{
    json_t *root = ub_json_load_file(path, err, errlen);
    if (!root) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    return rp_from_json(root, path, out, err, errlen);
}

void rp_free(rp_report *r)
{
    for (int i = 0; i < r->n_comms; i++) {
        rp_comm *c = &r->comms[i];
        if (c->have_profile)
            ub_profile_free(&c->profile);
        ub_plan_free(&c->plan);
        free(c->reasons);
        free(c->policies);
        free(c->schedule.blocks);
        for (int k = 0; k < c->schedule.n_rec; k++)
            free(c->schedule.rec[k].blocks);
        free(c->schedule.rec);
        if (c->schedule.has_plan)
            ub_plan_free(&c->schedule.plan);
        free(c->verification.candidates);
        free(c->local.ready);
        free(c->local.rec);
    }
    free(r->comms);
    free(r->path);
    json_decref(r->root);
    memset(r, 0, sizeof *r);
}

