/* The reports of a job: telling jobs apart, checking that the ranks agree (what the page, the
 * summary and the exit status all report, from one list), what the headline says, the hints
 * shown next to each reason and the one-line description of each policy. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "usbyte/alloc.h"
#include "usbyte/config_agree.h"
#include "usbyte/model.h"

/* ---- jobs ---- */

static int find_root(int *parent, int i)
{
    while (parent[i] != i)
        i = parent[i] = parent[parent[i]];
    return i;
}

/* Does report a name identity id (a communicator's or the job's)? */
static bool names(const rp_report *a, const char *id)
{
    if (a->job_id && !strcmp(a->job_id, id))
        return true;
    for (int k = 0; k < a->n_comms; k++)
        if (a->comms[k].id && !strcmp(a->comms[k].id, id))
            return true;
    return false;
}

static bool has_identity(const rp_report *a)
{
    if (a->job_id)
        return true;
    for (int k = 0; k < a->n_comms; k++)
        if (a->comms[k].id)
            return true;
    return false;
}

int rp_group_jobs(const rp_report *reports, int n, int *group)
{
    int *parent = ub_xcalloc((size_t)(n ? n : 1), sizeof *parent, "grouping reports");
    for (int i = 0; i < n; i++)
        parent[i] = i;
    int anonymous = -1;
    for (int i = 0; i < n; i++) {
        const rp_report *a = &reports[i];
        if (!has_identity(a)) {
            /* Written without identities: one job, as far as this tool can tell. */
            if (anonymous < 0)
                anonymous = i;
            else
                parent[find_root(parent, i)] = find_root(parent, anonymous);
            continue;
        }
        for (int j = 0; j < i; j++) {
            bool shared = a->job_id && names(&reports[j], a->job_id);
            for (int k = 0; !shared && k < a->n_comms; k++)
                shared = a->comms[k].id && names(&reports[j], a->comms[k].id);
            if (shared)
                parent[find_root(parent, i)] = find_root(parent, j);
        }
    }
    int jobs = 0;
    int *number = ub_xcalloc((size_t)(n ? n : 1), sizeof *number, "grouping reports");
    for (int i = 0; i < n; i++)
        number[i] = -1;
    for (int i = 0; i < n; i++) {
        int root = find_root(parent, i);
        if (number[root] < 0)
            number[root] = jobs++;
        group[i] = number[root];
    }
    free(number);
    free(parent);
    return jobs;
}

/* ---- the ranks of one job ---- */

static int by_rank(const void *a, const void *b)
{
    return ((const rp_report *)a)->rank - ((const rp_report *)b)->rank;
}

static int by_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* The settings the runtime agrees on (both lists of include/usbyte/config_agree.h): a difference
 * keeps every rank in pass-through. */
const char *const rp_agreed_settings[] = {
#define X(field, var) var,
    UB_CFG_AGREE_LIST(X) UB_AGREE_SETTING_LIST(X)
#undef X
};
const int rp_n_agreed_settings = sizeof rp_agreed_settings / sizeof rp_agreed_settings[0];

