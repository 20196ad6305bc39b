/* A minimal LD_PRELOAD interposer shaped like usbyte's: it defines cudaEventRecord with the
 * runtime's version node and forwards to the next definition found by version, counting calls.
 * test_emu_preload uses it to check that a program's versioned references meet the interposer
 * first and the interposer's versioned lookup meets the emulated runtime. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#define EXPORT __attribute__((visibility("default")))

static atomic_int calls;

EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    typedef cudaError_t (*fn_t)(cudaEvent_t, cudaStream_t);
    static _Atomic(fn_t) real;
    fn_t f = atomic_load(&real);
    if (f == NULL) {
        f = (fn_t)dlvsym(RTLD_NEXT, "cudaEventRecord", "libcudart.so.13");
        if (f == NULL || f == cudaEventRecord)
            return cudaErrorUnknown;
        atomic_store(&real, f);
    }
    atomic_fetch_add(&calls, 1);
    return f(event, stream);
}

__attribute__((destructor)) static void report(void)
{
    char line[64];
    int n = snprintf(line, sizeof line, "preload probe: %d cudaEventRecord calls\n", atomic_load(&calls));
    if (write(2, line, (size_t)n) < 0)
        return;
}
