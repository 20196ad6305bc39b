/* CUDA entry points the libraries export under names their headers do not declare: the runtime's
 * per-thread-default-stream forms (cuda_runtime_api.h declares them only under
 * CUDA_API_PER_THREAD_DEFAULT_STREAM) and the driver's legacy and _ptsz capture functions and
 * four-argument cuGetProcAddress (cuda.h maps the plain names to the _v2 forms).  Included after
 * cuda.h, the plain driver names here are the legacy functions: the macros are undone. */
#ifndef USBYTE_CUDA_EXPORTS_H
#define USBYTE_CUDA_EXPORTS_H

#include <cuda.h>
#include <cuda_runtime_api.h>

cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream, unsigned int flags);
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream);
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData);
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph);
cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *dependencies,
                                               const cudaGraphEdgeData *dependencyData, size_t numDependencies,
                                               enum cudaStreamCaptureMode mode);
cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *driverStatus);
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                                  unsigned long long flags,
                                                  enum cudaDriverEntryPointQueryResult *driverStatus);

#undef cuStreamBeginCapture
#undef cuStreamBeginCaptureToGraph
#undef cuStreamEndCapture
#undef cuStreamIsCapturing
#undef cuGetProcAddress
#undef cuGetProcAddress_v2

CUresult cuStreamBeginCapture(CUstream hStream);
CUresult cuStreamBeginCapture_ptsz(CUstream hStream);
CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode);
CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode);
CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
                                     const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                     CUstreamCaptureMode mode);
CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
                                          const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                          CUstreamCaptureMode mode);
CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph);
CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph);
CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus);
CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus);
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus);

#endif
