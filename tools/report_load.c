/* Loading and checking the runtime's report JSON (docs/runtime.md), comparing the ranks of a job,
 * and the hints shown next to each verdict reason.  The reader is strict about what the page
 * shows (a wrong type is an error naming its place, never a blank cell) and ignores the rest. */
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
typedef enum { K_NUM, K_INT, K_STR, K_OBJ, K_ARR } kind;

static bool is_kind(const json_t *v, kind k)
{
    switch (k) {
    case K_NUM: return json_is_number(v) && isfinite(json_number_value(v)) && json_number_value(v) >= 0;
    case K_INT: return json_is_integer(v) && json_integer_value(v) >= 0;
    case K_STR: return json_is_string(v);
    case K_OBJ: return json_is_object(v);
    case K_ARR: return json_is_array(v);
    }
    return false;
}

/* Member `key` of obj, of kind k: 0 with *out set; 1 when it is absent or null and not
 * required (*out untouched); -1 with the message otherwise. */
static const char *const want[] = {"a non-negative number", "a non-negative integer", "a string", "an object",
                                   "an array"};

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

static int load_plan(ctx *x, const json_t *c, const char *base, rp_comm *out)
{
    const json_t *pj;
    int rc = member(x, c, base, "plan", false, K_OBJ, &pj);
    if (rc)
        return rc < 0 ? -1 : 0;
    char b[64], origin[1200], err[1024];
    snprintf(b, sizeof b, "%s.plan", base);
    if (!out->have_profile)
        return fail(x, b, "a plan without a profile");
    snprintf(origin, sizeof origin, "%s: %s", x->path, b);
    if (ub_plan_from_json(pj, origin, &out->plan, err, sizeof err) != 0) {
        snprintf(x->err, x->errlen, "%s", err); /* already names the file and the place */
        return -1;
    }
    if (ub_plan_validate(&out->profile, &out->plan, err, sizeof err) != 0)
        return fail(x, b, "%s", err);
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

static int load_schedule(ctx *x, const json_t *c, const char *base, rp_schedule *s)
{
    const json_t *sj, *blocks = NULL;
    int rc = member(x, c, base, "schedule", false, K_OBJ, &sj);
    if (rc)
        return rc < 0 ? -1 : 0;
    char b[64], p[160], where[96];
    size_t n = 0;
    snprintf(b, sizeof b, "%s.schedule", base);
    /* A measurement not taken yet (too few scheduled iterations) is null: shown as a dash. */
    s->measured_iteration = s->measured_pass_through = s->measured_speedup = s->predicted_speedup = NAN;
    if (get_int(x, sj, b, "iterations", true, &s->iterations) < 0 ||
        get_num(x, sj, b, "measured_iteration", false, &s->measured_iteration) < 0 ||
        get_num(x, sj, b, "predicted_iteration", true, &s->predicted_iteration) < 0 ||
        get_num(x, sj, b, "measured_pass_through", false, &s->measured_pass_through) < 0 ||
        get_num(x, sj, b, "measured_speedup", false, &s->measured_speedup) < 0 ||
        get_num(x, sj, b, "predicted_speedup", false, &s->predicted_speedup) < 0 ||
        get_int(x, sj, b, "deviations", false, &s->deviations) < 0 ||
        get_int(x, sj, b, "flushes", false, &s->flushes) < 0 ||
        get_int(x, sj, b, "staging_bytes", false, &s->staging_bytes) < 0 ||
        get_str(x, sj, b, "completion", false, &s->completion) < 0 ||
        array(x, sj, b, "blocks", &blocks, &n, &s->blocks, sizeof *s->blocks, where, sizeof where) < 0)
        return -1;
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
    s->present = true;
    return 0;
}

static int load_comm(ctx *x, const json_t *c, int i, rp_comm *out)
{
    char b[32], p[64];
    snprintf(b, sizeof b, "comms[%d]", i);
    out->json = c;
    ub_plan_init(&out->plan, "");
    out->optimal = -1;
    if (!json_is_object(c))
        return fail(x, b, "must be an object, got %s", type_name(c));
    long index = i, rank = 0, nranks = 0;
    if (get_int(x, c, b, "index", false, &index) < 0 || get_int(x, c, b, "rank", false, &rank) < 0 ||
        get_int(x, c, b, "nranks", false, &nranks) < 0 || get_str(x, c, b, "state", true, &out->state) < 0 ||
        get_str(x, c, b, "state_reason", false, &out->state_reason) < 0 ||
        get_int(x, c, b, "calls_per_iteration", false, &out->calls_per_iteration) < 0 ||
        get_int(x, c, b, "nccl_calls_per_iteration", false, &out->nccl_calls_per_iteration) < 0 ||
        get_int(x, c, b, "iterations_observed", false, &out->iterations_observed) < 0 ||
        get_int(x, c, b, "warmup_iterations", false, &out->warmup) < 0 ||
        get_num(x, c, b, "measured_iteration", false, &out->measured_iteration) < 0)
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
        load_plan(x, c, b, out) < 0 || load_schedule(x, c, b, &out->schedule) < 0)
        return -1;
    if (out->schedule.present && !out->have_plan)
        return fail(x, place(p, sizeof p, b, "schedule"), "schedule measurements without a plan");
    return 0;
}

