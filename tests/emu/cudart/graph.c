/* CUDA graphs, as far as a program needs them to launch work in one call: a graph of kernel and
 * host nodes (cudaGraphCreate, cudaGraphAddKernelNode, cudaGraphAddHostNode), its executable
 * snapshot (cudaGraphInstantiate) and its launch as one stream operation (cudaGraphLaunch and
 * _ptsz, reported as cuGraphLaunch; the driver stand-in's cuGraphLaunch comes here through
 * usbyteEmuGraphLaunch).  A node may depend only on nodes already in its graph, so the order of
 * insertion is a topological order: a launch runs the nodes in it, one after the other.
 * Each node keeps its dependencies (cudaGraphGetNodes, cudaGraphNodeGetDependencies); captured
 * nodes (capture.c) form a chain in capture order, the first one after the dependencies the
 * capture began with (none, or those given to cudaStreamBeginCaptureToGraph).
 * Handles are checked against the live objects before anything is read through them. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>   /* the runtime and driver callback ids and params structs */

#include "capture.h"
#include "errors.h"
#include "event.h"
#include "export.h"
#include "graph.h"
#include "interference.h"
#include "stream.h"
#include "stream_object.h"
#include "trace.h"
#include "work.h"

typedef void (*emu_kernel_fn)(void **args);

/* A node captured from a stream (capture.c), shared by its graph and the executable graphs
 * made from it. */
struct emu_tmpl {
    atomic_int refs;
    struct emu_cnode n;
};

static void tmpl_release(struct emu_tmpl *t)
{
    if (t == NULL || atomic_fetch_sub(&t->refs, 1) != 1)
        return;
    emu_cnode_drop(&t->n);
    free(t);
}

struct emu_node {
    struct emu_tmpl *tmpl;   /* a captured node (else a kernel or host node) */
    bool is_kernel;
    emu_kernel_fn kernel;
    void **args;
    cudaHostFn_t fn;
    void *user_data;
};

struct CUgraphNode_st {
    struct CUgraph_st *graph;
    struct emu_node node;
    size_t n_deps;
    struct CUgraphNode_st **deps;
};

struct CUgraph_st {
    struct CUgraph_st *next;   /* the live graphs */
    size_t n, cap;
    struct CUgraphNode_st **nodes;
};

struct CUgraphExec_st {
    struct CUgraphExec_st *next;   /* the live executable graphs */
    size_t n;
    struct emu_node *nodes;
};

static pthread_mutex_t graphs_mu = PTHREAD_MUTEX_INITIALIZER;
static struct CUgraph_st *graphs;
static struct CUgraphExec_st *execs;

/* With graphs_mu held. */
static bool graph_live(cudaGraph_t g)
{
    for (struct CUgraph_st *x = graphs; x; x = x->next)
        if (x == g)
            return true;
    return false;
}

static bool exec_live(cudaGraphExec_t e)
{
    for (struct CUgraphExec_st *x = execs; x; x = x->next)
        if (x == e)
            return true;
    return false;
}

EMU_EXPORT cudaError_t cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags)
{
    if (pGraph == NULL || flags != 0)
        return emu_result(cudaErrorInvalidValue);
    struct CUgraph_st *g = calloc(1, sizeof *g);
    if (g == NULL)
        return emu_result(cudaErrorMemoryAllocation);
    pthread_mutex_lock(&graphs_mu);
    g->next = graphs;
    graphs = g;
    pthread_mutex_unlock(&graphs_mu);
    *pGraph = g;
    return emu_result(cudaSuccess);
}

/* With graphs_mu held: graph is live and each of deps is one of its nodes, none twice. */
static cudaError_t check_deps(cudaGraph_t graph, const cudaGraphNode_t *deps, size_t n_deps)
{
    if (n_deps > 0 && deps == NULL)
        return cudaErrorInvalidValue;
    if (!graph_live(graph))
        return cudaErrorInvalidValue;
    for (size_t i = 0; i < n_deps; i++) {
        bool found = false;
        for (size_t k = 0; k < graph->n && !found; k++)
            found = graph->nodes[k] == deps[i];
        for (size_t k = 0; k < i && found; k++)
            found = deps[k] != deps[i];   /* a duplicate edge */
        if (!found)
            return cudaErrorInvalidValue;   /* "a dependency is not a node of this graph" */
    }
    return cudaSuccess;
}

