/* Shared machinery of the framework-shaped trainers (see trainer_common.h). */
#include "trainer_common.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "usbyte/io.h"

static const char *g_name = "trainer";
static int g_rank = -1;

void tr_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (g_rank >= 0)
        fprintf(stderr, "%s rank %d: ", g_name, g_rank);
    else
        fprintf(stderr, "%s: ", g_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

void tr_cuda_check(cudaError_t err, const char *what, const char *file, int line)
{
    if (err != cudaSuccess)
        tr_die("%s:%d: %s failed: %s (%s)", file, line, what, cudaGetErrorName(err), cudaGetErrorString(err));
}

void tr_nccl_check(ncclResult_t res, const char *what, const char *file, int line)
{
    if (res != ncclSuccess)
        tr_die("%s:%d: %s failed: %s", file, line, what, ncclGetErrorString(res));
}

/* ---- command line ---------------------------------------------------------------------- */

static void usage(unsigned accepted, FILE *out)
{
    fprintf(out, "usage: %s --profile PROFILE.json [--iters N] [--time-scale X] [--bytes-scale X]"
                 " [--print-truth FILE] [--stall RANK,FIRST,LAST,MS]", g_name);
    if (accepted & TR_OPT_BUCKETS)
        fprintf(out, " [--bucket-cap-mb MB] [--first-bucket-mb MB]");
    if (accepted & TR_OPT_FUSION)
        fprintf(out, " [--fusion-threshold-mb MB] [--cycle-time-ms MS] [--host-finalizer] [--postscale]");
    if (accepted & TR_OPT_WATCHDOG)
        fprintf(out, " [--watchdog-ms MS]");
    if (accepted & TR_OPT_MISMATCH)
        fprintf(out, " [--mismatch-rank R] [--bcast-rank R] [--group-rank R]");
    fputc('\n', out);
}

static double parse_double(const char *opt, const char *text, double min, bool min_exclusive)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(v) || v < min || (min_exclusive && v == min)) {
        fprintf(stderr, "%s: --%s: expected a number %s %g, got '%s'\n", g_name, opt,
                min_exclusive ? ">" : ">=", min, text);
        exit(2);
    }
    return v;
}

static int parse_int(const char *opt, const char *text, long min, long max)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < min || v > max) {
        fprintf(stderr, "%s: --%s: expected an integer in [%ld, %ld], got '%s'\n", g_name, opt, min, max, text);
        exit(2);
    }
    return (int)v;
}

static int env_int(const char *name, int fallback, int min, int max)
{
    const char *text = getenv(name);
    if (text == NULL || *text == '\0')
        return fallback;
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || *end || v < min || v > max)
        tr_die("environment %s='%s': expected an integer in [%d, %d]", name, text, min, max);
    return (int)v;
}

