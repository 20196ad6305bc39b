/* The X-list of interpose/driver_list.h (its comment says what each entry means), alone and
 * without includes, so that the preprocessor can expand it into the version script
 * (libusbyte.map.in).  The parameter types are only text here; driver_list.h includes cuda.h. */
#ifndef USBYTE_DRIVER_XLIST_H
#define USBYTE_DRIVER_XLIST_H

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

#endif
