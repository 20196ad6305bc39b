/* cuGetProcAddress (CUDA 11.3's four-argument form) and cuGetProcAddress_v2 (CUDA 12.0, with the
 * symbol status), as cuda.h documents them: the symbol is a base name ("cuStreamBeginCapture"),
 * resolved to the newest variant whose CUDA version is at most the one asked for; the flags
 * choose between the legacy-stream and the per-thread-stream (_ptsz) variants.  The table is
 * generated from exports.h, the list the library's exports are made from.  Its pointers are
 * the library's own functions (the library is linked -Bsymbolic-functions), what dlsym on its
 * handle gives, whatever an LD_PRELOAD library defines. */

/* The legacy names (cuStreamBeginCapture, cuGetProcAddress) are the functions themselves. */
#define __CUDA_API_VERSION_INTERNAL 1

#include <stdbool.h>
#include <string.h>

#include "driver.h"
#include "exports.h"

struct proc_entry {
    const char *symbol;
    void *fn;
    int version;
    bool ptsz;
};

#define PROC_ENTRY(SYMBOL, FUNCTION, VERSION, PTSZ) {#SYMBOL, (void *)FUNCTION, VERSION, PTSZ},
static const struct proc_entry table[] = {EMU_CU_EXPORTS(PROC_ENTRY)};
#undef PROC_ENTRY

static CUresult lookup(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status)
{
    if (symbol == NULL || pfn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    /* DEFAULT (0) is the legacy stream: the emulator's callers are not built for the per-thread
     * default stream (cuda.h's inline cuGetProcAddress_v2_ptsz adds the flag for those that are). */
    if (flags != CU_GET_PROC_ADDRESS_DEFAULT && flags != CU_GET_PROC_ADDRESS_LEGACY_STREAM &&
        flags != CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
        return CUDA_ERROR_INVALID_VALUE;
    if (cudaVersion > EMU_CU_DRIVER_VERSION)   /* "greater than the driver version" */
        return CUDA_ERROR_INVALID_VALUE;
    bool known = false, has_ptsz = false;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].symbol, symbol) == 0) {
            known = true;
            has_ptsz |= table[i].ptsz;
        }
    /* Per-thread: the _ptsz variant where one exists, else the legacy one. */
    bool want_ptsz = flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM && has_ptsz;
    const struct proc_entry *best = NULL;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        const struct proc_entry *e = &table[i];
        if (e->ptsz == want_ptsz && e->version <= cudaVersion && strcmp(e->symbol, symbol) == 0 &&
            (best == NULL || e->version > best->version))
            best = e;
    }
    if (status)
        *status = best ? CU_GET_PROC_ADDRESS_SUCCESS
                  : known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                          : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (best == NULL)
        return CUDA_ERROR_NOT_FOUND;
    *pfn = best->fn;
    return CUDA_SUCCESS;
}

EMU_CU_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return lookup(symbol, pfn, cudaVersion, flags, NULL);
}

EMU_CU_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                           CUdriverProcAddressQueryResult *symbolStatus)
{
    return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}