cudaError_t emu_graph_check_deps(cudaGraph_t graph, const cudaGraphNode_t *deps, size_t n_deps)
{
    pthread_mutex_lock(&graphs_mu);
    cudaError_t err = check_deps(graph, deps, n_deps);
    pthread_mutex_unlock(&graphs_mu);
    return err;
}

/* With graphs_mu held. */
static cudaError_t add_node_locked(cudaGraphNode_t *out, cudaGraph_t graph, const cudaGraphNode_t *deps,
                                   size_t n_deps, const struct emu_node *node)
{
    cudaError_t err = check_deps(graph, deps, n_deps);
    struct CUgraphNode_st *x = NULL;
    struct CUgraphNode_st **copy = NULL;
    if (err == cudaSuccess && n_deps > 0) {
        if ((copy = malloc(n_deps * sizeof *copy)) == NULL)
            err = cudaErrorMemoryAllocation;
        else
            memcpy(copy, deps, n_deps * sizeof *copy);
    }
    if (err == cudaSuccess && graph->n == graph->cap) {
        size_t cap = graph->cap ? 2 * graph->cap : 8;
        struct CUgraphNode_st **nodes = realloc(graph->nodes, cap * sizeof *nodes);
        if (nodes == NULL) {
            err = cudaErrorMemoryAllocation;
        } else {
            graph->nodes = nodes;
            graph->cap = cap;
        }
    }
    if (err == cudaSuccess && (x = malloc(sizeof *x)) == NULL)
        err = cudaErrorMemoryAllocation;
    if (err != cudaSuccess) {
        free(copy);
        return err;
    }
    *x = (struct CUgraphNode_st){graph, *node, n_deps, copy};
    graph->nodes[graph->n++] = x;
    *out = x;
    return cudaSuccess;
}

static cudaError_t add_node(cudaGraphNode_t *out, cudaGraph_t graph, const cudaGraphNode_t *deps, size_t n_deps,
                            const struct emu_node *node)
{
    if (out == NULL)
        return cudaErrorInvalidValue;
    pthread_mutex_lock(&graphs_mu);
    cudaError_t err = add_node_locked(out, graph, deps, n_deps, node);
    pthread_mutex_unlock(&graphs_mu);
    return err;
}

/* With graphs_mu held: the live node x, or NULL. */
static struct CUgraphNode_st *node_live(cudaGraphNode_t x)
{
    for (struct CUgraph_st *g = graphs; g; g = g->next)
        for (size_t i = 0; i < g->n; i++)
            if (g->nodes[i] == x)
                return x;
    return NULL;
}

/* Fills up to *count entries of out from src (n of them), NULL past n; *count = what was filled. */
static void fill_nodes(cudaGraphNode_t *out, size_t *count, struct CUgraphNode_st *const *src, size_t n)
{
    if (out == NULL) {
        *count = n;
        return;
    }
    for (size_t i = 0; i < *count; i++)
        out[i] = i < n ? src[i] : NULL;
    if (*count > n)
        *count = n;
}

EMU_EXPORT cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *numNodes)
{
    if (numNodes == NULL)
        return emu_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&graphs_mu);
    cudaError_t err = graph_live(graph) ? cudaSuccess : cudaErrorInvalidValue;
    if (err == cudaSuccess)
        fill_nodes(nodes, numNodes, graph->nodes, graph->n);
    pthread_mutex_unlock(&graphs_mu);
    return emu_result(err);
}