int rp_from_json(json_t *root, const char *path, rp_report *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->path = strdup(path);
    out->root = root;
    ctx x = {path, err, errlen};
    out->nccl = out->cuda_runtime = out->cuda_driver = -1;
    if (!json_is_object(root))
        return fail(&x, "", "not a usbyte report: the document is %s, not an object", type_name(root));
    const json_t *ver = json_object_get(root, "usbyte_report");
    if (!ver) {
        if (json_object_get(root, "usbyte_profile"))
            return fail(&x, "", "a usbyte profile, not a report (replay it with usbyte-sim)");
        return fail(&x, "", "not a usbyte report (no \"usbyte_report\" key)");
    }
    if (!json_is_integer(ver))
        return fail(&x, "usbyte_report", "must be an integer version, got %s", type_name(ver));
    if (json_integer_value(ver) != RP_VERSION)
        return fail(&x, "usbyte_report", "version %lld is not supported (this usbyte-report reads version %d)",
                    (long long)json_integer_value(ver), RP_VERSION);
    long rank = 0, world = 0;
    const json_t *comms, *cfg = NULL, *vers = NULL;
    if (get_int(&x, root, "", "rank", true, &rank) < 0 || get_int(&x, root, "", "world_size", true, &world) < 0 ||
        member(&x, root, "", "comms", true, K_ARR, &comms) < 0 ||
        member(&x, root, "", "config", false, K_OBJ, &cfg) < 0 ||
        member(&x, root, "", "versions", false, K_OBJ, &vers) < 0)
        return -1;
    if (world < 1 || rank >= world)
        return fail(&x, "rank", "%ld is not a rank of a job of world_size %ld", rank, world);
    out->rank = (int)rank;
    out->world_size = (int)world;
    if (cfg && (get_str(&x, cfg, "config", "USBYTE_MODE", false, &out->mode) < 0 ||
                get_str(&x, cfg, "config", "USBYTE_POLICY", false, &out->policy) < 0))
        return -1;
    if (vers && (get_str(&x, vers, "versions", "usbyte", false, &out->usbyte_version) < 0 ||
                 get_int(&x, vers, "versions", "nccl", false, &out->nccl) < 0 ||
                 get_int(&x, vers, "versions", "cuda_runtime", false, &out->cuda_runtime) < 0 ||
                 get_int(&x, vers, "versions", "cuda_driver", false, &out->cuda_driver) < 0))
        return -1;
    size_t n = json_array_size(comms);
    out->comms = ub_xcalloc(n ? n : 1, sizeof *out->comms, "reading %s", path);
    for (size_t i = 0; i < n; i++) {
        out->n_comms++;
        if (load_comm(&x, json_array_get(comms, i), (int)i, &out->comms[i]) < 0)
            return -1;
        for (size_t j = 0; j < i; j++)
            if (out->comms[j].index == out->comms[i].index) {
                char p[48];
                snprintf(p, sizeof p, "comms[%zu].index", i);
                return fail(&x, p, "%d is also comms[%zu]'s index", out->comms[i].index, j);
            }
    }
    return 0;
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
    }
    free(r->comms);
    free(r->path);
    json_decref(r->root);
    memset(r, 0, sizeof *r);
}

