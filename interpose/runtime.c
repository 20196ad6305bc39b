/* Start, fork and exit of the runtime.  The configuration is read once, at the first wrapped
 * call (there is no constructor); the fork and exit hooks sit at the top of the layers
 * (docs/design.md, "Layers"): they reach down into the tables and the life cycle. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cupti.h"
#include "globals.h"
#include "guard.h"
#include "lifecycle.h"
#include "log.h"
#include "runtime.h"
#include "state.h"
#include "tables.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static atomic_bool init_done;

static const char *env_lookup(const char *name, void *ctx)
{
    (void)ctx;
    return getenv(name);
}

static void warn_line(const char *line, void *ctx)
{
    (void)ctx;
    ub_warn("%s", line);
}

static int env_int(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return -1;
    char *end;
    long x = strtol(v, &end, 10);
    return (*end == '\0' && x >= 0 && x < 1 << 24) ? (int)x : -1;
}

static void fork_child(void)
{
    /* The child has one thread and copies of locks that other threads of the parent may have
     * held: it must never touch the shared state again.  It forwards everything and writes no
     * report (its parent's report is the parent's). */
    atomic_store(&ub_passthrough_all, true);
    ub_state_forget_in_child();
}

/* The report's directory, checked once at start-up so that a typo is said at once, naming the
 * directory, rather than after the warm-up.  Skipped when the directory part depends on a rank not
 * known yet. */
static void check_report_dir(void)
{
    int rank = atomic_load(&ub_rank);
    const char *slash = strrchr(ub_cfg.report, '/');
    if (!slash)
        return; /* the working directory */
    char pattern[512];
    snprintf(pattern, sizeof pattern, "%.*s", (int)(slash - ub_cfg.report), ub_cfg.report);
    if (rank < 0 && strstr(pattern, "%r"))
        return;
    char host[256] = "unknown-host", dir[1100];
    gethostname(host, sizeof host - 1);
    if (pattern[0] == '\0')
        snprintf(pattern, sizeof pattern, "/");
    if (ub_expand_report_path(pattern, rank < 0 ? 0 : rank, (long)getpid(), host, dir, sizeof dir) != 0)
        return; /* the whole pattern's error is said when a report is written */
    struct stat st;
    const char *why = NULL;
    if (stat(dir, &st) != 0)
        why = errno == ENOENT ? "does not exist" : strerror(errno);
    else if (!S_ISDIR(st.st_mode))
        why = "is not a directory";
    else if (access(dir, W_OK | X_OK) != 0)
        why = "is not writable";
    atomic_store(&ub_report_dir_bad, why != NULL);
    if (why)
        ub_warn("USBYTE_REPORT=\"%s\": the directory \"%s\" %s: no report can be written there (create it, or set "
                "USBYTE_REPORT to a writable path)", ub_cfg.report, dir, why);
}

static int init(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    ub_started_unix = (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
    atomic_store(&ub_rank, env_int("RANK"));
    atomic_store(&ub_world, env_int("WORLD_SIZE"));
    ub_config_defaults(&ub_cfg);
    /* Parse with warnings at the default level first: the level itself comes from the config. */
    ub_config tmp;
    ub_config_parse(&tmp, env_lookup, NULL, NULL);
    ub_cfg.log = tmp.log;
    ub_cfg.source[UB_CFG_log] = tmp.source[UB_CFG_log];
    snprintf(ub_cfg.log_file, sizeof ub_cfg.log_file, "%s", tmp.log_file);
    ub_log_open();
    ub_config_parse(&ub_cfg, env_lookup, warn_line, NULL);
    if (ub_cfg.dump_config) {
        /* Printed whatever the log level, like NCCL's configuration dump. */
        char line[1200];
        for (int id = 0; id < UB_CFG_COUNT; id++)
            ub_log_always("%s", ub_config_describe(&ub_cfg, (ub_config_id)id, line, sizeof line));
    }
    if (ub_cfg.mode != UB_MODE_OFF)
        check_report_dir();
    pthread_atfork(NULL, NULL, fork_child);
    ub_cupti_set_callback(ub_cupti_callback);
    /* USBYTE_MODE=off too follows each communicator's calls to its first lock: it takes part in the
     * configuration agreement there (agree_config.c), as every rank must, then passes through. */
    atomic_store(&ub_passthrough_all, false);
    atomic_store(&init_done, true);
    return 0;
}

/* What the start calls (getenv, the log file, the configuration) is usbyte's, never observed. */
static void init_once_fn(void) { UB_REAL(init()); }

void ub_runtime_init(void)
{
    if (__builtin_expect(!atomic_load_explicit(&init_done, memory_order_acquire), 0))
        pthread_once(&init_once, init_once_fn);
}

/* No constructor: a process that never calls NCCL or CUDA through us (a launcher that merely
 * passes LD_PRELOAD on) must not see a warning, a configuration dump or a report. */

/* Reports are rewritten at exit from what is already measured: no CUDA call here, the runtime
 * (or the driver context) may already be gone. */
__attribute__((destructor)) static void ub_destructor(void)
{
    if (!atomic_load(&init_done) || ub_cfg.mode == UB_MODE_OFF)
        return;
    ub_state_write_reports_at_exit();
}
