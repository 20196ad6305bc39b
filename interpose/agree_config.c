/* The configuration agreement: the settings that decide whether and when a rank takes part in the
 * warm-up's agreement (usbyte/config_agree.h) are combined at the first lock of each communicator,
 * the same call on every rank whatever its configuration, in one allreduce of a constant size on
 * a private stream.  The result is read at the first call of the warm-up, before any rank can have
 * reached the warm-up's agreement (agree_at is at least one iteration later): when a setting
 * differs, every rank stays in pass-through from that same call, so that all issue the same
 * collectives.  A rank with USBYTE_MODE=off issues it and passes through from the lock on. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "agree_config.h"
#include "agree_rt.h"
#include "capture.h"
#include "collwait.h"
#include "cuda_list.h"
#include "decide.h"
#include "device.h"
#include "globals.h"
#include "group.h"
#include "guard.h"
#include "log.h"
#include "nccl_list.h"
#include "tables.h"
#include "warmup.h"
#include "usbyte/config_agree.h"

#define CFG_BYTES ((size_t)UB_CFG_AGREE_LEN * sizeof(double))

static void copy_back_after_launch(const void *data) UB_REQUIRES(ub_state_mutex)
{
    ub_comm *c = *(ub_comm *const *)data;
    if (c->cfg_agree.copy_pending)
        ub_cfg_agree_copy_back(c);
}

/* Its buffers, stream and event, on the communicator's device; false when one cannot be had. */
static bool make_buffers(ub_comm *c)
{
    ub_cfg_agreement *a = &c->cfg_agree;
    bool made = ub_coll_buffers(c->device, CFG_BYTES, &a->host, &a->dev, &a->done);
    int previous = ub_device_enter(c->device);
    if (UB_CUDA(ub_cuda.cudaStreamCreateWithFlags(&a->stream, cudaStreamNonBlocking)) != cudaSuccess)
        a->stream = NULL;
    ub_device_leave(previous);
    return made && a->stream;
}

void ub_cfg_agree_issue(ub_comm *c) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_cfg_agreement *a = &c->cfg_agree;
    if (a->issued)
        return;
    a->issued = true;
    if (!make_buffers(c)) {
        ub_comm_cannot_take_part(c, ncclSystemError, "cannot allocate the configuration agreement's buffers");
        return;
    }
    int values[UB_CFG_AGREE_COUNT] = {
#define X(field, var) (int)ub_cfg.field,
        UB_CFG_AGREE_LIST(X)
#undef X
    };
    ub_cfg_agree_encode(values, c->rank < 0 ? 0 : c->rank, a->host);
    /* Never held across a real NCCL call; the record is this thread's (the issuer's). */
    ub_state_unlock();
    const char *failed = NULL;
    ncclResult_t r = ncclSuccess;
    if (UB_CUDA(ub_cuda.cudaMemcpyAsync(a->dev, a->host, CFG_BYTES, cudaMemcpyHostToDevice, a->stream)) != cudaSuccess) {
        failed = "cudaMemcpyAsync of the configuration agreement failed";
        r = ncclUnhandledCudaError;
    } else if ((r = UB_NCCL(ub_nccl.AllReduce(a->dev, a->dev, UB_CFG_AGREE_LEN, ncclFloat64, ncclMax, c->handle,
                                              a->stream))) != ncclSuccess) {
        failed = "NCCL refused the configuration agreement's ncclAllReduce";
    }
    ub_state_lock();
    if (failed) {
        char why[160];
        snprintf(why, sizeof why, "%s (%s)", failed, ub_nccl_result_name(r));
        ub_comm_cannot_take_part(c, r, why);
        return;
    }
    ub_debug("communicator %d: configuration agreement issued at its lock", c->index);
    if (ub_thread_in_group()) {
        /* Work enqueued on the private stream now would run before the collective's launch. */
        a->copy_pending = true;
        a->thread = (unsigned long)pthread_self();
        if (!ub_group_after_launch(copy_back_after_launch, &c, sizeof c))
            ub_comm_cannot_take_part(c, ncclSystemError, "no room to queue the configuration agreement's copy back");
    } else {
        ub_cfg_agree_copy_back(c);
    }
}

