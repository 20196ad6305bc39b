/* What stream capture asks of the graphs (graph.c). */
#ifndef USBYTE_EMU_CUDART_GRAPH_H
#define USBYTE_EMU_CUDART_GRAPH_H

#include <stddef.h>

#include <cuda_runtime_api.h>

struct emu_cnode;

/* A graph of captured nodes (takes every node, also when it fails): a new one when
 * into is NULL, else into itself (*out = into), the first node after deps, each next node
 * after the one before; cudaErrorInvalidValue when into or one of deps is gone. */
cudaError_t emu_graph_from_capture(struct emu_cnode *nodes, size_t n, cudaGraph_t into, const cudaGraphNode_t *deps,
                                   size_t n_deps, cudaGraph_t *out);
/* cudaErrorInvalidValue unless graph is live and deps (n_deps of them) are distinct nodes of it. */
cudaError_t emu_graph_check_deps(cudaGraph_t graph, const cudaGraphNode_t *deps, size_t n_deps);

#endif
