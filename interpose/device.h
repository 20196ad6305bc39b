/* A communicator's resources (streams, events, buffers) live on its device, ncclCommCuDevice: a
 * stream or event made on another device cannot hold its work (an event recorded on a stream of
 * another device is an error).  They are made by whatever thread reaches that point, whose
 * current device may be another one (one process driving several devices from several threads),
 * so the device is made current for the while and the caller's restored. */
#ifndef USBYTE_DEVICE_H
#define USBYTE_DEVICE_H

#include "cuda_list.h"
#include "guard.h"

/* Makes `device` current; returns the device to restore (-1: nothing to restore). */
static inline int ub_device_enter(int device)
{
    int current = -1;
    if (device < 0 || UB_CUDA(ub_cuda.cudaGetDevice(&current)) != cudaSuccess || current == device)
        return -1;
    return UB_CUDA(ub_cuda.cudaSetDevice(device)) == cudaSuccess ? current : -1;
}

static inline void ub_device_leave(int previous)
{
    if (previous >= 0)
        UB_CUDA(ub_cuda.cudaSetDevice(previous));
}

/* A private non-blocking stream of the current device at its highest priority (0, the default,
 * where the range cannot be read). */
static inline cudaError_t ub_device_urgent_stream(cudaStream_t *out)
{
    int lo = 0, hi = 0;
    if (UB_CUDA(ub_cuda.cudaDeviceGetStreamPriorityRange(&lo, &hi)) != cudaSuccess)
        hi = 0;
    return UB_CUDA(ub_cuda.cudaStreamCreateWithPriority(out, cudaStreamNonBlocking, hi));
}

#endif
