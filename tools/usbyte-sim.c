/* usbyte-sim: replays a profile under the timing model of docs/model.md with every policy of the
 * registry (or one), and prints what each would gain.  The command line is docs/model.md's
 * ("The simulator's command line"), plus --svg, --sweep and --synthetic. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "usbyte/io.h"
#include "usbyte/model.h"
#include "usbyte/reference.h"
#include "usbyte/synthetic.h"

#define EXIT_BAD_INPUT 2
#define MAX_SWEEP 64

typedef struct options {
    const char *profile_path;
    int comm;                   /* >= 0: that communicator of a usbyte report; -1: the first planned */
    int synthetic_n;            /* > 0: generate instead of reading a file */
    unsigned long long synthetic_seed;
    int synthetic_layerwise;
    int synthetic_hard;
    const char *policy;         /* NULL or "all": every policy */
    int ranks;                  /* 0: not given */
    const char *net;
    double alpha, beta, copy_beta; /* < 0: not given */
    int json;
    const char *plan_out;
    const char *eval;
    const char *svg;
    int sweep[MAX_SWEEP];
    int n_sweep;
    ub_reference_settings reference; /* the ddp and horovod policies' settings */
    int list_nets;
    const char *net_table;      /* --net-table FILE */
    sim_model_kind model;       /* --model fit|line */
    int model_error;            /* --model-error */
    double interference;        /* --interference F (0: not given) */
} options;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("usbyte-sim: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(EXIT_BAD_INPUT);
}

static void usage(FILE *f)
{
    char nets[256];
    sim_net_names(nets, sizeof(nets));
    fprintf(f,
            "usage: usbyte-sim PROFILE.json [--policy NAME|all] [--ranks P --net PRESET | --alpha S --beta S_PER_BYTE]\n"
            "                  [--copy-beta S_PER_BYTE] [--json] [--plan-out FILE] [--svg FILE]\n"
            "                  [--sweep ranks=P1,P2,... --net PRESET] [--interference F]\n"
            "       usbyte-sim PROFILE.json --eval PLAN.json [--json]\n"
            "       usbyte-sim --synthetic N,SEED[,layerwise][,hard] ...   (a generated profile instead of a file)\n"
            "       usbyte-sim --list-nets [--json]   (the presets' a0, b0 and sources)\n"
            "       usbyte-sim PROFILE.json --net-table FILE.tsv [--model fit|line] [--policy NAME|all] [--json]\n"
            "                  (plans made from the model the runtime would fit on the table, replayed on it)\n"
            "       usbyte-sim PROFILE.json --net-table FILE.tsv --model-error   (the models' errors on the table)\n"
            "the reference policies' settings (defaults as the frameworks'):\n"
            "  --ddp-first-bucket-mb MB (1)  --ddp-bucket-cap-mb MB (25)   DDP's caps, MiB as DDP counts them\n"
            "  --horovod-cycle-ms MS (1)     --horovod-fusion-threshold BYTES (134217728)\n"
            "--interference F: compute runs 1 + F times slower while a block runs (0 <= F <= 1); the profile's times\n"
            "  were measured under its own calls (as the runtime measures them) and are taken apart first\n"
            "PROFILE.json may also be a usbyte report: its first planned communicator's profile, or --comm N\n"
            "policies: ");
    for (int i = 0; i < UB_POLICY_COUNT; i++)
        fprintf(f, "%s%s", i ? ", " : "", ub_policy_name((ub_policy_id)i));
    fprintf(f, " (default: all)\nnet presets: %s (sources in docs/planner.md)\n", nets);
}

static double parse_seconds(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    /* ERANGE on underflow still gives a usable (subnormal or zero) value; only overflow,
     * which returns HUGE_VAL, is out of range. */
    if ((errno && !(errno == ERANGE && isfinite(v))) || end == s || *end || !isfinite(v) || v < 0)
        die("%s: must be a finite number >= 0, got \"%s\"", opt, s);
    return v;
}

static long parse_int(const char *opt, const char *s, long min, long max)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        die("%s: must be an integer from %ld to %ld, got \"%s\"", opt, min, max, s);
    return v;
}