void ub_cfg_agree_copy_back(ub_comm *c)
{
    ub_cfg_agreement *a = &c->cfg_agree;
    a->copy_pending = false;
    if (UB_CUDA(ub_cuda.cudaMemcpyAsync(a->host, a->dev, CFG_BYTES, cudaMemcpyDeviceToHost, a->stream)) != cudaSuccess ||
        UB_CUDA(ub_cuda.cudaEventRecord(a->done, a->stream)) != cudaSuccess)
        ub_comm_cannot_take_part(c, ncclUnhandledCudaError, "cannot copy the configuration agreement's result back");
}

/* A setting's value as the user writes it. */
static void value_text(ub_cfg_agree_id id, int v, char *buf, size_t len)
{
    if (id == UB_CFG_AGREE_mode)
        snprintf(buf, len, "%s", ub_mode_name((ub_mode)v));
    else
        snprintf(buf, len, "%d", v);
}

/* What differs, as one line ("" when nothing does). */
static void differences(const ub_cfg_agreed *g, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int s = 0; s < UB_CFG_AGREE_COUNT && used < len; s++) {
        if (g[s].lo == g[s].hi)
            continue;
        char lo[32], hi[32];
        value_text((ub_cfg_agree_id)s, g[s].lo, lo, sizeof lo);
        value_text((ub_cfg_agree_id)s, g[s].hi, hi, sizeof hi);
        int n = snprintf(buf + used, len - used, "%s%s differs between the ranks: %s on rank %d, %s on rank %d",
                         used ? "; " : "", ub_cfg_agree_var((ub_cfg_agree_id)s), lo, g[s].rank_lo, hi, g[s].rank_hi);
        used += n > 0 ? (size_t)n : 0;
    }
}

ub_transition ub_cfg_agree_read(ub_comm *c) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_cfg_agreement *a = &c->cfg_agree;
    if (!a->issued || a->read)
        return ub_stay();
    a->read = true;
    if (a->copy_pending) /* the group that holds it was launched without our seeing its end */
        ub_cfg_agree_copy_back(c);
    cudaEvent_t done = a->done;
    ub_state_unlock();
    cudaError_t e = ub_comm_wait_done(c, done, false, "the configuration agreement issued at the lock",
                                      "the warm-up needs it");
    ub_state_lock();
    if (atomic_load(&c->ending) || atomic_load(&c->peer_error) != ncclSuccess || c->state != UB_COMM_PROFILE)
        return ub_stay();
    ub_cfg_agreed agreed[UB_CFG_AGREE_COUNT];
    char why[400];
    if (e != cudaSuccess)
        snprintf(why, sizeof why, "the configuration agreement's result could not be read");
    else if (!ub_cfg_agree_decode(a->host, agreed))
        snprintf(why, sizeof why, "the configuration agreement's result is not what any ranks could have sent "
                 "(a rank running another usbyte version?)");
    else
        differences(agreed, why, sizeof why);
    if (!why[0])
        return ub_stay();
    /* Every rank stays in pass-through from this call, the whole reason in its report. */
    char line[600];
    snprintf(line, sizeof line, "%s (every rank must run with the same value: docs/runtime.md)", why);
    ub_warn("communicator %d: %s: every rank stays in pass-through", c->index, line);
    return ub_agree_refused(c, line, "the ranks' configurations differ (the verdict says why)");
}

void ub_cfg_agree_release(ub_comm *c, bool abort)
{
    ub_cfg_agreement *a = &c->cfg_agree;
    /* Still in flight (an abort, a destroy before its copy back ran): left allocated, as the
     * device may still write them; a few bytes per communicator. */
    if (abort || a->copy_pending || (a->done && UB_CUDA(ub_cuda.cudaEventQuery(a->done)) == cudaErrorNotReady)) {
        memset(a, 0, sizeof *a);
        return;
    }
    if (a->stream)
        UB_CUDA(ub_cuda.cudaStreamDestroy(a->stream));
    ub_coll_buffers_free(a->host, a->dev, a->done);
    memset(a, 0, sizeof *a);
}
