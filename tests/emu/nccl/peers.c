/* A peer's death as the survivors see it: the communicator's asynchronous error (nccl_emu.h,
 * emu_async_error), found from the peers' process ids. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nccl_emu.h"

/* Whether process pid has ended: gone, or a zombie its parent has not reaped yet. */
static bool process_gone(pid_t pid)
{
    if (kill(pid, 0) != 0)
        return errno == ESRCH;
    char path[64], stat[256] = "";
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return true;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *state = strrchr(stat, ')'); /* the command may hold spaces and parentheses */
    return state && state[1] == ' ' && state[2] == 'Z';
}

/* A peer whose process ended without leaving the communicator is every survivor's asynchronous
 * error, as NCCL's socket transport reports a closed connection (ncclRemoteError, within
 * moments of the death); collectives already waiting for it stay stuck, as on a GPU.  The peers
 * are looked at no more than every ASYNC_SCAN_NS (NCCL's proxy thread sets the error on its own
 * time too): an enqueue asks at every call. */
#define ASYNC_SCAN_NS 2000000ull

ncclResult_t emu_async_error(struct ncclComm *comm)
{
    uint64_t now = emu_now_ns(), last = atomic_load(&comm->async_scanned_ns);
    if (atomic_load(&comm->async_error) != ncclSuccess || now - last < ASYNC_SCAN_NS ||
        !atomic_compare_exchange_strong(&comm->async_scanned_ns, &last, now))
        return (ncclResult_t)atomic_load(&comm->async_error);
    for (int r = 0; r < comm->nranks && atomic_load(&comm->async_error) == ncclSuccess; r++) {
        const struct emu_rank_area *peer = &comm->ranks[r];
        if (r == comm->rank || !atomic_load(&peer->present) || atomic_load(&peer->left) || !process_gone(peer->pid))
            continue;
        int expected = ncclSuccess;
        if (atomic_compare_exchange_strong(&comm->async_error, &expected, ncclRemoteError))
            fprintf(stderr, "usbyte-emu: rank %d: comm %s: rank %d (pid %d) is gone: ncclRemoteError\n", comm->rank,
                    comm->hash, r, (int)peer->pid);
    }
    return (ncclResult_t)atomic_load(&comm->async_error);
}