const char *rp_setting(const rp_report *r, const char *name, char *buf, size_t len)
{
    const json_t *v = r->config ? json_object_get(r->config, name) : NULL;
    if (json_is_string(v))
        snprintf(buf, len, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, len, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, len, "%g", json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(buf, len, "%d", json_is_true(v) ? 1 : 0);
    else
        return NULL;
    return buf;
}

/* A growing text (never cut). */
typedef struct text {
    char *s;
    size_t n, cap;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (t->n + (size_t)n + 1 > t->cap) {
        t->cap = 2 * (t->n + (size_t)n + 1);
        t->s = ub_xrealloc(t->s, t->cap, "describing the ranks");
    }
    va_start(ap, fmt);
    vsnprintf(t->s + t->n, t->cap - t->n, fmt, ap);
    va_end(ap);
    t->n += (size_t)n;
}

char *rp_rank_ranges(const rp_job *job, const bool *on)
{
    /* Each rank at most ", " and its digits: 14 characters. */
    size_t cap = 14 * (size_t)job->n + 1, n = 0;
    char *out = ub_xrealloc(NULL, cap, "listing");
    out[0] = '\0';
    bool first = true;
    for (int i = 0; i < job->n; i++) {
        if (!on[i])
            continue;
        int j = i;
        while (j + 1 < job->n && on[j + 1] && job->r[j + 1].rank == job->r[j].rank + 1)
            j++;
        n += (size_t)snprintf(out + n, cap - n, "%s%d", first ? "" : ", ", job->r[i].rank);
        if (j > i)
            n += (size_t)snprintf(out + n, cap - n, "%s%d", j == i + 1 ? ", " : "-", job->r[j].rank);
        first = false;
        i = j;
    }
    return out;
}

/* "ranks 0-2, 5" for the ranks of the reports whose flag is set. */
static void put_ranks(text *t, const rp_job *job, const bool *on)
{
    int count = 0;
    for (int i = 0; i < job->n; i++)
        count += on[i];
    char *ranges = rp_rank_ranges(job, on);
    put(t, "rank%s %s", count == 1 ? "" : "s", ranges);
    free(ranges);
}

static void add_problem(rp_job *job, int comm, int rank, int bits, char *owned)
{
    job->problems = ub_xrealloc(job->problems, sizeof *job->problems * (size_t)(job->n_problems + 1), "listing");
    job->problems[job->n_problems++] = (rp_problem){comm, rank, bits, owned};
}

/* A value every rank must share and some do not: one problem naming each value and its ranks. */
static void compare_values(rp_job *job, const char *what, const char *(*get)(const rp_report *, const char *, char *,
                                                                                size_t),
                           const char *name, const char *why)
{
    char **vals = ub_xcalloc((size_t)job->n, sizeof *vals, "comparing");
    char buf[600];
    bool differ = false;
    for (int i = 0; i < job->n; i++) {
        const char *v = get(&job->r[i], name, buf, sizeof buf);
        vals[i] = strdup(v ? v : "(not in the report)");
        differ |= i > 0 && strcmp(vals[i], vals[0]) != 0;
    }
    if (differ) {
        text t = {0};
        put(&t, "%s differs between the ranks: ", what);
        bool *done = ub_xcalloc((size_t)job->n, sizeof *done, "comparing"), *on = ub_xcalloc((size_t)job->n, sizeof *on, "comparing");
        bool first = true;
        for (int i = 0; i < job->n; i++) {
            if (done[i])
                continue;
            for (int j = 0; j < job->n; j++)
                done[j] |= on[j] = !strcmp(vals[j], vals[i]);
            put(&t, "%s%s on ", first ? "" : "; ", vals[i]);
            put_ranks(&t, job, on);
            first = false;
        }
        put(&t, " (%s)", why);
        add_problem(job, -1, -1, 0, t.s);
        free(done);
        free(on);
    }
    for (int i = 0; i < job->n; i++)
        free(vals[i]);
    free(vals);
}

static const char *usbyte_version(const rp_report *r, const char *unused, char *buf, size_t len)
{
    (void)unused;
    if (!r->usbyte_version)
        return NULL;
    snprintf(buf, len, "%s", r->usbyte_version);
    return buf;
}

static void find_problems(rp_job *job)
{
    for (int k = 0; k < rp_n_agreed_settings; k++)
        compare_values(job, rp_agreed_settings[k], rp_setting, rp_agreed_settings[k],
                       "every rank must run with the same value");
    compare_values(job, "The usbyte version", usbyte_version, NULL, "every rank must load the same libusbyte.so");
    for (int k = 0; k < job->n_comm_ids; k++) {
        int id = job->comm_ids[k], ref_i = 0;
        const rp_comm *ref = rp_job_reference(job, id, &ref_i);
        for (int i = 0; i < job->n; i++) {
            const rp_comm *c = rp_comm_find(&job->r[i], id);
            int bits = c ? rp_comm_diff(ref, c) : 0;
            if (c && !bits)
                continue;
            text t = {0};
            if (!c) {
                put(&t, "rank %d has no communicator %d", job->r[i].rank, id);
            } else {
                char what[128];
                rp_diff_text(bits, what, sizeof what);
                put(&t, "communicator %d: rank %d's %s differ%s from rank %d's (they are agreed: a difference is a bug)",
                    id, job->r[i].rank, what, strchr(what, ',') ? "" : "s", job->r[ref_i].rank);
            }
            add_problem(job, id, job->r[i].rank, bits, t.s);
        }
    }
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
    find_problems(job);
    return 0;
}

void rp_job_free(rp_job *job)
{
    for (int i = 0; i < job->n; i++)
        rp_free(&job->r[i]);
    free(job->r);
    free(job->comm_ids);
    for (int i = 0; i < job->n_problems; i++)
        free(job->problems[i].text);
    free(job->problems);
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

/* ---- what the page says ---- */

/* The state reason that only points at the verdict's reasons (the runtime's wording). */
static bool points_at_verdict(const char *reason)
{
    return reason && strstr(reason, "the verdict says why") != NULL;
}

bool rp_repeats(const char *shown, const char *reason)
{
    if (!shown || !reason)
        return false;
    const char *s = strncmp(shown, "not schedulable: ", 17) == 0 ? shown + 17 : shown;
    size_t n = strlen(s);
    return n > 0 && strncmp(reason, s, n) == 0;
}

/* Does a state reason only repeat (whole, or cut by an older runtime) one of the verdict's? */
static bool repeats_a_reason(const rp_comm *c)
{
    for (int i = 0; i < c->n_reasons; i++)
        if (rp_repeats(c->state_reason, c->reasons[i]) && strcmp(c->state_reason, c->reasons[i]) != 0)
            return true;
    return false;
}

/* Would schedule mode leave the calls alone because the plan gains too little? */
static bool below_min_gain(const rp_report *r, const rp_comm *c)
{
    char buf[64];
    const char *pct = rp_setting(r, "USBYTE_MIN_GAIN_PCT", buf, sizeof buf);
    double wfbp = NAN;
    for (int i = 0; i < c->n_policies; i++)
        if (!strcmp(c->policies[i].name, "wfbp"))
            wfbp = c->policies[i].iteration;
    return pct && c->have_plan && wfbp / c->plan_reported < 1.0 + atof(pct) / 100.0;
}

rp_outcome rp_comm_outcome(const rp_report *r, const rp_comm *c, const char **why, int *bad)
{
    *bad = 0;
    *why = NULL;
    const rp_schedule *s = &c->schedule;
    if (s->present && (s->iterations > 0 || !strcmp(c->state, "schedule")))
        return RP_SCHEDULED;
    bool observe = r->mode && !strcmp(r->mode, "observe");
    bool pass = !strcmp(c->state, "pass-through") || !strcmp(c->state, "disabled");
    bool measuring = !strcmp(c->state, "detect") || !strcmp(c->state, "profile") || !strcmp(c->state, "agree");
    bool min_gain = c->state_reason && strstr(c->state_reason, "USBYTE_MIN_GAIN_PCT");
    if (measuring) {
        *why = "still measuring when the report was written: the job ended before the warm-up and the agreement did";
        return observe ? RP_OBSERVED : RP_NOT_SCHEDULED;
    }
    if (observe) {
        *bad = pass || !c->schedulable;
        *why = pass ? "observe mode, and schedule mode could not run a plan either (below)"
               : !c->schedulable ? "observe mode: nothing was changed, and schedule mode would not schedule this "
                                   "communicator (below)"
               : below_min_gain(r, c) ? "observe mode: nothing was changed, and the plan gains less than "
                                        "USBYTE_MIN_GAIN_PCT: schedule mode would leave the calls as they are"
                                      : "observe mode: nothing was changed; schedule mode would run the chosen plan";
        return RP_OBSERVED;
    }
    if (pass) {
        *bad = !min_gain;
        *why = min_gain || (c->state_reason && !points_at_verdict(c->state_reason) && !repeats_a_reason(c))
                   ? c->state_reason
                   : "not schedulable (below)";
        return RP_NOT_SCHEDULED;
    }
    if (!c->schedulable) {
        *bad = 1;
        *why = "not schedulable (below)";
        return RP_NOT_SCHEDULED;
    }
    *why = "the plan had not started when the report was written (the job ended within an iteration of the "
           "agreement, or the profile is being taken again)";
    return RP_NOT_SCHEDULED;
}

/* Keyed by a phrase of the runtime's own wording (interpose/agree_rt.c, the runtime's other files,
 * profiler/agree.c): the reasons say what was seen, the hints what to change.  The first match
 * wins. */
static const struct {
    const char *phrase, *hint;
} hints[] = {
    {"another CUPTI subscriber", "profile without usbyte (leave LD_PRELOAD unset for the profiling run), or run with "
                                 "USBYTE_MODE=observe while profiling: usbyte schedules only a job that no CUPTI "
                                 "profiler or NVIDIA tool watches"},
    {"CUPTI was not available", "install the CUPTI of the job's CUDA (PyTorch's CUDA 12 wheels: nvidia-cuda-cupti-cu12) "
                                "or make libcupti.so loadable on every rank "
                                "(LD_LIBRARY_PATH=$CUDA_HOME/extras/CUPTI/lib64), and keep USBYTE_CUPTI=1"},
    {"stream-ordered compute", "keep kernels off the NCCL stream between allreduces. Horovod: HOROVOD_FUSION_THRESHOLD=0 "
                               "does not remove these kernels; average with ncclAvg (Horovod 0.26 or later built "
                               "against NCCL 2.10 or later) and leave gradient_predivide_factor at 1.0, or pass "
                               "op=hvd.Sum and divide by hvd.size() yourself (scale the loss before backward)"},
    {"stream-ordered work", "Horovod: set HOROVOD_FUSION_THRESHOLD=0 (usbyte then does the fusion); elsewhere keep "
                            "copies and kernels off the NCCL stream between allreduces"},
    {"CUPTI", "make libcupti.so loadable on every rank (LD_LIBRARY_PATH=$CUDA_HOME/extras/CUPTI/lib64), keep "
              "USBYTE_CUPTI=1 and run without another CUPTI user (a profiler)"},
    {"statically linked CUDA runtime", "run usbyte-doctor on the framework's libraries: a statically linked CUDA "
                                       "runtime cannot be redirected; use a build that links libcudart.so"},
    {"run with different settings", "give every rank the same USBYTE_* values (usbyte-run sets them for every process "
                                    "it starts; with mpirun pass them with -x)"},
    {"different usbyte versions", "load the same libusbyte.so on every node"},
    {"signature mismatch", "every rank must issue the same allreduces in the same order: run the same model and "
                           "configuration on every rank"},
    {"allreduces per iteration (the agreement", "issue fewer, larger allreduces (e.g. a larger DDP bucket_cap_mb)"},
    {"could not measure", "read that rank's log (USBYTE_LOG=info) for the set-up that failed"},
    {"keeps changing", "the call sequence changed during the warm-up: raise USBYTE_WARMUP or start measuring after "
                       "the changing phase"},
    {"no repeating call sequence", "usbyte needs a repeating iteration: run at least a dozen iterations with the "
                                   "same allreduces each"},
    {"USBYTE_MIN_GAIN_PCT", "nothing to fix: the plan would gain too little to be worth deferring every call (lower "
                            "USBYTE_MIN_GAIN_PCT to run it anyway)"},
    {"nonblocking communicator", "create the communicator blocking (config.blocking = 1) to let usbyte schedule it"},
    {"destroyed before", "run more iterations before destroying the communicator"},
    {"not profiled yet", "run more iterations: the warm-up needs USBYTE_WARMUP whole iterations after the period is "
                         "found"},
};

const char *rp_hint(const char *reason)
{
    for (size_t i = 0; reason && i < sizeof hints / sizeof hints[0]; i++)
        if (strstr(reason, hints[i].phrase))
            return hints[i].hint;
    return NULL;
}

static const struct {
    const char *name, *about;
} policy_about[] = {
    {"wfbp", "one allreduce per call as soon as it is ready: what NCCL does without usbyte, the reference of every "
             "speedup"},
    {"syncea", "waits for the whole backward pass, then one allreduce of everything (per dtype and operation)"},
    {"mgwfbp", "MG-WFBP's published rule: merges the next call into the current allreduce when that saves a startup"},
    {"mgwfbp-dp", "the best grouping of consecutive calls in arrival order (exact, by dynamic programming)"},
    {"bytescheduler", "ByteScheduler: cuts calls into partitions and sends the one the next forward needs first"},
    {"usbyte", "US-Byte's published algorithm: unequal-sized blocks in priority order; it never merges calls, so "
               "where startups dominate it can do no better than wfbp"},
    {"best", "searches from all the other plans for the shortest predicted iteration"},
    {"ddp", "PyTorch DDP's default buckets (1 MiB first, then 25 MiB) in arrival order: what a DDP job runs without "
            "usbyte"},
    {"ddp-tuned", "PyTorch DDP at the best bucket_cap_mb of a sweep (1 to 1000 MiB, the first bucket 1 MiB or the "
                  "cap): what a DDP user gets by tuning that knob; on calls that are DDP's own buckets it can only "
                  "merge whole buckets"},
    {"horovod", "Horovod's tensor fusion: every cycle (1 ms) the ready calls are fused, up to 128 MiB"},
};

const char *rp_policy_about(const char *name)
{
    for (size_t i = 0; name && i < sizeof policy_about / sizeof policy_about[0]; i++)
        if (!strcmp(policy_about[i].name, name))
            return policy_about[i].about;
    return NULL;
}

double rp_compute_alone(const rp_comm *c)
{
    if (!c->have_profile)
        return NAN;
    const ub_profile *p = &c->profile;
    double t = p->backward_end + p->gap;
    for (int s = 0; s < p->n_forward; s++)
        t += p->forward[s];
    return t;
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
