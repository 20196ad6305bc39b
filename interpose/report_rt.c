/* The report of every communicator of this process (docs/design.md section 8): what the run was
 * (versions, libraries, GPU, command line), what each communicator measured and decided, and
 * schedule mode's measurements; written with the global lock released for the file's I/O. */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_list.h"
#include "defer.h"
#include "globals.h"
#include "guard.h"
#include "log.h"
#include "nccl_list.h"
#include "report_rt.h"
#include "state.h"
#include "tables.h"
#include "usbyte/io.h"
#include "usbyte/model.h"

#define USBYTE_VERSION "0.4.0"

/* Learnt once by the first agreement (several threads may issue one), read by report writers:
 * both under versions_mutex.  It and io_mutex are taken alone or after the global lock, never
 * one inside the other (lock_contract.h). */
static ub_mutex versions_mutex UB_ACQUIRED_AFTER(ub_state_mutex) = UB_MUTEX_INITIALIZER;
static ub_versions versions UB_GUARDED_BY(versions_mutex) = {USBYTE_VERSION, 0, 0, 0, NULL, NULL};
static char nccl_library[1024] UB_GUARDED_BY(versions_mutex), cudart_library[1024] UB_GUARDED_BY(versions_mutex),
    gpu_name[256] UB_GUARDED_BY(versions_mutex);
static int gpu_device UB_GUARDED_BY(versions_mutex) = -1;
/* One report writer at a time, and what it said last. */
static ub_mutex io_mutex UB_ACQUIRED_AFTER(ub_state_mutex) = UB_MUTEX_INITIALIZER;
static char last_error[1400] UB_GUARDED_BY(io_mutex);
static bool said_no_rank UB_GUARDED_BY(io_mutex);

/* The file a real function comes from (dladdr), into buf; false when unknown. */
static bool library_of(void *fn, char *buf, size_t len)
{
    Dl_info di;
    if (!fn || !dladdr(fn, &di) || !di.dli_fname || !di.dli_fname[0])
        return false;
    snprintf(buf, len, "%s", di.dli_fname);
    return true;
}

/* The device's name from the application's own CUDA runtime (the library cudaEventRecord came
 * from: a framework may have loaded it RTLD_LOCAL).  Its cudaDeviceProp starts with the name
 * whatever the runtime's version; the buffer is larger than any version's structure. */
static void learn_gpu(void) UB_REQUIRES(versions_mutex)
{
    int dev = -1;
    if (gpu_device >= 0 || !ub_cuda.cudaGetDevice || UB_CUDA(ub_cuda.cudaGetDevice(&dev)) != cudaSuccess)
        return;
    gpu_device = dev;
    void *h = cudart_library[0] ? dlopen(cudart_library, RTLD_NOLOAD | RTLD_LAZY) : NULL;
    typedef cudaError_t (*props_fn)(void *prop, int device);
    props_fn f = NULL;
    if (h && !(f = (props_fn)dlsym(h, "cudaGetDeviceProperties_v2")))
        f = (props_fn)dlsym(h, "cudaGetDeviceProperties");
    char *prop = f ? calloc(1, 1 << 16) : NULL;
    if (prop && UB_CUDA(f(prop, dev)) == cudaSuccess) {
        prop[sizeof gpu_name - 1] = '\0';
        snprintf(gpu_name, sizeof gpu_name, "%s", prop);
    }
    free(prop);
    if (h)
        dlclose(h);
}

void ub_report_learn_versions(void)
{
    ub_mutex_lock(&versions_mutex);
    if (!versions.nccl && ub_nccl.GetVersion)
        UB_NCCL(ub_nccl.GetVersion(&versions.nccl));
    if (!versions.cuda_runtime && ub_cuda.cudaRuntimeGetVersion)
        UB_CUDA(ub_cuda.cudaRuntimeGetVersion(&versions.cuda_runtime));
    if (!versions.cuda_driver && ub_cuda.cudaDriverGetVersion)
        UB_CUDA(ub_cuda.cudaDriverGetVersion(&versions.cuda_driver));
    if (!versions.nccl_library && library_of((void *)ub_nccl.AllReduce, nccl_library, sizeof nccl_library))
        versions.nccl_library = nccl_library;
    if (!versions.cudart_library && library_of((void *)ub_cuda.cudaEventRecord, cudart_library, sizeof cudart_library))
        versions.cudart_library = cudart_library;
    learn_gpu();
    ub_mutex_unlock(&versions_mutex);
}

/* The process's command line, each argument quoted when it holds a blank or a quote (read once;
 * "" when /proc is not there). */