/* A size in MiB as the frameworks take it (DDP: int(bucket_cap_mb * 1024 * 1024)), in bytes. */
static uint64_t parse_mib(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < 0 || v > 1e12)
        die("%s: must be a number of MiB from 0 to 1e12, got \"%s\"", opt, s);
    return (uint64_t)(v * 1048576.0);
}

static uint64_t parse_bytes(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || s[0] == '+')
        die("%s: must be a whole number of bytes, got \"%s\"", opt, s);
    return (uint64_t)v;
}

static void parse_sweep(options *o, const char *arg)
{
    if (strncmp(arg, "ranks=", 6) != 0)
        die("--sweep: expected ranks=P1,P2,..., got \"%s\"", arg);
    char *copy = strdup(arg + 6), *save = NULL;
    if (!copy)
        die("out of memory");
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (o->n_sweep == MAX_SWEEP)
            die("--sweep: at most %d rank counts", MAX_SWEEP);
        o->sweep[o->n_sweep++] = (int)parse_int("--sweep ranks", tok, 1, 1000000);
    }
    free(copy);
    if (o->n_sweep == 0)
        die("--sweep: no rank counts in \"%s\"", arg);
}

/* The most calls a generated profile may have (a real iteration has thousands at most). */
#define MAX_SYNTHETIC_CALLS 10000000

static void parse_synthetic(options *o, const char *arg)
{
    char extra[64] = "";
    char *end;
    errno = 0;
    long n = strtol(arg, &end, 10); /* %d would wrap a number beyond int's range into a valid one */
    int used = 0;
    if (errno || end == arg || *end != ',' || n < 1 || n > MAX_SYNTHETIC_CALLS ||
        sscanf(end + 1, "%llu%n", &o->synthetic_seed, &used) != 1 || end[1] == '-' ||
        (end[1 + used] && (sscanf(end + 1 + used, ",%63s", extra) != 1)))
        die("--synthetic: expected N,SEED[,layerwise][,hard] with N from 1 to %d calls, got \"%s\"",
            MAX_SYNTHETIC_CALLS, arg);
    o->synthetic_n = (int)n;
    char *save = NULL;
    for (char *v = strtok_r(extra, ",", &save); v; v = strtok_r(NULL, ",", &save)) {
        if (!strcmp(v, "layerwise"))
            o->synthetic_layerwise = 1;
        else if (!strcmp(v, "hard"))
            o->synthetic_hard = 1;
        else
            die("--synthetic: unknown variant \"%s\" (layerwise, hard)", v);
    }
}

static void parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof(*o));
    o->alpha = o->beta = o->copy_beta = -1.0;
    o->comm = -1;
    o->reference = ub_reference_get();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
