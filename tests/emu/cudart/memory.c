/* "Device" memory: host memory from a tracking allocator.  Live allocations sit in an array
 * sorted by address, so any pointer can be checked against the allocation containing it.  Each
 * device has a capacity (USBYTE_EMU_DEVICE_MEM_MB, default 80 GiB, as an H100): cudaMalloc past it
 * fails with cudaErrorMemoryAllocation, and cudaMemGetInfo says what is left, as on a GPU. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_runtime_cbid.h>
#include <generated_cuda_runtime_api_meta.h>

#include "capture.h"
#include "device.h"
#include "errors.h"
#include "export.h"
#include "memory.h"
#include "stream.h"
#include "trace.h"

enum alloc_kind { ALLOC_DEVICE, ALLOC_HOST };

struct allocation {
    uintptr_t base;
    size_t size;
    enum alloc_kind kind;
    int device;      /* ALLOC_DEVICE: the current device at the allocation */
    size_t charged;  /* bytes charged to that device (the size rounded to 256) */
};

static size_t device_used[EMU_MAX_DEVICES];  /* under allocs_lock */
static pthread_once_t capacity_once = PTHREAD_ONCE_INIT;
static size_t device_capacity = (size_t)80 << 30;

static void read_capacity(void)
{
    const char *v = getenv("USBYTE_EMU_DEVICE_MEM_MB");
    if (!v || !*v)
        return;
    char *end;
    double mb = strtod(v, &end);
    if (*end != '\0' || !(mb > 0) || mb > 1e9)
        fprintf(stderr, "usbyte-emu: warning: USBYTE_EMU_DEVICE_MEM_MB='%s' is not a positive number of MiB; using "
                        "the default 81920\n", v);
    else
        device_capacity = (size_t)(mb * 1048576.0);
}

static int device_slot(int device) { return device >= 0 && device < EMU_MAX_DEVICES ? device : 0; }

static pthread_rwlock_t allocs_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct allocation *allocs;
static size_t n_allocs, cap_allocs;