static const char *command_line(void)
{
    static char *text;
    if (text)
        return text;
    FILE *f = fopen("/proc/self/cmdline", "rb");
    char *raw = NULL;
    size_t n = 0, cap = 0;
    int ch;
    while (f && (ch = fgetc(f)) != EOF) {
        if (n + 1 >= cap) {
            char *p = realloc(raw, cap = cap ? 2 * cap : 256);
            if (!p)
                break;
            raw = p;
        }
        raw[n++] = (char)ch;
    }
    if (f)
        fclose(f);
    size_t len = 0;
    char *out = malloc(3 * n + 3);  /* every byte quoted at worst */
    for (size_t i = 0; out && raw && i < n;) {
        const char *arg = raw + i;
        size_t a = strnlen(arg, n - i);
        bool quote = a == 0 || strpbrk(arg, " \t'\"\\$`") != NULL;
        if (len)
            out[len++] = ' ';
        if (quote)
            out[len++] = '\'';
        for (size_t k = 0; k < a; k++) {
            if (quote && arg[k] == '\'') { /* 'it'\''s' */
                memcpy(out + len, "'\\''", 4);
                len += 4;
            } else {
                out[len++] = arg[k];
            }
        }
        if (quote)
            out[len++] = '\'';
        i += a + 1;
    }
    if (out)
        out[len] = '\0';
    free(raw);
    text = out ? out : (char *)"";
    return text;
}

/* Schedule mode's measurements beyond defer.c's: the spread of this rank's steady iterations
 * (consecutive starts within one run, each run's first interval skipped, as the measured
 * iteration) and the recording of the timed iterations' blocks on the host's wall clock. */
static void add_schedule_recording(ub_comm *c, json_t *sj)
{
    ub_sched_rt *s = &c->sched;
    double *len = malloc((size_t)(s->n_starts > 0 ? s->n_starts : 1) * sizeof *len);
    if (!len)
        return;
    int n = 0;
    for (int i = 2; i < s->n_starts; i++)
        if (s->run_of[i] == s->run_of[i - 1] && s->run_of[i - 1] == s->run_of[i - 2])
            len[n++] = s->iter_start[i] - s->iter_start[i - 1];
    ub_spread sp = ub_spread_of(len, n);
    free(len);
    json_object_set_new(sj, "iteration_spread", ub_spread_json(&sp));
    if (s->measured_iter < 0 || !s->block_start || !isfinite(s->tm.epoch_unix))
        return;
    json_t *its = json_array();
    int nb = s->sp.n_blocks;
    for (int slot = 0; slot < UB_SCHED_TRACED && s->measured_iter + slot < s->n_starts; slot++) {
        int i = s->measured_iter + slot;
        json_t *blocks = json_array();
        bool any = false;
        for (int b = 0; b < nb; b++) {
            double t0 = s->block_start[slot * nb + b], t1 = s->block_end[slot * nb + b];
            any |= isfinite(t0) && isfinite(t1);
            json_array_append_new(blocks, json_pack("[o, o]", isfinite(t0) ? json_real(t0) : json_null(),
                                                    isfinite(t1) ? json_real(t1) : json_null()));
        }
        if (!any || !isfinite(s->iter_start[i])) {
            json_decref(blocks);
            continue;
        }
        json_array_append_new(its, json_pack("{s:i, s:i, s:f, s:o}", "iteration", i, "run", s->run_of[i], "start",
                                             s->iter_start[i], "blocks", blocks));
    }
    json_object_set_new(sj, "recording", json_pack("{s:s, s:f, s:s, s:o}", "clock", "CLOCK_REALTIME", "origin",
                                                   s->tm.epoch_unix, "times_are",
                                                   "seconds from origin; blocks in plan order, [start, end] on the "
                                                   "private stream", "iterations", its));
}

/* The process's part of the report (versions, run, configuration) around the communicators'. */
static json_t *process_report(const ub_comm_report **reps, int n)
{
    int rank = atomic_load(&ub_rank), world = atomic_load(&ub_world);
    char host[256] = "unknown-host";
    gethostname(host, sizeof host - 1);
    ub_mutex_lock(&versions_mutex);
    ub_versions vers = versions;
    char gpu[sizeof gpu_name];
    memcpy(gpu, gpu_name, sizeof gpu);
    int device = gpu_device;
    ub_mutex_unlock(&versions_mutex);
    ub_run_info run = {.started = ub_started_unix > 0 ? ub_started_unix : NAN, .host = host, .pid = (long)getpid(),
                       .command = command_line(), .gpu = gpu[0] ? gpu : NULL, .device = device};
    /* A refused value is still in the environment: the report shows what was given. */
    for (int id = 0; id < UB_CFG_COUNT && run.n_ignored < 32; id++)
        if (ub_cfg.source[id] == UB_SRC_FALLBACK) {
            run.ignored_name[run.n_ignored] = ub_config_name((ub_config_id)id);
            run.ignored_value[run.n_ignored++] = getenv(ub_config_name((ub_config_id)id));
        }
    return ub_report_json(rank, world, &ub_cfg, &vers, &run, reps, n);
}