#define VALUE() (i + 1 < argc ? argv[++i] : (die("%s needs a value", a), ""))
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--policy")) {
            o->policy = VALUE();
        } else if (!strcmp(a, "--ranks")) {
            o->ranks = (int)parse_int("--ranks", VALUE(), 1, 1000000);
        } else if (!strcmp(a, "--net")) {
            o->net = VALUE();
        } else if (!strcmp(a, "--alpha")) {
            o->alpha = parse_seconds("--alpha", VALUE());
        } else if (!strcmp(a, "--beta")) {
            o->beta = parse_seconds("--beta", VALUE());
        } else if (!strcmp(a, "--copy-beta")) {
            o->copy_beta = parse_seconds("--copy-beta", VALUE());
        } else if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if (!strcmp(a, "--plan-out")) {
            o->plan_out = VALUE();
        } else if (!strcmp(a, "--eval")) {
            o->eval = VALUE();
        } else if (!strcmp(a, "--svg")) {
            o->svg = VALUE();
        } else if (!strcmp(a, "--sweep")) {
            parse_sweep(o, VALUE());
        } else if (!strcmp(a, "--comm")) {
            o->comm = (int)parse_int("--comm", VALUE(), 0, 1000000);
        } else if (!strcmp(a, "--synthetic")) {
            parse_synthetic(o, VALUE());
        } else if (!strcmp(a, "--ddp-first-bucket-mb")) {
            o->reference.ddp_first_bucket = parse_mib(a, VALUE());
        } else if (!strcmp(a, "--ddp-bucket-cap-mb")) {
            o->reference.ddp_bucket = parse_mib(a, VALUE());
        } else if (!strcmp(a, "--horovod-cycle-ms")) {
            o->reference.horovod_cycle = 1e-3 * parse_seconds(a, VALUE());
        } else if (!strcmp(a, "--horovod-fusion-threshold")) {
            o->reference.horovod_threshold = parse_bytes(a, VALUE());
        } else if (!strcmp(a, "--net-table")) {
            o->net_table = VALUE();
        } else if (!strcmp(a, "--model")) {
            const char *m = VALUE();
            if (!strcmp(m, "fit"))
                o->model = SIM_MODEL_FIT;
            else if (!strcmp(m, "line"))
                o->model = SIM_MODEL_LINE;
            else
                die("--model: expected fit or line, got \"%s\"", m);
        } else if (!strcmp(a, "--interference")) {
            o->interference = parse_seconds(a, VALUE());
            char why[120];
            if (ub_interference_check(o->interference, why, sizeof why) != 0)
                die("--interference: %s", why);
        } else if (!strcmp(a, "--model-error")) {
            o->model_error = 1;
        } else if (!strcmp(a, "--list-nets")) {
            o->list_nets = 1;
        } else if (a[0] == '-' && a[1]) {
            die("unknown option %s (see --help)", a);
        } else if (o->profile_path) {
            die("one profile at a time: got \"%s\" and \"%s\"", o->profile_path, a);
        } else {
            o->profile_path = a;
        }
#undef VALUE
    }
    if (o->list_nets) {
        if (o->profile_path || o->synthetic_n)
            die("--list-nets prints the presets: it takes no profile");
        return;
    }
    if (!o->profile_path && !o->synthetic_n)
        die("no profile given: usbyte-sim PROFILE.json [options] (see --help)");
    if (o->profile_path && o->synthetic_n)
        die("give a profile file or --synthetic, not both");
    if (o->eval && (o->n_sweep || o->plan_out || o->policy))
        die("--eval evaluates one given plan: it does not combine with --policy, --plan-out or --sweep");
    if (o->n_sweep && (o->plan_out || o->svg))
        die("--sweep prints a scaling table: it does not combine with --plan-out or --svg");
    if (o->n_sweep && !o->net)
        die("--sweep needs --net PRESET (it converts the preset for each rank count)");
    if (o->ranks && !o->net)
        die("--ranks needs --net PRESET (with --alpha/--beta the costs are given directly)");
    if (o->net_table && (o->net || o->alpha >= 0 || o->beta >= 0 || o->eval || o->n_sweep || o->svg || o->plan_out))
        die("--net-table gives the network: it does not combine with --net, --alpha, --beta, --eval, --sweep, "
            "--svg or --plan-out");
    if (o->interference > 0 && (o->net_table || o->n_sweep))
        die("--interference does not combine with --net-table or --sweep");
    if (o->model_error && !o->net_table)
        die("--model-error needs --net-table FILE");
}

/* The net the plans are computed under: the profile's, then --net, then --alpha/--beta. */
static void apply_net(const options *o, ub_profile *prof, const char *origin, int ranks_override)
{
    if (o->net) {
        const sim_net *net = sim_net_find(o->net);
        if (!net) {
            char names[256];
            sim_net_names(names, sizeof(names));
            die("--net: unknown preset \"%s\" (known: %s)", o->net, names);
        }
        int ranks = ranks_override ? ranks_override : o->ranks ? o->ranks : prof->ranks;
        if (ranks < 1)
            die("%s: ranks: missing; --net %s needs --ranks P", origin, o->net);
        sim_net_apply(net, ranks, &prof->alpha, &prof->beta);
        prof->curve.n = 0; /* the preset's line is the cost */
        if (!prof->has_net)
            prof->copy_beta = 0.0;
        prof->ranks = ranks;
        prof->has_net = true;
    }
    if (o->alpha >= 0 || o->beta >= 0) {
        if (!prof->has_net && (o->alpha < 0 || o->beta < 0))
            die("%s: net: missing, so --alpha and --beta must both be given", origin);
        if (o->alpha >= 0)
            prof->alpha = o->alpha;
        if (o->beta >= 0)
            prof->beta = o->beta;
        prof->curve.n = 0; /* the given line is the cost */
        if (!prof->has_net)
            prof->copy_beta = 0.0;
        prof->has_net = true;
    }
    if (o->copy_beta >= 0)
        prof->copy_beta = o->copy_beta;
    if (!prof->has_net)
        die("%s: net: missing; give --ranks P --net PRESET or --alpha S --beta S_PER_BYTE", origin);
}

