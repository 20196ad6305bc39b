/* The hang dump: one line per stream of this process (usbyteEmuDumpStreams), and on SIGUSR2, when
 * the launcher started the process (USBYTE_EMU_LAUNCHED=1), those lines on stderr followed by
 * where each hardware queue stands and its deadlocks (queue_check.c).  Only write(2) and plain
 * reads, so that it may run in a signal handler. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dump_text.h"
#include "export.h"
#include "queue_check.h"
#include "stream_object.h"

EMU_EXPORT void usbyteEmuDumpStreams(int fd)
{
    for (struct CUstream_st *s = emu_all_streams(); s; s = s->all_next) {
        unsigned long long depth = atomic_load_explicit(&s->depth, memory_order_relaxed);
        if ((!s->alive && depth == 0 && !s->is_legacy) || !emu_stream_owned(s))
            continue;
        char line[EMU_ACTIVITY_LEN + 112];
        size_t n = 0;
        n = emu_put_str(line, n, sizeof line, "[pid ");
        n = emu_put_u64(line, n, sizeof line, (unsigned long long)getpid());
        n = emu_put_str(line, n, sizeof line, "] stream ");
        n = emu_put_u64(line, n, sizeof line, s->id);
        n = emu_put_str(line, n, sizeof line,
                        s->is_legacy ? " legacy" : s->implicit ? " per-thread"
                        : (s->flags & cudaStreamNonBlocking) ? " non-blocking" : " blocking");
        n = emu_put_str(line, n, sizeof line, " queue ");
        n = emu_put_u64(line, n, sizeof line, (unsigned long long)atomic_load(&s->queue_index));
        n = emu_put_str(line, n, sizeof line, " depth ");
        n = emu_put_u64(line, n, sizeof line, depth);
        n = emu_put_str(line, n, sizeof line, ": ");
        char act[EMU_ACTIVITY_LEN];
        emu_stream_read_activity(s, act);
        n = emu_put_str(line, n, sizeof line, act);
        line[n++] = '\n';
        emu_write_all(fd, line, n);
    }
}

/* The stream lines, then where each queue stands and its deadlocks.  The queue analysis only
 * tries the queue locks (a thread interrupted by the signal may hold one); at a hang nothing
 * holds them for long. */
static void dump_on_signal(int sig)
{
    (void)sig;
    int saved = errno;
    usbyteEmuDumpStreams(2);
    emu_queue_deadlocks(2, true, true);
    errno = saved;
}

__attribute__((constructor)) static void hang_dump_init(void)
{
    const char *launched = getenv("USBYTE_EMU_LAUNCHED");
    if (launched != NULL && strcmp(launched, "1") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = dump_on_signal;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGUSR2, &sa, NULL);
    }
}