static void parse_options(trainer *tr, unsigned accepted, int argc, char **argv)
{
    tr_options *o = &tr->opt;
    *o = (tr_options){.iters = 10, .time_scale = 1.0, .bytes_scale = 1.0, .bucket_cap_mb = 25.0,
                      .first_bucket_mb = 1.0, .fusion_threshold_mb = 64.0, .cycle_time_ms = 1.0,
                      .mismatch_rank = -1, .bcast_rank = -1, .group_rank = -1, .watchdog_ms = 100,
                      .stall_rank = -1, .stall_from = -1, .stall_to = -1};
    static const struct option longopts[] = {
        {"profile", required_argument, 0, 'p'},
        {"iters", required_argument, 0, 'i'},
        {"time-scale", required_argument, 0, 't'},
        {"bytes-scale", required_argument, 0, 'b'},
        {"print-truth", required_argument, 0, 'T'},
        {"bucket-cap-mb", required_argument, 0, 'c'},
        {"first-bucket-mb", required_argument, 0, 'f'},
        {"fusion-threshold-mb", required_argument, 0, 'F'},
        {"cycle-time-ms", required_argument, 0, 'C'},
        {"host-finalizer", no_argument, 0, 'H'},
        {"postscale", no_argument, 0, 'S'},
        {"mismatch-rank", required_argument, 0, 'm'},
        {"group-rank", required_argument, 0, 'g'},
        {"bcast-rank", required_argument, 0, 'B'},
        {"watchdog-ms", required_argument, 0, 'w'},
        {"stall", required_argument, 0, 's'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    opterr = 0;
    int c, idx;
    while ((c = getopt_long(argc, argv, "", longopts, &idx)) != -1) {
        unsigned need = 0;
        switch (c) {
        case 'c': case 'f': need = TR_OPT_BUCKETS; break;
        case 'F': case 'C': case 'H': case 'S': need = TR_OPT_FUSION; break;
        case 'm': case 'g': case 'B': need = TR_OPT_MISMATCH; break;
        case 'w': need = TR_OPT_WATCHDOG; break;
        default: break;
        }
        if (need && !(accepted & need)) {
            fprintf(stderr, "%s: option --%s is not one of this trainer's\n", g_name, longopts[idx].name);
            usage(accepted, stderr);
            exit(2);
        }
        switch (c) {
        case 'p': o->profile = optarg; break;
        case 'i': o->iters = parse_int("iters", optarg, 1, 1000000); break;
        case 't': o->time_scale = parse_double("time-scale", optarg, 0.0, false); break;
        case 'b': o->bytes_scale = parse_double("bytes-scale", optarg, 0.0, true); break;
        case 'T': o->print_truth = optarg; break;
        case 'c': o->bucket_cap_mb = parse_double("bucket-cap-mb", optarg, 0.0, true); break;
        case 'f': o->first_bucket_mb = parse_double("first-bucket-mb", optarg, 0.0, true); break;
        case 'F': o->fusion_threshold_mb = parse_double("fusion-threshold-mb", optarg, 0.0, false); break;
        case 'C': o->cycle_time_ms = parse_double("cycle-time-ms", optarg, 0.0, true); break;
        case 'H': o->host_finalizer = true; break;
        case 'S': o->postscale = true; break;
        case 'm': o->mismatch_rank = parse_int("mismatch-rank", optarg, 0, 1 << 20); break;
        case 'g': o->group_rank = parse_int("group-rank", optarg, 0, 1 << 20); break;
        case 'B': o->bcast_rank = parse_int("bcast-rank", optarg, 0, 1 << 20); break;
        case 'w': o->watchdog_ms = parse_int("watchdog-ms", optarg, 0, 100000); break;
        case 's':
            if (sscanf(optarg, "%d,%d,%d,%lf", &o->stall_rank, &o->stall_from, &o->stall_to, &o->stall_ms) != 4 ||
                o->stall_rank < 0 || o->stall_from < 0 || o->stall_to < o->stall_from || !(o->stall_ms >= 0)) {
                fprintf(stderr, "%s: --stall: expected RANK,FIRST,LAST,MS (non-negative, FIRST <= LAST), got '%s'\n",
                        g_name, optarg);
                exit(2);
            }
            break;
        case 'h': usage(accepted, stdout); exit(0);
        default:
            fprintf(stderr, "%s: unknown or incomplete option '%s'\n", g_name, argv[optind - 1]);
            usage(accepted, stderr);
            exit(2);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", g_name, argv[optind]);
        usage(accepted, stderr);
        exit(2);
    }
    if (o->profile == NULL) {
        fprintf(stderr, "%s: --profile is required\n", g_name);
        usage(accepted, stderr);
        exit(2);
    }
}

/* ---- model ------------------------------------------------------------------------------ */

double tr_scaled(const trainer *tr, double profile_seconds)
{
    return profile_seconds * tr->opt.time_scale;
}

size_t tr_scaled_bytes(const trainer *tr, double profile_mb)
{
    double bytes = profile_mb * 1e6 * tr->opt.bytes_scale;
    size_t floats = (size_t)llround(bytes / 4.0);
    return (floats ? floats : 1) * 4;
}

static void build_model(trainer *tr)
{
    const ub_profile *p = &tr->prof;
    tr->n_tensors = p->n_calls;
    tr->tensors = calloc((size_t)p->n_calls, sizeof *tr->tensors);
    tr->layers = calloc((size_t)p->n_calls, sizeof *tr->layers);
    if (!tr->tensors || !tr->layers)
        tr_die("out of memory");
    size_t offset = 0;
    for (int k = 0; k < p->n_calls; k++) {
        const ub_call *c = &p->calls[k];
        if (k > 0 && c->ready < p->calls[k - 1].ready)
            tr_die("%s: calls[%d].ready: %.9g is earlier than calls[%d].ready; a backward pass produces "
                   "gradients in arrival order", tr->opt.profile, k, c->ready, k - 1);
        /* Trainers keep float32 gradients whatever the profile's dtype: only bytes matter to NCCL's cost. */
        double floats = (double)c->bytes * tr->opt.bytes_scale / 4.0;
        size_t count = (size_t)llround(floats);
        tr_tensor *t = &tr->tensors[k];
        t->name = c->name ? c->name : "?";
        t->count = count ? count : 1;
        t->offset = offset;
        t->ready = c->ready;
        t->need = c->need;
        offset += t->count;
        bool same_layer = tr->n_layers > 0 && c->ready == tr->layers[tr->n_layers - 1].ready &&
                          c->need == p->calls[k - 1].need;
        if (!same_layer) {
            tr_layer *l = &tr->layers[tr->n_layers++];
            *l = (tr_layer){.first = k, .n = 0, .ready = c->ready, .offset = t->offset, .count = 0, .tr = tr};
        }
        tr_layer *l = &tr->layers[tr->n_layers - 1];
        l->n++;
        l->count += t->count;
        t->layer = tr->n_layers - 1;
    }
    tr->total = offset;
    tr->forward_scaled = 0;
    tr->segment_scaled = calloc((size_t)p->n_forward, sizeof(double));
    if (!tr->segment_scaled)
        tr_die("out of memory");
    for (int s = 0; s < p->n_forward; s++) {
        tr->segment_scaled[s] = tr_scaled(tr, p->forward[s]);
        tr->forward_scaled += tr->segment_scaled[s];
    }
}

/* Deterministic initial parameters, identical on every rank. */
static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A float in [-1, 1) with 24 significant bits. */
static float unit_float(uint64_t h)
{
    return (float)((int64_t)(h >> 40) - (1 << 23)) / (float)(1 << 23);
}

static void init_nccl(trainer *tr)
{
    ncclUniqueId id;
    /* Under a launcher that gives every rank the same id (torchrun-like stores do the same job),
     * no exchange is needed; on a real cluster TRAINER_NCCL_ID_FILE names a shared file. */
    const char *id_file = getenv("TRAINER_NCCL_ID_FILE");
    if (id_file && *id_file) {
        if (tr->rank == 0) {
            NCCL_CHECK(ncclGetUniqueId(&id));
            char tmp[4096];
            snprintf(tmp, sizeof tmp, "%s.tmp.%d", id_file, (int)getpid());
            FILE *f = fopen(tmp, "wb");
            if (!f || fwrite(&id, sizeof id, 1, f) != 1 || fclose(f) != 0 || rename(tmp, id_file) != 0)
                tr_die("TRAINER_NCCL_ID_FILE %s: cannot write: %s", id_file, strerror(errno));
        } else {
            for (int tries = 0;; tries++) {
                FILE *f = fopen(id_file, "rb");
                if (f) {
                    size_t got = fread(&id, sizeof id, 1, f);
                    fclose(f);
                    if (got == 1)
                        break;
                }
                if (tries > 60000)
                    tr_die("TRAINER_NCCL_ID_FILE %s: rank 0 did not write it within 60 s", id_file);
                usleep(1000);
            }
        }
    } else {
        NCCL_CHECK(ncclGetUniqueId(&id));
    }
    NCCL_CHECK(ncclCommInitRank(&tr->comm, tr->world, id, tr->rank));
}

void tr_bind_device(const trainer *tr)
{
    int devices = 0;
    CUDA_CHECK(cudaGetDeviceCount(&devices));
    if (devices < 1)
        tr_die("no CUDA device");
    CUDA_CHECK(cudaSetDevice(tr->local_rank % devices));
}

void tr_init(trainer *tr, const char *name, unsigned accepted, int argc, char **argv)
{
    memset(tr, 0, sizeof *tr);
    tr->name = g_name = name;
    parse_options(tr, accepted, argc, argv);
    tr->world = env_int("WORLD_SIZE", 1, 1, 1 << 16);
    tr->rank = env_int("RANK", 0, 0, tr->world - 1);
    tr->local_rank = env_int("LOCAL_RANK", tr->rank, 0, 1 << 16);
    g_rank = tr->rank;
    if (tr->opt.mismatch_rank >= tr->world)
        tr_die("--mismatch-rank %d: only %d ranks", tr->opt.mismatch_rank, tr->world);
    if (tr->opt.bcast_rank >= tr->world)
        tr_die("--bcast-rank %d: only %d ranks", tr->opt.bcast_rank, tr->world);
    if (tr->opt.group_rank >= tr->world)
        tr_die("--group-rank %d: only %d ranks", tr->opt.group_rank, tr->world);

    char err[512];
    if (ub_profile_load(tr->opt.profile, &tr->prof, err, sizeof err) != 0)
        tr_die("%s", err);
    if (tr->prof.n_calls < 1)
        tr_die("%s: the profile has no calls", tr->opt.profile);
    build_model(tr);

    tr_bind_device(tr);

    size_t bytes = tr->total * sizeof(float);
    CUDA_CHECK(cudaMallocHost((void **)&tr->h_param, bytes));
    CUDA_CHECK(cudaMallocHost((void **)&tr->h_grad_stage, bytes));
    CUDA_CHECK(cudaMallocHost((void **)&tr->h_grad_out, bytes));
    CUDA_CHECK(cudaMalloc((void **)&tr->d_grad, bytes));
    for (int k = 0; k < tr->n_tensors; k++) {
        const tr_tensor *t = &tr->tensors[k];
        uint64_t seed = splitmix64(0x5eedull ^ (uint64_t)k);
        for (size_t i = 0; i < t->count; i++)
            tr->h_param[t->offset + i] = 0.1f * unit_float(splitmix64(seed + i));
    }
    CUDA_CHECK(cudaStreamCreateWithFlags(&tr->compute, cudaStreamNonBlocking));
    for (int i = 0; i <= TR_HOST_AHEAD; i++)
        CUDA_CHECK(cudaEventCreateWithFlags(&tr->iter_done[i], cudaEventDisableTiming));
    init_nccl(tr);
}

void tr_finish(trainer *tr)
{
    CUDA_CHECK(cudaStreamSynchronize(tr->compute));
    NCCL_CHECK(ncclCommDestroy(tr->comm));
    for (int i = 0; i <= TR_HOST_AHEAD; i++)
        CUDA_CHECK(cudaEventDestroy(tr->iter_done[i]));
    CUDA_CHECK(cudaStreamDestroy(tr->compute));
    CUDA_CHECK(cudaFreeHost(tr->h_param));
    CUDA_CHECK(cudaFreeHost(tr->h_grad_stage));
    CUDA_CHECK(cudaFreeHost(tr->h_grad_out));
    CUDA_CHECK(cudaFree(tr->d_grad));
    free(tr->tensors);
    free(tr->layers);
    free(tr->segment_scaled);
    free(tr->mark_t);
    free(tr->before_t);
    free(tr->after_t);
    free(tr->mark_args);
    ub_profile_free(&tr->prof);
}

void tr_end_iteration(trainer *tr, int t)
{
    CUDA_CHECK(cudaEventRecord(tr->iter_done[t % (TR_HOST_AHEAD + 1)], tr->compute));
    if (t >= TR_HOST_AHEAD)
        CUDA_CHECK(cudaEventSynchronize(tr->iter_done[(t - TR_HOST_AHEAD) % (TR_HOST_AHEAD + 1)]));
}

/* ---- compute-stream work ------------------------------------------------------------------ */

static void sleep_until(const struct timespec *deadline)
{
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, deadline, NULL) == EINTR) {
    }
}

static struct timespec add_seconds(struct timespec t, double seconds)
{
    long long ns = (long long)t.tv_nsec + llround(seconds * 1e9);
    t.tv_sec += (time_t)(ns / 1000000000);
    t.tv_nsec = (long)(ns % 1000000000);
    return t;
}

static void CUDART_CB backward_start_fn(void *arg)
{
    trainer *tr = arg;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    /* Iterations 0 and 1 include start-up and DDP's bucket rebuild: leave them out of the mean. */
    if (tr->iter >= 2) {
        double dt = (double)(now.tv_sec - tr->backward_t0.tv_sec) + 1e-9 * (double)(now.tv_nsec - tr->backward_t0.tv_nsec);
        tr->iter_seconds_sum += dt;
        tr->tail_seconds[tr->iter_seconds_n % TR_TAIL] = dt;
        tr->iter_seconds_n++;
    }
    tr->iter++;
    tr->backward_t0 = now;
}

void tr_enqueue_backward_start(trainer *tr)
{
    tr->host_iter++;
    CUDA_CHECK(cudaLaunchHostFunc(tr->compute, backward_start_fn, tr));
}

/* The start of a forward pass: compute the gradients the coming backward will "produce" (a pattern
 * of rank, iteration, tensor and element), so that the arithmetic overlaps the forward compute and
 * the layers' host functions only have to wait for their deadlines: producing a large layer's
 * gradient on the host takes longer than the microseconds the profile gives some layers (VGG's
 * classifier), more so under sanitizers. */
static void CUDART_CB forward_start_fn(void *arg)
{
    trainer *tr = arg;
    int iter = tr->iter;   /* backward starts so far = the index of the coming backward */
    /* A stalled rank (a slow host, a page fault storm): the other ranks wait for it in the
     * collectives of this iteration. */
    if (tr->rank == tr->opt.stall_rank && iter >= tr->opt.stall_from && iter <= tr->opt.stall_to)
        usleep((useconds_t)(tr->opt.stall_ms * 1e3));
    clock_gettime(CLOCK_MONOTONIC, &tr->forward_t0);
    for (int k = 0; k < tr->n_tensors; k++) {
        const tr_tensor *t = &tr->tensors[k];
        uint64_t seed = splitmix64(((uint64_t)tr->rank << 40) ^ ((uint64_t)iter << 20) ^ (uint64_t)k);
        float *g = tr->h_grad_stage + t->offset;
        /* One multiply per element (Weyl sequence, high bits): cheap. */
        for (size_t i = 0; i < t->count; i++)
            g[i] = 0.01f * unit_float((seed + i) * 0x9e3779b97f4a7c15ull);
    }
}

void tr_enqueue_forward_start(trainer *tr)
{
    CUDA_CHECK(cudaLaunchHostFunc(tr->compute, forward_start_fn, tr));
}

static void CUDART_CB forward_until_fn(void *arg)
{
    trainer *tr = arg;
    struct timespec deadline = add_seconds(tr->forward_t0, tr->forward_scaled);
    sleep_until(&deadline);
}

void tr_enqueue_forward_barrier(trainer *tr)
{
    CUDA_CHECK(cudaLaunchHostFunc(tr->compute, forward_until_fn, tr));
}

/* The layer's backward: its gradients are in the staging memory already; wait for its deadline. */
static void CUDART_CB layer_fn(void *arg)
{
    tr_layer *l = arg;
    trainer *tr = l->tr;
    struct timespec deadline = add_seconds(tr->backward_t0, tr_scaled(tr, l->ready));
    sleep_until(&deadline);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double late = (double)(now.tv_sec - deadline.tv_sec) + 1e-9 * (double)(now.tv_nsec - deadline.tv_nsec);
    if (late > 0 && tr->iter > 2) {
        tr->late_sum += late;
        tr->late_max = late > tr->late_max ? late : tr->late_max;
        tr->late_n++;
    }
}

void tr_enqueue_layer(trainer *tr, int layer)
{
    tr_layer *l = &tr->layers[layer];
    CUDA_CHECK(cudaLaunchHostFunc(tr->compute, layer_fn, l));
    CUDA_CHECK(cudaMemcpyAsync(tr->d_grad + l->offset, tr->h_grad_stage + l->offset, l->count * sizeof(float),
                               cudaMemcpyHostToDevice, tr->compute));
}

void tr_marks_init(trainer *tr, int n_marks)
{
    size_t n = (size_t)tr->opt.iters * (size_t)n_marks;
    tr->n_marks = n_marks;
    tr->mark_t = malloc((n ? n : 1) * sizeof *tr->mark_t);
    tr->before_t = malloc((n ? n : 1) * sizeof *tr->before_t);
    tr->after_t = malloc((n ? n : 1) * sizeof *tr->after_t);
    tr->mark_args = calloc((size_t)(n_marks ? n_marks : 1), sizeof *tr->mark_args);
    if (!tr->mark_t || !tr->before_t || !tr->after_t || !tr->mark_args)
        tr_die("out of memory");
    for (size_t i = 0; i < n; i++)
        tr->mark_t[i] = tr->before_t[i] = tr->after_t[i] = NAN;
    for (int m = 0; m < n_marks; m++)
        tr->mark_args[m] = (tr_mark){.tr = tr, .slot = m};
}

static double monotonic_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

static void CUDART_CB mark_fn(void *arg)
{
    const tr_mark *m = arg;
    trainer *tr = m->tr;
    double now = monotonic_seconds();
    int it = tr->iter - 1;   /* marks are backward work: the backward start counted this iteration */
    if (it >= 0 && it < tr->opt.iters)
        tr->mark_t[(size_t)it * (size_t)tr->n_marks + (size_t)m->slot] = now;
}

void tr_record_ready(trainer *tr, int slot, cudaEvent_t ev)
{
    if (slot < 0 || slot >= tr->n_marks)
        tr_die("internal: mark slot %d of %d", slot, tr->n_marks);
    CUDA_CHECK(cudaLaunchHostFunc(tr->compute, mark_fn, &tr->mark_args[slot]));
    double before = monotonic_seconds();
    CUDA_CHECK(cudaEventRecord(ev, tr->compute));
    double after = monotonic_seconds();
    int it = tr->host_iter - 1;
    if (it >= 0 && it < tr->opt.iters) {
        size_t i = (size_t)it * (size_t)tr->n_marks + (size_t)slot;
        tr->before_t[i] = before;
        tr->after_t[i] = after;
    }
}

static void CUDART_CB sleep_fn(void *arg)
{
    const double *seconds = arg;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    struct timespec deadline = add_seconds(now, *seconds);
    sleep_until(&deadline);
}

void tr_enqueue_sleep(trainer *tr, cudaStream_t stream, const double *seconds)
{
    (void)tr;
    if (*seconds > 0)
        CUDA_CHECK(cudaLaunchHostFunc(stream, sleep_fn, (void *)seconds));
}

static void CUDART_CB sgd_fn(void *arg)
{
    const tr_range *r = arg;
    trainer *tr = r->tr;
    const float lr = 0.1f, inv_world = 1.0f / (float)tr->world;
    float *p = tr->h_param + r->offset;
    const float *g = tr->h_grad_out + r->offset;
    for (size_t i = 0; i < r->count; i++)
        p[i] -= lr * (g[i] * inv_world);
}

tr_range tr_range_of(trainer *tr, int first_tensor, int n_tensors)
{
    const tr_tensor *a = &tr->tensors[first_tensor], *b = &tr->tensors[first_tensor + n_tensors - 1];
    return (tr_range){.tr = tr, .offset = a->offset, .count = b->offset + b->count - a->offset};
}

void tr_enqueue_apply(trainer *tr, cudaStream_t stream, const tr_range *range)
{
    CUDA_CHECK(cudaMemcpyAsync(tr->h_grad_out + range->offset, tr->d_grad + range->offset,
                               range->count * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaLaunchHostFunc(stream, sgd_fn, (void *)range));
}

/* ---- results ------------------------------------------------------------------------------- */

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

void tr_print_checksum(trainer *tr, const void *extra, size_t extra_bytes)
{
    CUDA_CHECK(cudaStreamSynchronize(tr->compute));
    uint64_t h = fnv1a(0xcbf29ce484222325ull, tr->h_param, tr->total * sizeof(float));
    if (extra)
        h = fnv1a(h, extra, extra_bytes);
    if (tr->iter_seconds_n > 0) {
        printf("iteration %.3f ms (mean of %d, backward start to backward start)\n",
               1e3 * tr->iter_seconds_sum / tr->iter_seconds_n, tr->iter_seconds_n);
        int n = tr->iter_seconds_n < TR_TAIL ? tr->iter_seconds_n : TR_TAIL;
        double sum = 0;
        for (int i = 0; i < n; i++)
            sum += tr->tail_seconds[i];
        printf("last-iterations %.3f ms (mean of the last %d, backward start to backward start)\n", 1e3 * sum / n, n);
    }
    if (tr->late_n > 0)
        printf("deadline lateness mean %.1f us, max %.1f us (%ld layer host functions)\n",
               1e6 * tr->late_sum / (double)tr->late_n, 1e6 * tr->late_max, tr->late_n);
    printf("checksum %016" PRIx64 "\n", h);
    fflush(stdout);
}

json_t *tr_truth_new(trainer *tr)
{
    json_t *t = json_pack("{s:s, s:i, s:i, s:f, s:f, s:i, s:s}", "trainer", tr->name, "rank", tr->rank,
                          "world_size", tr->world, "time_scale", tr->opt.time_scale, "bytes_scale",
                          tr->opt.bytes_scale, "iters", tr->opt.iters, "source_profile", tr->opt.profile);
    if (!t)
        tr_die("out of memory");
    return t;
}

void tr_truth_set_profile(trainer *tr, json_t *truth, int n_calls, const uint64_t *bytes, const double *ready,
                          const int *need, int n_forward, const double *forward_unscaled)
{
    ub_profile p = {0};
    p.name = (char *)tr->name;
    p.source = "trainer truth: what the trainer issues in a steady iteration, times scaled";
    p.ranks = tr->world;
    p.n_calls = n_calls;
    p.calls = calloc((size_t)n_calls, sizeof *p.calls);
    p.n_forward = n_forward;
    p.forward = calloc((size_t)n_forward, sizeof(double));
    if (!p.calls || !p.forward)
        tr_die("out of memory");
    double r0 = ready[0];
    for (int k = 0; k < n_calls; k++) {
        p.calls[k] = (ub_call){.bytes = bytes[k], .ready = tr_scaled(tr, ready[k] - r0), .need = need[k],
                               .dtype = UB_DTYPE_FLOAT32, .op = UB_OP_SUM, .merge = true, .measured_comm = -1};
    }
    for (int s = 0; s < n_forward; s++)
        p.forward[s] = tr_scaled(tr, forward_unscaled[s]);
    /* docs/model.md: a measured profile starts at the first call's ready time and folds the backward
     * compute before it into the last forward segment. */
    p.forward[n_forward - 1] += tr_scaled(tr, r0);
    p.backward_end = tr_scaled(tr, tr->prof.backward_end - r0);
    json_t *j = ub_profile_to_json(&p);
    if (!j)
        tr_die("out of memory");
    json_object_set_new(truth, "profile", j);
    free(p.calls);
    free(p.forward);
}

void tr_truth_set_actual_ready(trainer *tr, json_t *truth, int n_calls, const int *slot_of_call)
{
    json_t *lows = json_array(), *highs = json_array();
    if (!lows || !highs)
        tr_die("out of memory");
    long host_behind = 0, marks = 0;
    double widest = 0;
    for (int it = 0; it < tr->opt.iters; it++) {
        size_t base = (size_t)it * (size_t)tr->n_marks;
        const double *m = tr->mark_t + base, *b = tr->before_t + base, *a = tr->after_t + base;
        bool complete = true;
        for (int k = 0; k < n_calls; k++) {
            int s = slot_of_call[k];
            complete = complete && isfinite(m[s]) && isfinite(b[s]) && isfinite(a[s]);
        }
        if (!complete) {
            json_array_append_new(lows, json_null());
            json_array_append_new(highs, json_null());
            continue;
        }
        int s0 = slot_of_call[0];
        double l0 = fmax(m[s0], b[s0]);
        json_t *lo = json_array(), *hi = json_array();
        if (!lo || !hi)
            tr_die("out of memory");
        for (int k = 0; k < n_calls; k++) {
            int s = slot_of_call[k];
            double l = fmax(m[s], b[s]), h = fmax(m[s], a[s]);
            json_array_append_new(lo, json_real(l - l0));
            json_array_append_new(hi, json_real(h - l0));
            marks++;
            host_behind += b[s] > m[s];
            widest = fmax(widest, h - l);
        }
        json_array_append_new(lows, lo);
        json_array_append_new(highs, hi);
    }
    json_object_set_new(truth, "actual_ready", lows);
    json_object_set_new(truth, "actual_ready_by", highs);
    json_object_set_new(truth, "actual_ready_source",
                        json_string("per iteration and call, CLOCK_MONOTONIC minus call 0's actual_ready: "
                                    "actual_ready = when the event the call's upstream wait is on could complete "
                                    "(the later of the compute stream passing the work right before it and the host "
                                    "calling cudaEventRecord); actual_ready_by = the later of the stream and the "
                                    "return from cudaEventRecord (what an event recorded inside that call sees at "
                                    "most); null: the iteration issued other calls"));
    json_object_set_new(truth, "actual_ready_stats",
                        json_pack("{s:I, s:I, s:f}", "events", (json_int_t)marks, "host_behind_stream",
                                  (json_int_t)host_behind, "widest_record_s", widest));
}

void tr_truth_write(trainer *tr, json_t *truth)
{
    const char *pattern = tr->opt.print_truth;
    if (pattern == NULL) {
        json_decref(truth);
        return;
    }
    char path[4096];
    size_t n = 0;
    for (const char *s = pattern; *s && n + 16 < sizeof path; s++) {
        if (s[0] == '%' && s[1] == 'r') {
            n += (size_t)snprintf(path + n, sizeof path - n, "%d", tr->rank);
            s++;
        } else {
            path[n++] = *s;
        }
    }
    path[n] = '\0';
    /* Without %r every rank would write the same file: only rank 0 does. */
    if (strstr(pattern, "%r") == NULL && tr->rank != 0) {
        json_decref(truth);
        return;
    }
    if (json_dump_file(truth, path, JSON_INDENT(1) | JSON_SORT_KEYS) != 0)
        tr_die("--print-truth %s: cannot write", path);
    json_decref(truth);
}