static void load_profile(const options *o, ub_profile *prof, char *origin, size_t origin_len)
{
    char err[1024];
    if (o->synthetic_n) {
        ub_synthetic_opts so = {.n_calls = o->synthetic_n, .seed = o->synthetic_seed,
                                .barrier = !o->synthetic_layerwise, .comm_bound = o->synthetic_hard};
        ub_profile gen;
        if (ub_synthetic_profile(&so, &gen) != 0)
            die("--synthetic: cannot generate %d calls", o->synthetic_n);
        /* A private deep copy, so that this tool frees every profile the same way. */
        if (ub_profile_copy(prof, &gen) != 0)
            die("out of memory copying the synthetic profile");
        ub_synthetic_free(&gen);
        snprintf(origin, origin_len, "synthetic(%d,%llu%s%s)", o->synthetic_n, o->synthetic_seed,
                 o->synthetic_layerwise ? ",layerwise" : "", o->synthetic_hard ? ",hard" : "");
        if (!prof->name)
            prof->name = strdup(origin);
        /* The generator sets a default net; with a preset or --alpha/--beta those win. */
        return;
    }
    snprintf(origin, origin_len, "%s", o->profile_path);
    if (ub_profile_load_comm(o->profile_path, o->comm, prof, err, sizeof(err)) != 0)
        die("%s", err);
}

static int selected(const options *o, int id)
{
    return !o->policy || !strcmp(o->policy, "all") || id == ub_policy_parse(o->policy);
}

static void run_policies(const options *o, const ub_profile *prof, sim_result *res)
{
    int every = !o->policy || !strcmp(o->policy, "all");
    for (int id = 0; id < UB_POLICY_COUNT; id++) {
        res[id].used = every || selected(o, id) || id == UB_POLICY_WFBP; /* wfbp: the speedup reference */
        ub_plan_init(&res[id].plan, ub_policy_name((ub_policy_id)id));
    }
    char err[700];
    if (every) {
        /* The runtime's one planning path (ub_plan_all is built on it). */
        ub_plan plans[UB_POLICY_COUNT];
        for (int id = 0; id < UB_POLICY_COUNT; id++)
            plans[id] = res[id].plan;
        int rc = ub_plan_every(prof, plans, err, sizeof(err));
        for (int id = 0; id < UB_POLICY_COUNT; id++)
            res[id].plan = plans[id];
        if (rc != 0) {
            /* A policy bug, not bad input: say so loudly, never print its numbers as if valid. */
            fprintf(stderr, "usbyte-sim: internal error: %s\n", err);
            exit(3);
        }
        return;
    }
    for (int id = 0; id < UB_POLICY_COUNT; id++) {
        if (!res[id].used)
            continue;
        if (ub_policy_run((ub_policy_id)id, prof, &res[id].plan) != 0)
            die("policy %s failed on this profile", ub_policy_name((ub_policy_id)id));
        if (ub_plan_validate(prof, &res[id].plan, err, sizeof(err)) != 0) {
            fprintf(stderr, "usbyte-sim: internal error: policy %s produced an invalid plan: %s\n",
                    ub_policy_name((ub_policy_id)id), err);
            exit(3);
        }
    }
}

