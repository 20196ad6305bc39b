/* The op log: see oplog.h. */
#include "oplog.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_emu.h"

static pthread_once_t oplog_once = PTHREAD_ONCE_INIT;
static int oplog_fd = -1;

/* The pattern with %r and %p expanded; -1 when the result does not fit or has another %. */
static int expand(const char *pattern, char *out, size_t size)
{
    const char *rank = getenv("RANK");
    char pid[24];
    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    size_t n = 0;
    for (const char *p = pattern; *p; p++) {
        const char *piece = NULL;
        char one[2] = {*p, '\0'};
        if (*p == '%') {
            p++;
            if (*p == 'r')
                piece = rank != NULL && *rank != '\0' ? rank : pid;
            else if (*p == 'p')
                piece = pid;
            else
                return -1;
        } else {
            piece = one;
        }
        size_t len = strlen(piece);
        if (n + len + 1 > size)
            return -1;
        memcpy(out + n, piece, len);
        n += len;
    }
    out[n] = '\0';
    return 0;
}

static void oplog_open(void)
{
    const char *pattern = getenv("USBYTE_EMU_OPLOG");
    if (pattern == NULL || *pattern == '\0')
        return;
    char path[4096];
    if (expand(pattern, path, sizeof path) != 0) {
        fprintf(stderr, "usbyte-emu: warning: USBYTE_EMU_OPLOG='%s' is too long or has a %% other than %%r and %%p; "
                        "no op log\n", pattern);
        return;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "usbyte-emu: warning: USBYTE_EMU_OPLOG: cannot open '%s': %s; no op log\n", path,
                strerror(errno));
        return;
    }
    static const char header[] = "# usbyte-emu oplog v1: comm rank nranks index kind bytes queued_ns arrival_ns "
                                 "start_ns data_end_ns model_end_ns end_ns\n";
    if (lseek(fd, 0, SEEK_END) == 0 && write(fd, header, sizeof header - 1) < 0) {
        close(fd);
        return;
    }
    oplog_fd = fd;
}

int emu_oplog_enabled(void)
{
    pthread_once(&oplog_once, oplog_open);
    return oplog_fd >= 0;
}

void emu_oplog_write(const struct ncclComm *c, const struct emu_oplog_rec *r)
{
    if (!emu_oplog_enabled())
        return;
    char line[256];
    int n = snprintf(line, sizeof line, "%s %d %d %llu %s %zu %llu %llu %llu %llu %llu %llu\n", c->hash, c->rank,
                     c->nranks, (unsigned long long)r->index, r->kind, r->bytes, (unsigned long long)r->queued_ns,
                     (unsigned long long)r->arrival_ns, (unsigned long long)r->start_ns, (unsigned long long)r->data_end_ns,
                     (unsigned long long)r->model_end_ns, (unsigned long long)r->end_ns);
    if (n > 0 && (size_t)n < sizeof line) {
        /* One write per line: with O_APPEND, lines of concurrent workers never interleave. */
        ssize_t w = write(oplog_fd, line, (size_t)n);
        (void)w;
    }
}
