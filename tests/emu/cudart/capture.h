/* Stream capture's state and rules (capture.c): the live captures, what each stream records
 * into, and the checks every enqueue, synchronization and potentially unsafe call makes. */
#ifndef USBYTE_EMU_CUDART_CAPTURE_H
#define USBYTE_EMU_CUDART_CAPTURE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "../emu_internal.h"

struct CUstream_st;
struct emu_op_info;

/* One capture sequence: begun on its origin stream, joined by other streams through events
 * recorded in it, recorded as nodes in call order (a topological order of the captured work). */
enum emu_cnode_kind { EMU_CN_OP, EMU_CN_RECORD, EMU_CN_WAIT };
struct emu_cnode {
    enum emu_cnode_kind kind;
    usbyteEmuOpFn run;        /* EMU_CN_OP: run(a fresh arg) at each launch */
    void *arg;                /* the template */
    size_t arg_size;
    void *(*clone)(const void *arg);
    void (*drop)(void *arg);
    cudaEvent_t event;        /* EMU_CN_RECORD / EMU_CN_WAIT: an external event node */
    char what[96];
};
struct emu_capture {
    uint64_t id;
    enum cudaStreamCaptureMode mode;
    pthread_t thread;         /* the thread that began it */
    struct CUstream_st *origin;
    int device;
    bool invalidated;
    size_t n, cap;
    struct emu_cnode *nodes;
    /* cudaStreamBeginCaptureToGraph: the graph the nodes go into, after these nodes of it
     * (into NULL: a new graph). */
    cudaGraph_t into;
    cudaGraphNode_t *deps;
    size_t n_deps;
    struct emu_capture *next; /* the live captures */
};
void emu_capture_lock(void);
void emu_capture_unlock(void);
/* Lock held: s's capture, or NULL. */
struct emu_capture *emu_capture_of(struct CUstream_st *s);
/* Lock held: the live capture of that id, or NULL (ended). */
struct emu_capture *emu_capture_find(uint64_t id);
/* Lock held: appends a node to c. */
cudaError_t emu_capture_add(struct emu_capture *c, const struct emu_cnode *node);
/* Lock held: s joins c (a wait on an event recorded in c). */
void emu_capture_join(struct emu_capture *c, struct CUstream_st *s);
/* Called for every op before it is enqueued: true when s is capturing, the op then recorded
 * (cudaSuccess) or refused (*err). */
bool emu_capture_enqueue(struct CUstream_st *s, const struct emu_op_info *info, usbyteEmuOpFn run, void *arg,
                         const char *what, cudaError_t *err);
/* Use of the legacy stream while a blocking stream of its device captures: the error
 * (cudaErrorStreamCaptureImplicit), those captures invalidated when `invalidate`. */
cudaError_t emu_capture_legacy(struct CUstream_st *legacy, bool invalidate);
/* cudaStreamQuery/Synchronize of s: cudaErrorStreamCaptureUnsupported on a capturing stream
 * (the capture invalidated), the legacy stream's rule, else cudaSuccess. */
cudaError_t emu_capture_sync_check(struct CUstream_st *s);
/* A potentially unsafe call of this thread (cudaMalloc, a synchronous copy...): prohibited by
 * the thread's capture mode while captures run (cudaErrorStreamCaptureUnsupported, the
 * captures that prohibit it invalidated). */
cudaError_t emu_capture_unsafe(void);
/* cudaDeviceSynchronize: encompasses every capture of the device (whatever the mode). */
cudaError_t emu_capture_device_sync(void);
/* For cudaStreamIsCapturing and cudaStreamGetCaptureInfo (stream_api.c): s's capture status and the
 * capture's id; on the legacy stream while a blocking stream captures, the legacy stream's error. */
cudaError_t emu_capture_status(struct CUstream_st *s, enum cudaStreamCaptureStatus *status, unsigned long long *id);
/* For capture_api.c: c (allocated by the caller, its nodes none yet) begins on s in mode;
 * cudaErrorIllegalState when s already captures (c is then the caller's to free). */
cudaError_t emu_capture_begin(struct emu_capture *c, struct CUstream_st *s, enum cudaStreamCaptureMode mode);
/* For capture_api.c: ends s's capture: *out is the capture, out of every stream and of the live
 * ones, for the caller to free, with cudaSuccess, cudaErrorStreamCaptureInvalidated or
 * cudaErrorStreamCaptureUnjoined; or *out is NULL with the error (none, not the origin, the
 * wrong thread). */
cudaError_t emu_capture_end(struct CUstream_st *s, struct emu_capture **out);
/* A captured op's arg that will never run goes (its drop, else free). */
void emu_cnode_drop(struct emu_cnode *n);

#endif