static void free_results(sim_result *res)
{
    for (int id = 0; id < UB_POLICY_COUNT; id++)
        ub_plan_free(&res[id].plan);
}

/* One JSON object on its own line (the object is released). */
static void print_json_line(json_t *obj)
{
    char *s = obj ? json_dumps(obj, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(obj);
    if (!s)
        die("out of memory writing JSON");
    puts(s);
    free(s);
}

static void print_json_plan(const ub_plan *plan, int ranks)
{
    json_t *obj = ub_plan_to_json(plan);
    if (obj && ranks > 0)
        json_object_set_new(obj, "ranks", json_integer(ranks));
    print_json_line(obj);
}

static void print_header(const ub_profile *prof, const char *origin, const options *o)
{
    double fwd = 0;
    for (int s = 0; s < prof->n_forward; s++)
        fwd += prof->forward[s];
    double bytes = 0;
    for (int k = 0; k < prof->n_calls; k++)
        bytes += (double)prof->calls[k].bytes;
    printf("profile %s: %d calls, %.1f MB, backward %.3f ms, forward %.3f ms in %d segment%s\n",
           prof->name ? prof->name : origin, prof->n_calls, bytes / 1e6, prof->backward_end * 1e3, fwd * 1e3,
           prof->n_forward, prof->n_forward == 1 ? "" : "s");
    printf("net: alpha %.3f us, beta %.4g s/B (%.2f GB/s), copy_beta %.3g s/B", prof->alpha * 1e6, prof->beta,
           prof->beta > 0 ? 1e-9 / prof->beta : INFINITY, prof->copy_beta);
    if (prof->curve.n > 0)
        printf(", a curve of %d segments (the cost; alpha and beta are the line)", prof->curve.n);
    if (o->net)
        printf(" [--net %s, %d ranks]", o->net, prof->ranks);
    else if (o->alpha >= 0 || o->beta >= 0)
        printf(" [--alpha/--beta]");
    else
        printf(" [from the profile]");
    printf("\n");
}

/* a / b for speedups: equal times are 1x even when both are 0 (an all-zero profile). */
static double speedup(double a, double b)
{
    if (b > 0)
        return a / b;
    return a == b ? 1.0 : INFINITY;
}

/* The relative gap of an iteration to the bound, 0 when both are 0; rounding of the same sum in
 * a different order (below 1e-9) is not a gap. */
static double gap_to(double iteration, double lb)
{
    double gap = lb > 0 ? iteration / lb - 1.0 : iteration == lb ? 0.0 : INFINITY;
    return gap < 0 && gap > -1e-9 ? 0.0 : gap;
}

/* Costs so large that an iteration time overflows a double cannot be planned meaningfully:
 * one line naming them, instead of tables of inf and nan. */
/* Times a profile can hold: a million seconds (11.6 days) for one iteration's parts is beyond any
 * job; a larger one is a damaged file, whose numbers would print with hundreds of digits. */
#define MAX_PROFILE_SECONDS 1e6

/* What docs/model.md requires beyond what the profile's reader checks: times a job can measure,
 * and every call ready by the end of the backward pass (backward_end is the latest ready). */
static void check_times(const ub_profile *prof, const char *origin)
{
    double total = prof->backward_end + prof->gap;
    for (int s = 0; s < prof->n_forward; s++)
        total += prof->forward[s];
    if (!(total <= MAX_PROFILE_SECONDS))
        die("%s: backward_end %g s, gap %g s and the forward segments add up to %g s: not an iteration a job "
            "measures (at most %g s)", origin, prof->backward_end, prof->gap, total, MAX_PROFILE_SECONDS);
    for (int k = 0; k < prof->n_calls; k++)
        if (prof->calls[k].ready > prof->backward_end)
            die("%s: calls[%d].ready %g s is after backward_end %g s (every gradient is ready by the end of the "
                "backward pass: docs/model.md)", origin, k, prof->calls[k].ready, prof->backward_end);
}

static void check_finite(const ub_profile *prof, const char *origin)
{
    if (!ub_profile_times_finite(prof))
        die("%s: alpha %g s, beta %g s/B and copy_beta %g s/B make this profile's times overflow a double",
            origin, prof->alpha, prof->beta, prof->copy_beta);
}

static void print_table(const ub_profile *prof, const sim_result *res)
{
    double lb = ub_lower_bound(prof);
    double wfbp = res[UB_POLICY_WFBP].plan.iteration;
    printf("%-14s %13s %8s %9s %7s %10s  %s\n", "policy", "iteration_ms", "x_wfbp", "gap_to_lb", "blocks", "plan_ms",
           "params");
    for (int id = 0; id < UB_POLICY_COUNT; id++) {
        if (!res[id].used)
            continue;
        const ub_plan *p = &res[id].plan;
        printf("%-14s %13.3f %7.3fx %8.2f%% %7u %10.3f  %s\n", p->policy, p->iteration * 1e3,
               speedup(wfbp, p->iteration), 100.0 * gap_to(p->iteration, lb), p->n_blocks, p->plan_seconds * 1e3,
               p->params);
    }
    printf("%-14s %13.3f\n", "lower bound", lb * 1e3);
}

/* The fastest selected plan (ties: registry order), for --plan-out with several policies. */
static const ub_plan *fastest(const options *o, const sim_result *res)
{
    const ub_plan *best = NULL;
    for (int id = 0; id < UB_POLICY_COUNT; id++)
        if (res[id].used && selected(o, id) && (!best || res[id].plan.iteration < best->iteration))
            best = &res[id].plan;
    return best;
}

static int do_eval(const options *o, const ub_profile *prof)
{
    char err[1024];
    ub_plan plan;
    ub_plan_init(&plan, "");
    if (ub_plan_load(o->eval, &plan, err, sizeof(err)) != 0)
        die("%s", err);
    if (ub_plan_validate(prof, &plan, err, sizeof(err)) != 0)
        die("%s: %s", o->eval, err);
    double spent = plan.plan_seconds;
    ub_evaluate(prof, &plan, NULL);
    plan.plan_seconds = spent;
    if (o->json) {
        print_json_plan(&plan, 0);
    } else {
        ub_plan ref;
        ub_plan_init(&ref, "wfbp");
        ub_policy_run(UB_POLICY_WFBP, prof, &ref);
        printf("%-14s %13s %8s %9s %7s\n", "plan", "iteration_ms", "x_wfbp", "gap_to_lb", "blocks");
        printf("%-14s %13.3f %7.3fx %8.2f%% %7u\n", plan.policy[0] ? plan.policy : "(unnamed)", plan.iteration * 1e3,
               speedup(ref.iteration, plan.iteration), 100.0 * gap_to(plan.iteration, plan.lower_bound), plan.n_blocks);
        ub_plan_free(&ref);
    }
    if (o->svg) {
        const ub_plan *one = &plan;
        if (sim_svg_write(o->svg, prof, &one, 1, o->eval, err, sizeof(err)) != 0)
            die("%s", err);
    }
    ub_plan_free(&plan);
    return 0;
}

static int do_sweep(const options *o, ub_profile *prof, const char *origin)
{
    sim_result res[UB_POLICY_COUNT];
    if (!o->json) {
        printf("profile %s on --net %s: iteration ms (speedup over wfbp)\n", prof->name ? prof->name : origin, o->net);
        printf("%6s", "ranks");
        for (int id = 0; id < UB_POLICY_COUNT; id++)
            if (selected(o, id) || id == UB_POLICY_WFBP)
                printf(" %20s", ub_policy_name((ub_policy_id)id));
        printf(" %10s\n", "lower_bnd");
    }
    for (int r = 0; r < o->n_sweep; r++) {
        apply_net(o, prof, origin, o->sweep[r]);
        check_finite(prof, origin);
        run_policies(o, prof, res);
        if (o->json) {
            for (int id = 0; id < UB_POLICY_COUNT; id++)
                if (res[id].used)
                    print_json_plan(&res[id].plan, o->sweep[r]);
        } else {
            double wfbp = res[UB_POLICY_WFBP].plan.iteration;
            printf("%6d", o->sweep[r]);
            for (int id = 0; id < UB_POLICY_COUNT; id++)
                if (res[id].used) {
                    char cell[40];
                    snprintf(cell, sizeof(cell), "%.3f (%.3fx)", res[id].plan.iteration * 1e3,
                             speedup(wfbp, res[id].plan.iteration));
                    printf(" %20s", cell);
                }
            printf(" %10.3f\n", ub_lower_bound(prof) * 1e3);
        }
        free_results(res);
    }
    return 0;
}

/* The presets, for scripts that derive links from them (tests/bench/schedule.py, make demo). */
static int do_list_nets(const options *o)
{
    for (int i = 0; i < sim_n_nets; i++) {
        const sim_net *n = &sim_nets[i];
        if (o->json) {
            print_json_line(
                json_pack("{s:s, s:f, s:f, s:s}", "name", n->name, "a0", n->a0, "b0", n->b0, "source", n->source));
        } else {
            printf("%-10s a0 %.4g us per ring step, b0 %.4g s/B (%.3g GB/s)\n", n->name, n->a0 * 1e6, n->b0,
                   1e-9 / n->b0);
        }
    }
    return 0;
}

/* --net-table: plans made from the model fitted on the table (as the runtime fits it), each
 * replayed on the table itself. */
static int do_net_table(const options *o, ub_profile *prof, const char *origin)
{
    char err[1024];
    sim_net_table t;
    if (sim_net_table_load(o->net_table, &t, err, sizeof(err)) != 0)
        die("%s", err);
    if (o->copy_beta >= 0)
        prof->copy_beta = o->copy_beta;
    else if (!prof->has_net)
        prof->copy_beta = 0.0;
    int probes = 0;
    if (sim_model_from_table(prof, &t, o->model_error ? SIM_MODEL_FIT : o->model, &probes) != 0)
        die("out of memory fitting the model");
    ub_profile truth;
    sim_table_profile(prof, &t, &truth);
    if (o->model_error) {
        /* The range of the sizes a DDP job's plans issue, and the single lines of the past. */
        const double lo = 65536, hi = 67108864;
        ub_profile bucket = *prof, best = *prof, calls_line = *prof;
        sim_model_from_table(&calls_line, &t, SIM_MODEL_LINE, NULL);
        sim_line_on_rows(&t, 16777216, 67108864, &bucket);
        sim_line_on_rows(&t, lo, hi, &best);
        struct {
            const char *what;
            const ub_profile *m;
            bool held_out;
        } rows[] = {{"line fitted on 16-64 MiB", &bucket, false},
                    {"best line over 64 KiB-64 MiB", &best, false},
                    {"line on the calls' sizes", &calls_line, false},
                    {"model (calls + calibration)", prof, false},
                    {"model, rows not sampled", prof, true}};
        if (!o->json)
            printf("%s on %s (%s column, %d rows; %d calibration sizes): relative error over 64 KiB-64 MiB\n",
                   prof->name ? prof->name : origin, o->net_table, t.has_inplace ? "in-place" : "out-of-place", t.n,
                   probes);
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
            sim_error e;
            sim_model_error(rows[i].m, &t, lo, hi, rows[i].held_out, &e);
            int segs = rows[i].m->curve.n ? rows[i].m->curve.n : 1;
            if (o->json) {
                print_json_line(json_pack("{s:s, s:f, s:f, s:i, s:i, s:i}", "model", rows[i].what, "median",
                                          e.median, "max", e.max, "rows", e.rows, "segments", segs,
                                          "calibration_sizes", probes));
            } else {
                printf("%-30s median %7.2f%%  max %7.2f%%  (%d rows, %d segments)\n", rows[i].what, 100 * e.median,
                       100 * e.max, e.rows, segs);
            }
        }
        return 0;
    }
    check_finite(prof, origin);
    sim_result res[UB_POLICY_COUNT];
    run_policies(o, prof, res);
    if (!o->json) {
        printf("profile %s on %s: plans from the %s (%d segment%s, %d calibration sizes), replayed on the table\n",
               prof->name ? prof->name : origin, o->net_table, o->model == SIM_MODEL_FIT ? "fitted model" : "line",
               prof->curve.n ? prof->curve.n : 1, prof->curve.n > 1 ? "s" : "", probes);
        printf("%-14s %13s %13s %9s %9s %7s\n", "policy", "predicted_ms", "on_curve_ms", "error", "x_wfbp", "blocks");
    }
    double wfbp = ub_evaluate_const(&truth, &res[UB_POLICY_WFBP].plan, NULL);
    for (int id = 0; id < UB_POLICY_COUNT; id++) {
        if (!res[id].used || (o->json && !selected(o, id)))
            continue;
        const ub_plan *p = &res[id].plan;
        double on = ub_evaluate_const(&truth, p, NULL);
        if (o->json) {
            print_json_line(json_pack("{s:s, s:f, s:f, s:i}", "policy", p->policy, "predicted_iteration",
                                      p->iteration, "curve_iteration", on, "blocks", (int)p->n_blocks));
        } else {
            printf("%-14s %13.3f %13.3f %8.2f%% %8.3fx %7u\n", p->policy, p->iteration * 1e3, on * 1e3,
                   100.0 * (p->iteration / on - 1.0), speedup(wfbp, on), p->n_blocks);
        }
    }
    free_results(res);
    return 0;
}