/* Every edge the emulator makes carries the default (zero) edge data. */
EMU_EXPORT cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t *pDependencies,
                                                    cudaGraphEdgeData *edgeData, size_t *pNumDependencies)
{
    if (pNumDependencies == NULL || (edgeData != NULL && pDependencies == NULL))
        return emu_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&graphs_mu);
    struct CUgraphNode_st *x = node_live(node);
    if (x != NULL) {
        fill_nodes(pDependencies, pNumDependencies, x->deps, x->n_deps);
        if (edgeData)
            memset(edgeData, 0, *pNumDependencies * sizeof *edgeData);
    }
    pthread_mutex_unlock(&graphs_mu);
    return emu_result(x != NULL ? cudaSuccess : cudaErrorInvalidValue);
}

EMU_EXPORT cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                              const cudaGraphNode_t *pDependencies, size_t numDependencies,
                                              const struct cudaKernelNodeParams *pNodeParams)
{
    if (pNodeParams == NULL)
        return emu_result(cudaErrorInvalidValue);
    if (pNodeParams->func == NULL)
        return emu_result(cudaErrorInvalidDeviceFunction);
    cudaError_t err = emu_check_launch(pNodeParams->gridDim.x, pNodeParams->gridDim.y, pNodeParams->gridDim.z,
                                       pNodeParams->blockDim.x, pNodeParams->blockDim.y, pNodeParams->blockDim.z, false);
    if (err != cudaSuccess)
        return emu_result(err);
    if (pNodeParams->extra != NULL)
        return emu_result(cudaErrorNotSupported);   /* the emulator passes kernelParams only */
    struct emu_node node = {.is_kernel = true, .args = pNodeParams->kernelParams};
    void *func = pNodeParams->func;
    memcpy(&node.kernel, &func, sizeof node.kernel);
    return emu_result(add_node(pGraphNode, graph, pDependencies, numDependencies, &node));
}

EMU_EXPORT cudaError_t cudaGraphAddHostNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                            const cudaGraphNode_t *pDependencies, size_t numDependencies,
                                            const struct cudaHostNodeParams *pNodeParams)
{
    if (pNodeParams == NULL || pNodeParams->fn == NULL)
        return emu_result(cudaErrorInvalidValue);
    struct emu_node node = {.fn = pNodeParams->fn, .user_data = pNodeParams->userData};
    return emu_result(add_node(pGraphNode, graph, pDependencies, numDependencies, &node));
}

EMU_EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags)
{
    if (pGraphExec == NULL || flags != 0)   /* the emulator knows no instantiation flags */
        return emu_result(cudaErrorInvalidValue);
    struct CUgraphExec_st *e = calloc(1, sizeof *e);
    if (e == NULL)
        return emu_result(cudaErrorMemoryAllocation);
    pthread_mutex_lock(&graphs_mu);
    cudaError_t err = graph_live(graph) ? cudaSuccess : cudaErrorInvalidValue;
    if (err == cudaSuccess && graph->n > 0 && (e->nodes = malloc(graph->n * sizeof *e->nodes)) == NULL)
        err = cudaErrorMemoryAllocation;
    if (err == cudaSuccess) {
        e->n = graph->n;
        for (size_t i = 0; i < graph->n; i++) {
            e->nodes[i] = graph->nodes[i]->node;
            if (e->nodes[i].tmpl)
                atomic_fetch_add(&e->nodes[i].tmpl->refs, 1);
        }
        e->next = execs;
        execs = e;
    }
    pthread_mutex_unlock(&graphs_mu);
    if (err != cudaSuccess) {
        free(e);
        return emu_result(err);
    }
    *pGraphExec = e;
    return emu_result(cudaSuccess);
}

EMU_EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
    pthread_mutex_lock(&graphs_mu);
    bool found = false;
    for (struct CUgraphExec_st **x = &execs; *x; x = &(*x)->next)
        if (*x == graphExec) {
            *x = graphExec->next;
            found = true;
            break;
        }
    pthread_mutex_unlock(&graphs_mu);
    if (!found)
        return emu_result(cudaErrorInvalidValue);
    /* A launch still pending runs its own copy of the nodes, as CUDA lets it finish. */
    for (size_t i = 0; i < graphExec->n; i++)
        tmpl_release(graphExec->nodes[i].tmpl);
    free(graphExec->nodes);
    free(graphExec);
    return emu_result(cudaSuccess);
}

