/* Logging: one line per message, prefixed "usbyte[rank]: ", written with one write() so lines
 * of several threads and ranks never interleave.  Never allocates and never calls CUDA, so it
 * is safe in exit handlers and forked children.  Also the names of NCCL's results in its lines. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "globals.h"
#include "log.h"

static int log_fd = 2;

/* Opens the log file without ever blocking or being redirected: O_NONBLOCK so that a FIFO
 * without a reader (or any device whose open waits) cannot hang every rank in open(), and
 * O_NOFOLLOW so that a symbolic link planted at the path cannot send our lines into another
 * file.  Only a regular file is kept: a FIFO or a device could still block or drop the writes
 * later.  -1 with why in `why` (a phrase for the warning) otherwise. */
static int open_log_file(const char *path, char *why, size_t whylen)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY, 0644);
    if (fd < 0) {
        if (errno == ELOOP)
            snprintf(why, whylen, "is a symbolic link");
        else if (errno == ENXIO)
            snprintf(why, whylen, "is a FIFO or socket without a reader");
        else
            snprintf(why, whylen, "cannot be opened: %s", strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(why, whylen, "cannot be examined: %s", strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "is not a regular file (%s)",
                 S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISCHR(st.st_mode) ? "a character device"
                 : S_ISBLK(st.st_mode) ? "a block device" : S_ISSOCK(st.st_mode) ? "a socket"
                 : S_ISDIR(st.st_mode) ? "a directory" : "another kind of file");
        close(fd);
        return -1;
    }
    /* Writes to a regular file never wait anyway; clear the flag so that they stay whole. */
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

void ub_log_open(void)
{
    if (log_fd > 2)
        close(log_fd);
    log_fd = 2;
    if (ub_cfg.log_file[0]) {
        char path[600], why[160];
        if (ub_expand_report_path(ub_cfg.log_file, atomic_load(&ub_rank), (long)getpid(), NULL, path,
                                  sizeof path) < 0)
            snprintf(path, sizeof path, "%s", ub_cfg.log_file);
        int fd = open_log_file(path, why, sizeof why);
        if (fd >= 0)
            log_fd = fd;
        else
            ub_warn("USBYTE_LOG_FILE \"%s\" %s; logging to standard error", path, why);
    }
}

bool ub_log_enabled(ub_log_level level) { return level <= ub_cfg.log; }

static void vlog(ub_log_level level, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

void ub_log(ub_log_level level, const char *fmt, ...)
{
    if (!ub_log_enabled(level))
        return;
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap);
    va_end(ap);
}

void ub_log_always(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(UB_LOG_INFO, fmt, ap);
    va_end(ap);
}

static void vlog(ub_log_level level, const char *fmt, va_list ap)
{
    int saved = errno;
    char line[2048];
    int rank = atomic_load(&ub_rank);
    int n = rank >= 0 ? snprintf(line, sizeof line, "usbyte[%d]: ", rank)
                      : snprintf(line, sizeof line, "usbyte[?]: ");
    if (level == UB_LOG_ERROR)
        n += snprintf(line + n, sizeof line - (size_t)n, "error: ");
    else if (level == UB_LOG_WARN)
        n += snprintf(line + n, sizeof line - (size_t)n, "warning: ");
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    size_t len = (size_t)n + (m < 0 ? 0 : ((size_t)m < sizeof line - (size_t)n - 1 ? (size_t)m : sizeof line - (size_t)n - 2));
    line[len++] = '\n';
    ssize_t w = write(log_fd, line, len);
    (void)w;
    errno = saved;
}

#define UB_NCCL_RESULT_LIST(X) \
    X(ncclSuccess) X(ncclUnhandledCudaError) X(ncclSystemError) X(ncclInternalError) X(ncclInvalidArgument) \
    X(ncclInvalidUsage) X(ncclRemoteError) X(ncclInProgress)

const char *ub_nccl_result_name(ncclResult_t r)
{
#define X(name) if (r == name) return #name;
    UB_NCCL_RESULT_LIST(X)
#undef X
    static _Thread_local char unknown[32];
    snprintf(unknown, sizeof unknown, "ncclResult %d", (int)r);
    return unknown;
}
