/* The CUDA driver functions usbyte wraps, once: the ways a program begins or ends a graph capture
 * without the runtime (cuda_list.h holds the runtime's), and the driver's lookup of its own
 * functions.  Every capture must be seen (capture.h): a deferred allreduce on a capturing stream
 * would put usbyte's own work into the application's graph.  The list generates the table of
 * real functions, the names, the wrappers (driver_wrap.c) and the version script's list.
 *
 * X(name, CLASS, (parameters), (arguments), (hook argument))
 *   CUBEGIN: a capture begins on the hook's stream; CUEND: it ends there; CULOOKUP: the hook is
 *   the address of the returned function pointer, whose capture functions are replaced by these
 *   wrappers (a program that looks them up, as the CUDA Python bindings and cudaGetDriverEntryPoint
 *   users do, reaches usbyte as one that links them).
 * libcuda.so.1 exports each name plain (no symbol versions); the legacy one-argument
 * cuStreamBeginCapture and four-argument cuGetProcAddress are still exported under their own
 * names, which cuda.h maps to the _v2 forms: the names are taken literally here
 * (usbyte/cuda_exports.h). */
#ifndef USBYTE_DRIVER_LIST_H
#define USBYTE_DRIVER_LIST_H

#include <stdbool.h>

#include <cuda.h>

#include "usbyte/cuda_exports.h"

#define UB_CU_LIST(X)                                                                             \
    X(cuStreamBeginCapture, CUBEGIN, (CUstream hStream), (hStream), hStream)                      \
    X(cuStreamBeginCapture_ptsz, CUBEGIN, (CUstream hStream), (hStream),                          \
      hStream ? hStream : CU_STREAM_PER_THREAD)                                                   \
    X(cuStreamBeginCapture_v2, CUBEGIN, (CUstream hStream, CUstreamCaptureMode mode), (hStream, mode), hStream)\
    X(cuStreamBeginCapture_v2_ptsz, CUBEGIN, (CUstream hStream, CUstreamCaptureMode mode), (hStream, mode),\
      hStream ? hStream : CU_STREAM_PER_THREAD)                                                   \
    X(cuStreamBeginCaptureToGraph, CUBEGIN,                                                       \
      (CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,                         \
       const CUgraphEdgeData *dependencyData, size_t numDependencies, CUstreamCaptureMode mode),  \
      (hStream, hGraph, dependencies, dependencyData, numDependencies, mode), hStream)            \
    X(cuStreamBeginCaptureToGraph_ptsz, CUBEGIN,                                                  \
      (CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,                         \
       const CUgraphEdgeData *dependencyData, size_t numDependencies, CUstreamCaptureMode mode),  \
      (hStream, hGraph, dependencies, dependencyData, numDependencies, mode),                     \
      hStream ? hStream : CU_STREAM_PER_THREAD)                                                   \
    X(cuStreamEndCapture, CUEND, (CUstream hStream, CUgraph *phGraph), (hStream, phGraph), hStream)\
    X(cuStreamEndCapture_ptsz, CUEND, (CUstream hStream, CUgraph *phGraph), (hStream, phGraph),   \
      hStream ? hStream : CU_STREAM_PER_THREAD)                                                   \
    X(cuGetProcAddress, CULOOKUP, (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags),\
      (symbol, pfn, cudaVersion, flags), pfn)                                                     \
    X(cuGetProcAddress_v2, CULOOKUP,                                                              \
      (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,                         \
       CUdriverProcAddressQueryResult *symbolStatus),                                             \
      (symbol, pfn, cudaVersion, flags, symbolStatus), pfn)

typedef struct ub_cu_real {
#define X(name, cls, params, args, hook) __typeof__(name) *name;
    UB_CU_LIST(X)
#undef X
} ub_cu_real;

/* The real driver's functions, filled by ub_cu_resolve (resolve.c). */
extern ub_cu_real ub_cu;

/* Fills ub_cu from the libcuda.so.1 the process loaded; false while none is loaded (then it
 * tries again at the next call). */
bool ub_cu_resolve(void);

/* The driver function a successful lookup handed out at *pfn (NULL pfn or *pfn: nothing):
 * usbyte's wrapper in place of a real capture function (or lookup), any other unchanged
 * (driver_wrap.c). */
void ub_cu_substitute(void **pfn);

#endif