EMU_EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    pthread_mutex_lock(&graphs_mu);
    bool found = false;
    for (struct CUgraph_st **x = &graphs; *x; x = &(*x)->next)
        if (*x == graph) {
            *x = graph->next;
            found = true;
            break;
        }
    pthread_mutex_unlock(&graphs_mu);
    if (!found)
        return emu_result(cudaErrorInvalidValue);
    for (size_t i = 0; i < graph->n; i++) {
        tmpl_release(graph->nodes[i]->node.tmpl);
        free(graph->nodes[i]->deps);
        free(graph->nodes[i]);
    }
    free(graph->nodes);
    free(graph);
    return emu_result(cudaSuccess);
}

cudaError_t emu_graph_from_capture(struct emu_cnode *nodes, size_t n, cudaGraph_t into, const cudaGraphNode_t *deps,
                                   size_t n_deps, cudaGraph_t *out)
{
    cudaGraph_t g = into;
    cudaError_t err = into ? cudaSuccess : cudaGraphCreate(&g, 0);
    size_t i = 0;
    pthread_mutex_lock(&graphs_mu);
    /* The graph captured into (and the dependencies) may have gone during the capture. */
    if (err == cudaSuccess)
        err = check_deps(g, deps, n_deps);
    cudaGraphNode_t prev = NULL;
    for (; err == cudaSuccess && i < n; i++) {
        struct emu_tmpl *t = malloc(sizeof *t);
        if (t == NULL) {
            err = cudaErrorMemoryAllocation;
            break;
        }
        atomic_init(&t->refs, 1);
        t->n = nodes[i];
        cudaGraphNode_t x;
        err = prev ? add_node_locked(&x, g, &prev, 1, &(struct emu_node){.tmpl = t})
                   : add_node_locked(&x, g, deps, n_deps, &(struct emu_node){.tmpl = t});
        if (err != cudaSuccess) {
            tmpl_release(t);   /* frees node i's arg */
            i++;
            break;
        }
        prev = x;
    }
    pthread_mutex_unlock(&graphs_mu);
    /* Every node is taken: the graph holds those added, the rest go with a failure. */
    for (; i < n; i++)
        emu_cnode_drop(&nodes[i]);
    if (err != cudaSuccess) {
        if (g && !into)
            cudaGraphDestroy(g);
        return err;
    }
    *out = g;
    return cudaSuccess;
}

/* ---- launches ---- */
struct launch_step {
    struct emu_node node;
    void *arg;                 /* a captured op's own arg for this launch */
    struct emu_record *rec;    /* an external record or wait node's record */
};

struct launch_op {
    size_t n;
    int device;                /* the launching stream's (compute of that device) */
    struct launch_step steps[];
};

static void node_call(void *arg)
{
    const struct emu_node *node = arg;
    if (node->is_kernel)
        node->kernel(node->args);
    else
        node->fn(node->user_data);
}

static void launch_run(void *arg)
{
    struct launch_op *l = arg;
    for (size_t i = 0; i < l->n; i++) {
        struct launch_step *st = &l->steps[i];
        struct emu_tmpl *t = st->node.tmpl;
        if (t == NULL)
            emu_compute_run(l->device, node_call, &st->node);
        else if (t->n.kind == EMU_CN_OP)
            t->n.run(st->arg);
        else if (t->n.kind == EMU_CN_RECORD && st->rec)
            emu_record_complete(st->rec);
        else if (t->n.kind == EMU_CN_WAIT && st->rec) {
            emu_record_wait(st->rec);
            emu_record_release(st->rec);
        }
        tmpl_release(t);
    }
    free(l);
}