/* Index of the first allocation whose base is > p.  Called with the lock held. */
static size_t upper_bound(uintptr_t p)
{
    size_t lo = 0, hi = n_allocs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (allocs[mid].base <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

bool emu_range_valid(const void *ptr, size_t bytes)
{
    uintptr_t p = (uintptr_t)ptr;
    if (ptr == NULL)
        return false;
    pthread_rwlock_rdlock(&allocs_lock);
    size_t i = upper_bound(p);
    bool ok = false;
    if (i > 0) {
        const struct allocation *a = &allocs[i - 1];
        ok = p - a->base <= a->size && bytes <= a->size - (p - a->base);
    }
    pthread_rwlock_unlock(&allocs_lock);
    return ok;
}

EMU_EXPORT int usbyteEmuValidRange(const void *ptr, size_t bytes)
{
    return emu_range_valid(ptr, bytes);
}

EMU_EXPORT int usbyteEmuPointerKind(const void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    int kind = 0;
    pthread_rwlock_rdlock(&allocs_lock);
    size_t i = upper_bound(p);
    if (ptr != NULL && i > 0 && p - allocs[i - 1].base < allocs[i - 1].size)
        kind = allocs[i - 1].kind == ALLOC_DEVICE ? 1 : 2;
    pthread_rwlock_unlock(&allocs_lock);
    return kind;
}

static cudaError_t track(void *p, size_t size, size_t charged, enum alloc_kind kind)
{
    int device = device_slot(kind == ALLOC_DEVICE ? emu_current_device() : 0);
    pthread_rwlock_wrlock(&allocs_lock);
    if (kind == ALLOC_DEVICE && charged > device_capacity - device_used[device]) {
        pthread_rwlock_unlock(&allocs_lock);
        return cudaErrorMemoryAllocation;
    }
    if (n_allocs == cap_allocs) {
        size_t cap = cap_allocs ? cap_allocs * 2 : 64;
        struct allocation *grown = realloc(allocs, cap * sizeof *grown);
        if (grown == NULL) {
            pthread_rwlock_unlock(&allocs_lock);
            return cudaErrorMemoryAllocation;
        }
        allocs = grown;
        cap_allocs = cap;
    }
    size_t i = upper_bound((uintptr_t)p);
    memmove(&allocs[i + 1], &allocs[i], (n_allocs - i) * sizeof *allocs);
    allocs[i] = (struct allocation){(uintptr_t)p, size, kind, device, kind == ALLOC_DEVICE ? charged : 0};
    device_used[device] += allocs[i].charged;
    n_allocs++;
    pthread_rwlock_unlock(&allocs_lock);
    return cudaSuccess;
}

/* Whether an allocation of the given kind starts exactly at p. */
static bool is_allocation(void *p, enum alloc_kind kind)
{
    pthread_rwlock_rdlock(&allocs_lock);
    size_t i = upper_bound((uintptr_t)p);
    bool found = i > 0 && allocs[i - 1].base == (uintptr_t)p && allocs[i - 1].kind == kind;
    pthread_rwlock_unlock(&allocs_lock);
    return found;
}

/* Removes the allocation that starts exactly at p with the given kind. */
static bool untrack(void *p, enum alloc_kind kind)
{
    pthread_rwlock_wrlock(&allocs_lock);
    size_t i = upper_bound((uintptr_t)p);
    bool found = i > 0 && allocs[i - 1].base == (uintptr_t)p && allocs[i - 1].kind == kind;
    if (found) {
        device_used[allocs[i - 1].device] -= allocs[i - 1].charged;
        memmove(&allocs[i - 1], &allocs[i], (n_allocs - i) * sizeof *allocs);
        n_allocs--;
    }
    pthread_rwlock_unlock(&allocs_lock);
    return found;
}

static cudaError_t allocate(void **out, size_t size, enum alloc_kind kind)
{
    if (out == NULL)
        return cudaErrorInvalidValue;
    cudaError_t cap = emu_capture_unsafe();   /* not observed by a capture: potentially unsafe */
    if (cap != cudaSuccess)
        return cap;
    if (size == 0) {
        *out = NULL;
        return cudaSuccess;
    }
    /* cudaMalloc guarantees 256-byte alignment; keep every size a multiple of it too. */
    size_t rounded = (size + 255) & ~(size_t)255;
    if (rounded < size)
        return cudaErrorMemoryAllocation;
    pthread_once(&capacity_once, read_capacity);
    void *p = aligned_alloc(256, rounded);
    if (p == NULL)
        return cudaErrorMemoryAllocation;
    cudaError_t err = track(p, size, rounded, kind);
    if (err != cudaSuccess) {
        free(p);
        return err;
    }
    *out = p;
    return cudaSuccess;
}

/* Like cudaFree on a GPU, freeing waits for the device: pending work may still use the memory. */
static cudaError_t release(void *p, enum alloc_kind kind)
{
    if (p == NULL)
        return cudaSuccess;
    cudaError_t cap = emu_capture_unsafe();
    if (cap != cudaSuccess)
        return cap;
    if (!is_allocation(p, kind))   /* a bad pointer fails at once, without waiting */
        return cudaErrorInvalidValue;
    emu_device_sync();
    if (!untrack(p, kind))
        return cudaErrorInvalidValue;
    free(p);
    return cudaSuccess;
}

EMU_EXPORT cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    cudaMalloc_v3020_params p = {devPtr, size};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc", &p, allocate(devPtr, size, ALLOC_DEVICE));
}

EMU_EXPORT cudaError_t cudaFree(void *devPtr)
{
    cudaFree_v3020_params p = {devPtr};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, "cudaFree", &p, release(devPtr, ALLOC_DEVICE));
}

EMU_EXPORT cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    return emu_result(allocate(ptr, size, ALLOC_HOST));
}

EMU_EXPORT cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    (void)flags;
    return emu_result(allocate(pHost, size, ALLOC_HOST));
}

EMU_EXPORT cudaError_t cudaFreeHost(void *ptr)
{
    return emu_result(release(ptr, ALLOC_HOST));
}

/* Memory is shared by host and "device": a pinned host pointer is its own device pointer. */
EMU_EXPORT cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags)
{
    if (pDevice == NULL || flags != 0 || !emu_range_valid(pHost, 1))
        return emu_result(cudaErrorInvalidValue);
    *pDevice = pHost;
    return emu_result(cudaSuccess);
}

EMU_EXPORT cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
    pthread_once(&capacity_once, read_capacity);
    int device = device_slot(emu_current_device());
    pthread_rwlock_rdlock(&allocs_lock);
    size_t used = device_used[device];
    pthread_rwlock_unlock(&allocs_lock);
    if (free_bytes)
        *free_bytes = device_capacity - used;
    if (total)
        *total = device_capacity;
    return emu_result(cudaSuccess);
}

EMU_EXPORT cudaError_t usbyteEmuMemAlloc(void **ptr, size_t bytes)
{
    return allocate(ptr, bytes, ALLOC_DEVICE);
}

EMU_EXPORT cudaError_t usbyteEmuMemFree(void *ptr)
{
    return release(ptr, ALLOC_DEVICE);
}
