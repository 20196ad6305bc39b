/* The polling wait for one of usbyte's own collectives (see collwait.h). */
#include <time.h>

#include "capture.h"
#include "collwait.h"
#include "cuda_list.h"
#include "device.h"
#include "globals.h"
#include "guard.h"
#include "log.h"
#include "tables.h"
#include "usbyte/clock.h"

bool ub_coll_buffers(int device, size_t bytes, double **host, void **dev, cudaEvent_t *done)
{
    int previous = ub_device_enter(device);
    if (!*host && UB_UNSAFE(ub_cuda.cudaMallocHost((void **)host, bytes)) != cudaSuccess)
        *host = NULL;
    if (!*dev && UB_UNSAFE(ub_cuda.cudaMalloc(dev, bytes)) != cudaSuccess)
        *dev = NULL;
    if (!*done && UB_CUDA(ub_cuda.cudaEventCreateWithFlags(done, cudaEventDisableTiming)) != cudaSuccess)
        *done = NULL;
    ub_device_leave(previous);
    return *host && *dev && *done;
}

void ub_coll_buffers_free(double *host, void *dev, cudaEvent_t done)
{
    if (done)
        UB_CUDA(ub_cuda.cudaEventDestroy(done));
    if (dev)
        UB_UNSAFE(ub_cuda.cudaFree(dev));
    if (host)
        UB_UNSAFE(ub_cuda.cudaFreeHost(host));
}

cudaError_t ub_comm_wait_done(ub_comm *c, cudaEvent_t done, bool limited, const char *what, const char *why)
{
    double t0 = ub_monotonic_s();
    long ns = 20000;
    double next_line = ub_cfg.hang_s, next_ask = 0.0;
    for (;;) {
        cudaError_t e = UB_CUDA(ub_cuda.cudaEventQuery(done));
        if (e != cudaErrorNotReady || atomic_load(&c->ending))
            return e;
        double waited = ub_monotonic_s() - t0;
        /* A peer gone never completes it: NCCL's asynchronous error says so (a few times a second). */
        if (waited >= next_ask) {
            next_ask = waited + 0.2;
            ncclResult_t a = ub_comm_async_error(c->handle);
            if (a != ncclSuccess) {
                atomic_store(&c->peer_error, (int)a);
                return cudaErrorNotReady;
            }
        }
        if (limited && waited > ub_cfg.hang_s)
            return cudaErrorNotReady;
        if (waited > next_line) {
            ub_warn("communicator %d: waiting %.0f s for %s (a rank behind or gone?): %s; an abort of the "
                    "communicator releases this wait", c->index, waited, what, why);
            next_line += ub_cfg.hang_s;
        }
        struct timespec pause = {0, ns};
        nanosleep(&pause, NULL);
        if (ns < 1000000)
            ns *= 2;
    }
}