static void write_report(const json_t *doc, bool unless_there);

/* The report of every communicator seen into *doc (NULL: out of memory, which the writer says);
 * false when there is none to write. */
static bool reports_doc(json_t **doc) UB_REQUIRES(ub_state_mutex)
{
    int n;
    ub_comm **all = ub_state_all_comms(&n);
    if (n == 0)
        return false;
    const ub_comm_report **reps = calloc((size_t)n, sizeof *reps);
    if (!reps)
        return false;
    for (int i = 0; i < n; i++) {
        ub_comm *c = all[i];
        ub_comm_report *r = &c->report;
        r->index = c->index;
        r->rank = c->rank;
        r->nranks = c->nranks;
        r->iterations_observed = c->iterations_observed;
        r->state = ub_comm_state_name(c->state);
        snprintf(r->state_reason, sizeof r->state_reason, "%s", c->reason);
        r->profiling = c->state == UB_COMM_DETECT || c->state == UB_COMM_PROFILE;
        reps[i] = r;
    }
    json_t *d = *doc = process_report(reps, n);
    /* Schedule mode's measurements, per communicator that ran a plan. */
    json_t *jcomms = d ? json_object_get(d, "comms") : NULL;
    for (int i = 0; jcomms && i < n && i < (int)json_array_size(jcomms); i++) {
        json_t *sj = ub_sched_report_json(all[i]);
        if (sj) {
            add_schedule_recording(all[i], sj);
            json_object_set_new(json_array_get(jcomms, (size_t)i), "schedule", sj);
        }
        if (all[i]->calib.report.present)
            json_object_set_new(json_array_get(jcomms, (size_t)i), "calibration",
                                ub_calib_report_json(&all[i]->calib.report));
        if (all[i]->verify.report.present)
            json_object_set_new(json_array_get(jcomms, (size_t)i), "verification",
                                ub_verify_report_json(&all[i]->verify.report));
    }
    free(reps);
    return true;
}

void ub_state_write_reports(void) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    json_t *doc;
    if (!reports_doc(&doc))
        return;
    ub_state_unlock();
    write_report(doc, false);
    ub_state_lock();
    json_decref(doc);
}

void ub_state_write_reports_held(void) UB_REQUIRES(ub_state_mutex)
{
    json_t *doc;
    if (!reports_doc(&doc))
        return;
    write_report(doc, false);
    json_decref(doc);
}

/* The file is written one writer at a time, and a failure is said once per distinct reason (not
 * again at exit).  unless_there: nothing replaces a file already at the path. */
static void write_report(const json_t *doc, bool unless_there)
{
    int rank = atomic_load(&ub_rank), world = atomic_load(&ub_world);
    char host[256] = "unknown-host";
    gethostname(host, sizeof host - 1);
    ub_mutex_lock(&io_mutex);
    char path[1100], err[1300], line[1400] = "";
    /* Several ranks, one file: said once, by rank 0 (changes nothing that is issued). */
    if (!said_no_rank && rank == 0 && world > 1 && !strstr(ub_cfg.report, "%r") && !strstr(ub_cfg.report, "%p")) {
        ub_warn("USBYTE_REPORT \"%s\" has no %%r: the %d ranks write one file and the last one wins (add %%r for one "
                "report per rank)", ub_cfg.report, world);
        said_no_rank = true;
    }
    if (ub_expand_report_path(ub_cfg.report, rank, (long)getpid(), host, path, sizeof path) != 0)
        snprintf(line, sizeof line, "report path: %s", path);
    else if (unless_there && access(path, F_OK) == 0)
        ub_debug("report %s is there already: left alone", path);
    else if (!doc || ub_report_write(path, doc, err, sizeof err) != 0)
        snprintf(line, sizeof line, "report: %s", doc ? err : "out of memory");
    else
        ub_debug("report written to %s", path);
    /* A directory found missing or read-only at start-up was said then, naming it. */
    if (line[0] && strcmp(line, last_error) != 0 && !atomic_load(&ub_report_dir_bad))
        ub_error("%s", line);
    snprintf(last_error, sizeof last_error, "%s", line);
    ub_mutex_unlock(&io_mutex);
}

void ub_report_no_communicator(void) UB_REQUIRES(ub_state_mutex)
{
    /* Said once, at exit, by a process that started usbyte (it called CUDA or NCCL through it). */
    static const char what[] = "no NCCL communicator was created through libnccl.so.2 in this process; NCCL "
                               "linked statically? run usbyte-doctor on the binary";
    ub_warn("%s", what);
    json_t *doc = process_report(NULL, 0);
    if (!doc)
        return;
    json_object_set_new(doc, "note", json_string(what));
    /* Another process of the job (the rank itself, a helper with the same environment) may own
     * this path: a report with communicators is never replaced by this one. */
    write_report(doc, true);
    json_decref(doc);
}