int main(int argc, char **argv)
{
    options o;
    parse_args(argc, argv, &o);
    if (o.list_nets)
        return do_list_nets(&o);
    ub_reference_set(&o.reference);
    if (o.policy && strcmp(o.policy, "all") != 0 && ub_policy_parse(o.policy) < 0) {
        char names[512] = "";
        size_t used = 0;
        for (int i = 0; i < UB_POLICY_COUNT && used < sizeof(names); i++)
            used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s", i ? ", " : "",
                                     ub_policy_name((ub_policy_id)i));
        die("--policy: unknown policy \"%s\" (known: %s, all)", o.policy, names);
    }
    ub_profile prof;
    char origin[512];
    load_profile(&o, &prof, origin, sizeof(origin));
    check_times(&prof, origin);
    if (o.net_table) {
        do_net_table(&o, &prof, origin);
        ub_profile_free(&prof);
        return 0;
    }
    if (o.n_sweep) {
        do_sweep(&o, &prof, origin);
        ub_profile_free(&prof);
        return 0;
    }
    apply_net(&o, &prof, origin, 0);
    check_finite(&prof, origin);
    if (o.interference > 0 && ub_profile_unstretch(&prof, o.interference) != 0)
        die("%s: --interference: the profile carries interference %g already", origin, prof.interference);
    if (o.eval) {
        do_eval(&o, &prof);
        ub_profile_free(&prof);
        return 0;
    }
    sim_result res[UB_POLICY_COUNT];
    run_policies(&o, &prof, res);
    if (o.json) {
        for (int id = 0; id < UB_POLICY_COUNT; id++)
            if (res[id].used && selected(&o, id))
                print_json_plan(&res[id].plan, 0);
    } else {
        print_header(&prof, origin, &o);
        print_table(&prof, res);
    }
    char err[1024];
    if (o.plan_out) {
        const ub_plan *p = fastest(&o, res);
        if (ub_plan_save(o.plan_out, p, err, sizeof(err)) != 0)
            die("%s", err);
    }
    if (o.svg) {
        const ub_plan *plans[UB_POLICY_COUNT];
        int n = 0;
        for (int id = 0; id < UB_POLICY_COUNT; id++)
            if (res[id].used && selected(&o, id))
                plans[n++] = &res[id].plan;
        char sub[256];
        snprintf(sub, sizeof(sub), "alpha %.1f us, beta %.3g s/B%s%s", prof.alpha * 1e6, prof.beta,
                 o.net ? ", net " : "", o.net ? o.net : "");
        if (sim_svg_write(o.svg, &prof, plans, n, sub, err, sizeof(err)) != 0)
            die("%s", err);
    }
    free_results(res);
    ub_profile_free(&prof);
    return 0;
}
