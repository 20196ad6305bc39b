/* Stream capture's state and rules: the live captures, the capture each stream records into,
 * and the checks that every enqueue, synchronization and potentially unsafe call makes (the
 * entry points that begin and end a capture are capture_api.c's).  The rules are those the CUDA
 * runtime documents (cuda_runtime_api.h, and the programming guide's "Creating a Graph Using
 * Stream Capture"):
 * - cudaStreamBeginCapture(s, mode) puts s in capture mode: work enqueued on it is recorded as
 *   graph nodes, not run; cudaStreamEndCapture on the origin stream returns the graph (one
 *   node per op, in call order: a topological order), from the same thread unless the mode is
 *   relaxed (cudaErrorStreamCaptureWrongThread).
 * - cudaStreamBeginCaptureToGraph(s, graph, deps, edgeData, n, mode) does the same into an
 *   existing graph: EndCapture returns that graph, the captured nodes appended after deps.
 * - An event recorded in a capture is a captured event; a stream that waits on it joins the
 *   capture (event.c), and must be joined back to the origin (an event recorded on it after
 *   its last node, waited on by the origin) or EndCapture fails with
 *   cudaErrorStreamCaptureUnjoined.
 * - Synchronizing or querying a capturing stream (cudaErrorStreamCaptureUnsupported) or a
 *   captured event (cudaErrorCapturedEvent, event.c), the device (cudaDeviceSynchronize), or
 *   the legacy stream while a blocking stream of its device captures
 *   (cudaErrorStreamCaptureImplicit), invalidates the capture: its streams' later uses fail
 *   with cudaErrorStreamCaptureInvalidated and EndCapture returns that error and no graph.
 * - A "potentially unsafe" call (cudaMalloc, cudaFree, pinned allocations, synchronous copies
 *   and memsets) is prohibited, by the calling thread's mode (cudaThreadExchangeStreamCaptureMode),
 *   while the thread has a capture of its own that is not relaxed, or (global mode) while any
 *   thread has a global one: cudaErrorStreamCaptureUnsupported, and those captures are
 *   invalidated. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "capture.h"
#include "device.h"
#include "errors.h"
#include "export.h"
#include "op.h"
#include "stream_object.h"

static pthread_mutex_t cap_mu = PTHREAD_MUTEX_INITIALIZER;
static struct emu_capture *live;   /* captures begun and not ended */
static uint64_t next_capture_id = 1;
static __thread enum cudaStreamCaptureMode tl_mode = cudaStreamCaptureModeGlobal;

void emu_capture_lock(void)
{
    pthread_mutex_lock(&cap_mu);
}

void emu_capture_unlock(void)
{
    pthread_mutex_unlock(&cap_mu);
}

struct emu_capture *emu_capture_of(struct CUstream_st *s)
{
    return s->capture;
}

struct emu_capture *emu_capture_find(uint64_t id)
{
    for (struct emu_capture *c = live; c; c = c->next)
        if (c->id == id)
            return c;
    return NULL;
}

void emu_cnode_drop(struct emu_cnode *n)
{
    if (n->kind != EMU_CN_OP)
        return;
    if (n->drop)
        n->drop(n->arg);
    else
        free(n->arg);
}

cudaError_t emu_capture_add(struct emu_capture *c, const struct emu_cnode *node)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        struct emu_cnode *nodes = realloc(c->nodes, cap * sizeof *nodes);
        if (nodes == NULL)
            return cudaErrorMemoryAllocation;
        c->nodes = nodes;
        c->cap = cap;
    }
    c->nodes[c->n++] = *node;
    return cudaSuccess;
}

void emu_capture_join(struct emu_capture *c, struct CUstream_st *s)
{
    s->capture = c;
    s->cap_nodes = s->cap_joined = 0;
}

bool emu_capture_enqueue(struct CUstream_st *s, const struct emu_op_info *info, usbyteEmuOpFn run, void *arg,
                         const char *what, cudaError_t *err)
{
    pthread_mutex_lock(&cap_mu);
    struct emu_capture *c = s->capture;
    if (c == NULL) {
        pthread_mutex_unlock(&cap_mu);
        return false;
    }
    if (c->invalidated) {
        *err = cudaErrorStreamCaptureInvalidated;
    } else if (info == NULL || (info->arg_size == 0 && info->clone == NULL)) {
        /* Work the emulator cannot run again (e.g. a graph launch into a capture). */
        c->invalidated = true;
        *err = cudaErrorStreamCaptureUnsupported;
    } else {
        struct emu_cnode n = {.kind = EMU_CN_OP, .run = run, .arg = arg, .arg_size = info->arg_size,
                              .clone = info->clone, .drop = info->drop};
        snprintf(n.what, sizeof n.what, "%s", what ? what : "op");
        *err = emu_capture_add(c, &n);
        if (*err == cudaSuccess)
            s->cap_nodes++;
    }
    pthread_mutex_unlock(&cap_mu);
    return true;   /* on an error the caller still owns arg, as for any failed enqueue */
}

/* Lock held: the live captures of `device` on blocking streams. */
static bool blocking_capture(int device, bool invalidate)
{
    bool any = false;
    for (struct emu_capture *c = live; c; c = c->next)
        if (c->device == device && !(c->origin->flags & cudaStreamNonBlocking)) {
            any = true;
            if (invalidate)
                c->invalidated = true;
        }
    return any;
}