static int by_rank(const void *a, const void *b)
{
    return ((const rp_report *)a)->rank - ((const rp_report *)b)->rank;
}

static int by_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

int rp_job_make(rp_job *job, rp_report *reports, int n, char *err, size_t errlen)
{
    memset(job, 0, sizeof *job);
    job->r = reports;
    job->n = n;
    if (n < 1) {
        snprintf(err, errlen, "no report given");
        return -1;
    }
    qsort(reports, (size_t)n, sizeof *reports, by_rank);
    job->world_size = reports[0].world_size;
    for (int i = 0; i < n; i++) {
        if (reports[i].world_size != job->world_size) {
            snprintf(err, errlen, "%s: world_size: %d, but %s has %d: not one job", reports[i].path,
                     reports[i].world_size, reports[0].path, job->world_size);
            return -1;
        }
        if (i && reports[i].rank == reports[i - 1].rank) {
            snprintf(err, errlen, "%s: rank: %d is also the rank of %s: not one job", reports[i].path,
                     reports[i].rank, reports[i - 1].path);
            return -1;
        }
        for (int k = 0; k < reports[i].n_comms; k++) {
            int id = reports[i].comms[k].index, seen = 0;
            for (int j = 0; j < job->n_comm_ids; j++)
                seen |= job->comm_ids[j] == id;
            if (!seen) {
                job->comm_ids = ub_xrealloc(job->comm_ids, sizeof(int) * (size_t)(job->n_comm_ids + 1), "listing");
                job->comm_ids[job->n_comm_ids++] = id;
            }
        }
    }
    if (job->n_comm_ids)
        qsort(job->comm_ids, (size_t)job->n_comm_ids, sizeof(int), by_int);
    return 0;
}

void rp_job_free(rp_job *job)
{
    for (int i = 0; i < job->n; i++)
        rp_free(&job->r[i]);
    free(job->r);
    free(job->comm_ids);
    memset(job, 0, sizeof *job);
}

const rp_comm *rp_comm_find(const rp_report *r, int index)
{
    for (int i = 0; i < r->n_comms; i++)
        if (r->comms[i].index == index)
            return &r->comms[i];
    return NULL;
}

const rp_comm *rp_job_reference(const rp_job *job, int index, int *ref_report)
{
    for (int i = 0; i < job->n; i++) {
        const rp_comm *c = rp_comm_find(&job->r[i], index);
        if (c) {
            if (ref_report)
                *ref_report = i;
            return c;
        }
    }
    return NULL;
}

static int equal_member(const json_t *a, const json_t *b, const char *key)
{
    const json_t *x = json_object_get(a, key), *y = json_object_get(b, key);
    return (!x && !y) || (x && y && json_equal(x, y));
}

int rp_comm_diff(const rp_comm *ref, const rp_comm *c)
{
    int bits = 0;
    if (strcmp(ref->state, c->state) != 0 ||
        strcmp(ref->state_reason ? ref->state_reason : "", c->state_reason ? c->state_reason : "") != 0)
        bits |= RP_DIFF_STATE;
    if (!equal_member(ref->json, c->json, "profile"))
        bits |= RP_DIFF_PROFILE;
    if (!equal_member(ref->json, c->json, "verdict"))
        bits |= RP_DIFF_VERDICT;
    if (!equal_member(ref->json, c->json, "policies"))
        bits |= RP_DIFF_POLICIES;
    /* The time spent planning is each rank's own measurement; the rest of the plan is agreed. */
    json_t *pa = json_deep_copy(json_object_get(ref->json, "plan")), *pb = json_deep_copy(json_object_get(c->json, "plan"));
    if (json_is_object(pa))
        json_object_del(pa, "plan_seconds");
    if (json_is_object(pb))
        json_object_del(pb, "plan_seconds");
    if (!((!pa && !pb) || (pa && pb && json_equal(pa, pb))))
        bits |= RP_DIFF_PLAN;
    json_decref(pa);
    json_decref(pb);
    return bits;
}

