/* The entry points that begin and end a stream capture: cudaStreamBeginCapture,
 * cudaStreamBeginCaptureToGraph and cudaStreamEndCapture (and their _ptsz forms), and the
 * private ones the driver's cuStreamBeginCapture (one argument: global mode), _v2, ToGraph and
 * cuStreamEndCapture come through (usbyteEmuStreamBeginCapture/EndCapture), never through the
 * public (interposable) entry points.  They check the arguments and the stream; the capture's
 * state and its rules are capture.c's, and the graph an ended capture makes is graph.c's. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "errors.h"
#include "export.h"
#include "graph.h"
#include "stream.h"
#include "stream_object.h"

/* Every edge the emulator models is a default one (cudaGraphDependencyTypeDefault, ports 0):
 * programmatic edges would need programmatic dependent launch, which it does not run. */
static bool default_edges(const cudaGraphEdgeData *edges, size_t n)
{
    static const cudaGraphEdgeData zero;
    for (size_t i = 0; edges && i < n; i++)
        if (memcmp(&edges[i], &zero, sizeof zero) != 0)
            return false;
    return true;
}

static cudaError_t begin_capture(cudaStream_t stream, enum cudaStreamCaptureMode mode, bool ptsz, cudaGraph_t into,
                                 const cudaGraphNode_t *deps, const cudaGraphEdgeData *edges, size_t n_deps)
{
    if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
        mode != cudaStreamCaptureModeRelaxed)
        return cudaErrorInvalidValue;
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz, &s);
    if (err != cudaSuccess)
        return err;
    if (s->is_legacy)
        return cudaErrorStreamCaptureUnsupported;   /* "may not be initiated if stream is cudaStreamLegacy" */
    if (into != NULL && (err = emu_graph_check_deps(into, deps, n_deps)) != cudaSuccess)
        return err;
    if (into != NULL && !default_edges(edges, n_deps))
        return cudaErrorNotSupported;
    struct emu_capture *c = calloc(1, sizeof *c);
    if (c == NULL)
        return cudaErrorMemoryAllocation;
    if (into != NULL && n_deps > 0) {
        if ((c->deps = malloc(n_deps * sizeof *c->deps)) == NULL) {
            free(c);
            return cudaErrorMemoryAllocation;
        }
        memcpy(c->deps, deps, n_deps * sizeof *c->deps);
        c->n_deps = n_deps;
    }
    c->into = into;
    if ((err = emu_capture_begin(c, s, mode)) != cudaSuccess) {
        free(c->deps);
        free(c);
    }
    return err;
}

EMU_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    return emu_result(begin_capture(stream, mode, false, NULL, NULL, NULL, 0));
}

EMU_EXPORT cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    return emu_result(begin_capture(stream, mode, true, NULL, NULL, NULL, 0));
}

/* "graph - Graph to capture into": a NULL graph is an invalid value, as is any graph that is
 * not live or a dependency that is not one of its nodes. */
static cudaError_t begin_capture_to_graph(cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *deps,
                                          const cudaGraphEdgeData *edges, size_t n_deps,
                                          enum cudaStreamCaptureMode mode, bool ptsz)
{
    if (graph == NULL)
        return cudaErrorInvalidValue;
    return begin_capture(stream, mode, ptsz, graph, deps, edges, n_deps);
}

EMU_EXPORT cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph,
                                                     const cudaGraphNode_t *dependencies,
                                                     const cudaGraphEdgeData *dependencyData, size_t numDependencies,
                                                     enum cudaStreamCaptureMode mode)
{
    return emu_result(begin_capture_to_graph(stream, graph, dependencies, dependencyData, numDependencies, mode, false));
}

EMU_EXPORT cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t stream, cudaGraph_t graph,
                                                          const cudaGraphNode_t *dependencies,
                                                          const cudaGraphEdgeData *dependencyData,
                                                          size_t numDependencies, enum cudaStreamCaptureMode mode)
{
    return emu_result(begin_capture_to_graph(stream, graph, dependencies, dependencyData, numDependencies, mode, true));
}

EMU_EXPORT cudaError_t usbyteEmuStreamBeginCapture(cudaStream_t stream, int ptsz, enum cudaStreamCaptureMode mode,
                                                   cudaGraph_t graph, const cudaGraphNode_t *deps,
                                                   const cudaGraphEdgeData *edges, size_t n_deps)
{
    return graph ? begin_capture_to_graph(stream, graph, deps, edges, n_deps, mode, ptsz != 0)
                 : begin_capture(stream, mode, ptsz != 0, NULL, NULL, NULL, 0);
}

static cudaError_t end_capture(cudaStream_t stream, cudaGraph_t *graph, bool ptsz)
{
    if (graph == NULL)
        return cudaErrorInvalidValue;
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz, &s);
    if (err != cudaSuccess)
        return err;
    struct emu_capture *c;
    err = emu_capture_end(s, &c);
    if (c == NULL)
        return err;
    *graph = NULL;
    if (err == cudaSuccess)   /* takes every node */
        err = emu_graph_from_capture(c->nodes, c->n, c->into, c->deps, c->n_deps, graph);
    else
        for (size_t i = 0; i < c->n; i++)
            emu_cnode_drop(&c->nodes[i]);
    free(c->deps);
    free(c->nodes);
    free(c);
    return err;
}

EMU_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
    return emu_result(end_capture(stream, pGraph, false));
}

EMU_EXPORT cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph)
{
    return emu_result(end_capture(stream, pGraph, true));
}

EMU_EXPORT cudaError_t usbyteEmuStreamEndCapture(cudaStream_t stream, int ptsz, cudaGraph_t *graph)
{
    return end_capture(stream, graph, ptsz != 0);
}
