/* The identity of a communicator: the same on every rank of it and different for every other
 * communicator, so that the tools can tell the reports of one job from a stale file of another
 * (reports default to the working directory).  Every rank of a communicator receives the same
 * ncclUniqueId (rank 0 made it, the framework broadcast it), which NCCL derives from a random
 * number and its bootstrap address: its hash is the identity.  A split or shrunk communicator has
 * no id of its own; every rank of the parent calls the split in the same order (it is collective
 * over the parent), so the parent's identity, the color and how many children the parent had
 * before are the same on every rank that gets the new one. */
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "identity.h"
#include "state.h"
#include "tables.h"

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

#define FNV_BASIS 0xcbf29ce484222325ull

static void set_identity(ncclComm_t handle, uint64_t id) UB_REQUIRES(ub_state_mutex)
{
    ub_comm *c = handle ? ub_comm_get(handle) : NULL;
    if (c)
        c->report.id = id ? id : 1; /* 0 means unknown */
}

void ub_comm_identify(ncclComm_t *out, const ncclUniqueId *ids, int n, ncclComm_t parent, ncclResult_t r)
{
    ub_state_lock();
    uint64_t id = 0;
    if (ids && n > 0) {
        id = fnv1a(FNV_BASIS, ids, sizeof *ids * (size_t)n);
    } else if (parent) {
        /* Counted on every rank of the parent, also where the split gives no communicator. */
        ub_comm *p = ub_comm_get(parent);
        if (p && p->report.id) {
            unsigned child = p->report.children++;
            id = fnv1a(FNV_BASIS, &p->report.id, sizeof p->report.id);
            id = fnv1a(id, &n, sizeof n);
            id = fnv1a(id, &child, sizeof child);
        }
    }
    if (id && out && (r == ncclSuccess || r == ncclInProgress))
        set_identity(*out, id);
    ub_state_unlock();
}

void ub_comm_identify_all(ncclComm_t *out, int n, ncclResult_t r)
{
    if (!out || (r != ncclSuccess && r != ncclInProgress))
        return;
    /* One process holds every rank: its pid, the time and a count tell it from any other. */
    static unsigned count;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    long pid = (long)getpid();
    ub_state_lock();
    unsigned k = count++;
    uint64_t id = fnv1a(FNV_BASIS, &pid, sizeof pid);
    id = fnv1a(id, &now, sizeof now);
    id = fnv1a(id, &k, sizeof k);
    for (int i = 0; i < n; i++)
        set_identity(out[i], id);
    ub_state_unlock();
}