void rp_diff_text(int bits, char *buf, size_t len)
{
    static const struct {
        int bit;
        const char *name;
    } names[] = {{RP_DIFF_STATE, "state"}, {RP_DIFF_PROFILE, "profile"}, {RP_DIFF_VERDICT, "verdict"},
                 {RP_DIFF_PLAN, "plan"}, {RP_DIFF_POLICIES, "policy predictions"}};
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && used < len; i++)
        if (bits & names[i].bit)
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", names[i].name);
}

/* Keyed by a phrase of the runtime's own wording (interpose/agree_rt.c, interpose/state.c,
 * profiler/agree.c): the reasons say what was seen, the hints what to change. */
static const struct {
    const char *phrase, *hint;
} hints[] = {
    {"stream-ordered work", "Horovod: set HOROVOD_FUSION_THRESHOLD=0 (usbyte then does the fusion); elsewhere keep "
                            "copies and kernels off the NCCL stream between allreduces"},
    {"CUPTI", "make libcupti.so loadable on every rank (LD_LIBRARY_PATH=$CUDA_HOME/extras/CUPTI/lib64), keep "
              "USBYTE_CUPTI=1 and run without another CUPTI user (a profiler)"},
    {"statically linked CUDA runtime", "run usbyte-doctor on the framework's libraries: a statically linked CUDA "
                                       "runtime cannot be redirected; use a build that links libcudart.so"},
    {"signature mismatch", "every rank must issue the same allreduce sequence with the same USBYTE_POLICY: run the "
                           "same model and configuration on every rank"},
    {"allreduces per iteration (the agreement", "issue fewer, larger allreduces (e.g. a larger DDP bucket_cap_mb)"},
    {"could not measure", "read that rank's log (USBYTE_LOG=info) for the set-up that failed"},
    {"keeps changing", "the call sequence changed during the warm-up: raise USBYTE_WARMUP or start measuring after "
                       "the changing phase"},
    {"no repeating call sequence", "usbyte needs a repeating iteration: run at least a dozen iterations with the "
                                   "same allreduces each"},
    {"nonblocking communicator", "create the communicator blocking (config.blocking = 1) to let usbyte schedule it"},
    {"destroyed before", "run more iterations before destroying the communicator"},
};

const char *rp_hint(const char *reason)
{
    for (size_t i = 0; reason && i < sizeof hints / sizeof hints[0]; i++)
        if (strstr(reason, hints[i].phrase))
            return hints[i].hint;
    return NULL;
}

void rp_plans(const rp_comm *c, ub_plan plans[UB_POLICY_COUNT])
{
    for (int id = 0; id < UB_POLICY_COUNT; id++) {
        ub_plan_init(&plans[id], ub_policy_name((ub_policy_id)id));
        if (c->have_plan && !strcmp(c->plan.policy, ub_policy_name((ub_policy_id)id)))
            ub_plan_copy(&plans[id], &c->plan);
        else if (c->have_profile && c->profile.has_net && c->profile.n_calls > 0 &&
                 ub_policy_run((ub_policy_id)id, &c->profile, &plans[id]) != 0)
            ub_plan_clear(&plans[id]);
    }
}

void rp_plans_free(ub_plan plans[UB_POLICY_COUNT])
{
    for (int id = 0; id < UB_POLICY_COUNT; id++)
        ub_plan_free(&plans[id]);
}