/* A fresh arg (or record) for one launch of each captured node. */
static cudaError_t launch_prepare(struct launch_op *l, struct CUstream_st *s)
{
    for (size_t i = 0; i < l->n; i++) {
        struct launch_step *st = &l->steps[i];
        st->arg = NULL;
        st->rec = NULL;
        struct emu_tmpl *t = st->node.tmpl;
        if (t == NULL)
            continue;
        atomic_fetch_add(&t->refs, 1);
        if (t->n.kind == EMU_CN_OP) {
            if (t->n.arg_size && (st->arg = malloc(t->n.arg_size)) != NULL)
                memcpy(st->arg, t->n.arg, t->n.arg_size);
            else if (!t->n.arg_size)
                st->arg = t->n.clone(t->n.arg);
            if (st->arg == NULL) {
                l->n = i + 1;
                return cudaErrorMemoryAllocation;
            }
        } else if (t->n.kind == EMU_CN_RECORD) {
            st->rec = emu_event_record_at_launch(t->n.event, emu_stream_id(s));
        } else {
            st->rec = emu_event_latest_record(t->n.event);
        }
    }
    return cudaSuccess;
}

/* A launch that never runs: what launch_prepare made goes. */
static void launch_drop(struct launch_op *l)
{
    for (size_t i = 0; i < l->n; i++) {
        struct emu_tmpl *t = l->steps[i].node.tmpl;
        if (t == NULL)
            continue;
        if (t->n.kind == EMU_CN_OP && l->steps[i].arg)
            t->n.drop ? t->n.drop(l->steps[i].arg) : free(l->steps[i].arg);
        else if (t->n.kind == EMU_CN_RECORD && l->steps[i].rec)
            emu_record_complete(l->steps[i].rec);   /* never leave a record that cannot complete */
        else if (l->steps[i].rec)
            emu_record_release(l->steps[i].rec);
        tmpl_release(t);
    }
    free(l);
}

static cudaError_t launch(cudaGraphExec_t exec, cudaStream_t stream, bool ptsz)
{
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz, &s);
    if (err != cudaSuccess)
        return err;
    pthread_mutex_lock(&graphs_mu);
    struct launch_op *l = NULL;
    if (!exec_live(exec))
        err = cudaErrorInvalidResourceHandle;
    else if ((l = malloc(sizeof *l + exec->n * sizeof l->steps[0])) == NULL)
        err = cudaErrorMemoryAllocation;
    else {
        l->n = exec->n;
        l->device = emu_stream_device(s);
        for (size_t i = 0; i < exec->n; i++)
            l->steps[i].node = exec->nodes[i];
        err = launch_prepare(l, s);
    }
    pthread_mutex_unlock(&graphs_mu);
    if (err != cudaSuccess) {
        if (l)
            launch_drop(l);
        return err;
    }
    char what[64];
    snprintf(what, sizeof what, "cudaGraphLaunch %zu nodes", l->n);
    if ((err = emu_enqueue(s, launch_run, l, what, NULL)) != cudaSuccess)
        launch_drop(l);
    return err;
}

static cudaError_t launch_nested(cudaGraphExec_t exec, cudaStream_t stream, bool ptsz)
{
    cuGraphLaunch_params d = {exec, (CUstream)stream};
    return ptsz ? EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, "cuGraphLaunch_ptsz", &d,
                             launch(exec, stream, true))
                : EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, "cuGraphLaunch", &d, launch(exec, stream, false));
}

EMU_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    cudaGraphLaunch_v10000_params p = {graphExec, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, "cudaGraphLaunch", &p,
               launch_nested(graphExec, stream, false));
}

EMU_EXPORT cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    cudaGraphLaunch_ptsz_v10000_params p = {graphExec, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000, "cudaGraphLaunch_ptsz", &p,
               launch_nested(graphExec, stream, true));
}

EMU_EXPORT cudaError_t usbyteEmuGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream, int ptsz)
{
    return launch(exec, stream, ptsz != 0);
}