cudaError_t emu_capture_legacy(struct CUstream_st *legacy, bool invalidate)
{
    pthread_mutex_lock(&cap_mu);
    bool any = live != NULL && blocking_capture(legacy->device, invalidate);
    pthread_mutex_unlock(&cap_mu);
    return any ? cudaErrorStreamCaptureImplicit : cudaSuccess;
}

cudaError_t emu_capture_sync_check(struct CUstream_st *s)
{
    if (s->is_legacy)
        return emu_capture_legacy(s, true);
    pthread_mutex_lock(&cap_mu);
    cudaError_t err = cudaSuccess;
    if (s->capture != NULL) {
        s->capture->invalidated = true;
        err = cudaErrorStreamCaptureUnsupported;
    }
    pthread_mutex_unlock(&cap_mu);
    return err;
}

cudaError_t emu_capture_unsafe(void)
{
    pthread_mutex_lock(&cap_mu);
    bool prohibited = false;
    pthread_t self = pthread_self();
    for (struct emu_capture *c = live; c; c = c->next) {
        bool mine = pthread_equal(c->thread, self) && c->mode != cudaStreamCaptureModeRelaxed;
        bool global = tl_mode == cudaStreamCaptureModeGlobal && c->mode == cudaStreamCaptureModeGlobal;
        if (tl_mode != cudaStreamCaptureModeRelaxed && (mine || global)) {
            c->invalidated = true;
            prohibited = true;
        }
    }
    pthread_mutex_unlock(&cap_mu);
    return prohibited ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

cudaError_t emu_capture_device_sync(void)
{
    int device = emu_current_device();
    pthread_mutex_lock(&cap_mu);
    bool any = false;
    for (struct emu_capture *c = live; c; c = c->next)
        if (c->device == device) {
            c->invalidated = true;
            any = true;
        }
    pthread_mutex_unlock(&cap_mu);
    return any ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

/* ---- beginning and ending (capture_api.c) ---- */
cudaError_t emu_capture_begin(struct emu_capture *c, struct CUstream_st *s, enum cudaStreamCaptureMode mode)
{
    pthread_mutex_lock(&cap_mu);
    if (s->capture != NULL) {
        pthread_mutex_unlock(&cap_mu);
        return cudaErrorIllegalState;   /* "only if the stream is not already in capture mode" */
    }
    c->id = next_capture_id++;
    c->mode = mode;
    c->thread = pthread_self();
    c->origin = s;
    c->device = s->device;
    c->next = live;
    live = c;
    emu_capture_join(c, s);
    pthread_mutex_unlock(&cap_mu);
    return cudaSuccess;
}

cudaError_t emu_capture_end(struct CUstream_st *s, struct emu_capture **out)
{
    *out = NULL;
    pthread_mutex_lock(&cap_mu);
    struct emu_capture *c = s->capture;
    if (c == NULL) {
        pthread_mutex_unlock(&cap_mu);
        return cudaErrorIllegalState;
    }
    if (c->origin != s) {
        c->invalidated = true;
        pthread_mutex_unlock(&cap_mu);
        return cudaErrorStreamCaptureUnmatched;
    }
    if (c->mode != cudaStreamCaptureModeRelaxed && !pthread_equal(c->thread, pthread_self())) {
        pthread_mutex_unlock(&cap_mu);
        return cudaErrorStreamCaptureWrongThread;
    }
    /* Every stream of the capture leaves capture mode; one with nodes not joined back to the
     * origin makes the capture fail. */
    bool unjoined = false;
    for (struct CUstream_st *o = emu_all_streams(); o; o = o->all_next) {
        if (o->capture != c)
            continue;
        if (o != s && o->cap_nodes > o->cap_joined)
            unjoined = true;
        o->capture = NULL;
        o->cap_nodes = o->cap_joined = 0;
    }
    for (struct emu_capture **x = &live; *x; x = &(*x)->next)
        if (*x == c) {
            *x = c->next;
            break;
        }
    pthread_mutex_unlock(&cap_mu);
    *out = c;
    return c->invalidated ? cudaErrorStreamCaptureInvalidated
           : unjoined     ? cudaErrorStreamCaptureUnjoined
                          : cudaSuccess;
}

EMU_EXPORT cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
    if (mode == NULL || (*mode != cudaStreamCaptureModeGlobal && *mode != cudaStreamCaptureModeThreadLocal &&
                         *mode != cudaStreamCaptureModeRelaxed))
        return emu_result(cudaErrorInvalidValue);
    enum cudaStreamCaptureMode old = tl_mode;
    tl_mode = *mode;
    *mode = old;
    return emu_result(cudaSuccess);
}

cudaError_t emu_capture_status(struct CUstream_st *s, enum cudaStreamCaptureStatus *status, unsigned long long *id)
{
    /* On the legacy stream while a blocking stream captures: an error, the capture kept. */
    if (s->is_legacy && emu_capture_legacy(s, false) != cudaSuccess)
        return cudaErrorStreamCaptureImplicit;
    pthread_mutex_lock(&cap_mu);
    struct emu_capture *c = s->capture;
    *status = c == NULL ? cudaStreamCaptureStatusNone
              : c->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
    if (id)
        *id = c ? c->id : 0;
    pthread_mutex_unlock(&cap_mu);
    return cudaSuccess;
}
