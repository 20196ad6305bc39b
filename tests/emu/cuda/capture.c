/* Stream capture through the driver API: cuStreamBeginCapture (the legacy one-argument form,
 * which captures in global mode), cuStreamBeginCapture_v2 (stream, mode),
 * cuStreamBeginCaptureToGraph, cuStreamEndCapture and cuStreamIsCapturing, each with its _ptsz
 * form (a NULL stream is then the per-thread default stream).  They reach the emulated
 * runtime's capture through the private interface, never through cudaStreamBeginCapture and
 * the like: on the real stack a runtime interposer does not see driver calls, and the emulator
 * must not let it either. */

/* As the driver's own sources do: cuda.h then names the functions themselves (the legacy
 * one-argument cuStreamBeginCapture included) instead of mapping them to their newest form. */
#define __CUDA_API_VERSION_INTERNAL 1

#include "../emu_internal.h"
#include "driver.h"

static CUresult begin(CUstream stream, int ptsz, CUstreamCaptureMode mode)
{
    return emu_cu_result(usbyteEmuStreamBeginCapture((cudaStream_t)stream, ptsz, (enum cudaStreamCaptureMode)mode,
                                                     NULL, NULL, NULL, 0));
}

static CUresult begin_to_graph(CUstream stream, int ptsz, CUgraph graph, const CUgraphNode *deps,
                               const CUgraphEdgeData *edges, size_t n_deps, CUstreamCaptureMode mode)
{
    if (graph == NULL)   /* the private call would take it for a capture into a new graph */
        return CUDA_ERROR_INVALID_VALUE;
    /* CUgraphEdgeData and cudaGraphEdgeData share one layout, as do the node handles. */
    return emu_cu_result(usbyteEmuStreamBeginCapture((cudaStream_t)stream, ptsz, (enum cudaStreamCaptureMode)mode,
                                                     (cudaGraph_t)graph, (const cudaGraphNode_t *)deps,
                                                     (const cudaGraphEdgeData *)edges, n_deps));
}

EMU_CU_EXPORT CUresult cuStreamBeginCapture(CUstream hStream)
{
    return begin(hStream, 0, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

EMU_CU_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream hStream)
{
    return begin(hStream, 1, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

EMU_CU_EXPORT CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
    return begin(hStream, 0, mode);
}

EMU_CU_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{
    return begin(hStream, 1, mode);
}

EMU_CU_EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
                                                   const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                                   CUstreamCaptureMode mode)
{
    return begin_to_graph(hStream, 0, hGraph, dependencies, dependencyData, numDependencies, mode);
}

EMU_CU_EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
                                                        const CUgraphNode *dependencies,
                                                        const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                                        CUstreamCaptureMode mode)
{
    return begin_to_graph(hStream, 1, hGraph, dependencies, dependencyData, numDependencies, mode);
}

EMU_CU_EXPORT CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    return emu_cu_result(usbyteEmuStreamEndCapture((cudaStream_t)hStream, 0, (cudaGraph_t *)phGraph));
}

EMU_CU_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
    return emu_cu_result(usbyteEmuStreamEndCapture((cudaStream_t)hStream, 1, (cudaGraph_t *)phGraph));
}

/* CUstreamCaptureStatus and cudaStreamCaptureStatus have the same values. */
EMU_CU_EXPORT CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    return emu_cu_result(usbyteEmuStreamIsCapturing((cudaStream_t)hStream, 0,
                                                    (enum cudaStreamCaptureStatus *)captureStatus));
}

EMU_CU_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    return emu_cu_result(usbyteEmuStreamIsCapturing((cudaStream_t)hStream, 1,
                                                    (enum cudaStreamCaptureStatus *)captureStatus));
}
