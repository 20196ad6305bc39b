/* Every NCCL entry point usbyte knows, once (darshan style).  The list generates the table of
 * real functions (resolved from the pncclXxx aliases), the name table and the exported
 * wrappers (interpose/nccl_wrap.c).
 *
 * X(Name, CLASS, (parameters), (arguments), (hook arguments))
 *   Name      the part after "nccl": the wrapper is ncclName, the real alias pncclName;
 *   CLASS     COLL / P2P: an operation on a communicator and stream (hook: send, recv, count,
 *             dtype, op or -1, root/peer or -1, comm, stream); GSTART / GEND: group state;
 *             INIT: creates one communicator (hook: ncclComm_t *out, ncclConfig_t *config, the
 *             parent communicator or NULL, and what its identity derives from: the ncclUniqueId
 *             array and its length, or NULL and the split's color (-1 for a shrink));
 *             INITALL: creates several (hook: ncclComm_t *out, int n); FINI: ends one (hook:
 *             comm); CALLONLY: not wrapped, only resolved because usbyte calls it. */
#ifndef USBYTE_NCCL_LIST_H
#define USBYTE_NCCL_LIST_H

#include <nccl.h>

#define UB_NCCL_LIST(X)                                                                            \
    X(AllReduce, COLL,                                                                             \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,\
       ncclComm_t comm, cudaStream_t stream),                                                      \
      (sendbuff, recvbuff, count, datatype, op, comm, stream),                                     \
      (sendbuff, recvbuff, count, datatype, (int)op, -1, comm, stream))                            \
    X(Broadcast, COLL,                                                                             \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,      \
       ncclComm_t comm, cudaStream_t stream),                                                      \
      (sendbuff, recvbuff, count, datatype, root, comm, stream),                                   \
      (sendbuff, recvbuff, count, datatype, -1, root, comm, stream))                               \
    X(Bcast, COLL,                                                                                 \
      (void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,               \
       cudaStream_t stream),                                                                       \
      (buff, count, datatype, root, comm, stream),                                                 \
      (buff, buff, count, datatype, -1, root, comm, stream))                                       \
    X(Reduce, COLL,                                                                                \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,\
       int root, ncclComm_t comm, cudaStream_t stream),                                            \
      (sendbuff, recvbuff, count, datatype, op, root, comm, stream),                               \
      (sendbuff, recvbuff, count, datatype, (int)op, root, comm, stream))                          \
    X(AllGather, COLL,                                                                             \
      (const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,            \
       ncclComm_t comm, cudaStream_t stream),                                                      \
      (sendbuff, recvbuff, sendcount, datatype, comm, stream),                                     \
      (sendbuff, recvbuff, sendcount, datatype, -1, -1, comm, stream))                             \
    X(ReduceScatter, COLL,                                                                         \
      (const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,            \
       ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream),                                      \
      (sendbuff, recvbuff, recvcount, datatype, op, comm, stream),                                 \
      (sendbuff, recvbuff, recvcount, datatype, (int)op, -1, comm, stream))                        \
    X(AlltoAll, COLL,                                                                              \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,                \
       ncclComm_t comm, cudaStream_t stream),                                                      \
      (sendbuff, recvbuff, count, datatype, comm, stream),                                         \
      (sendbuff, recvbuff, count, datatype, -1, -1, comm, stream))                                 \
    X(Gather, COLL,                                                                                \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,      \
       ncclComm_t comm, cudaStream_t stream),                                                      \
      (sendbuff, recvbuff, count, datatype, root, comm, stream),                                   \
      (sendbuff, recvbuff, count, datatype, -1, root, comm, stream))                               \
    X(Scatter, COLL,                                                                               \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,      \
       ncclComm_t comm, cudaStream_t stream),                                                      \
      (sendbuff, recvbuff, count, datatype, root, comm, stream),                                   \
      (sendbuff, recvbuff, count, datatype, -1, root, comm, stream))                               \
    X(Send, P2P,                                                                                   \
      (const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,     \
       cudaStream_t stream),                                                                       \
      (sendbuff, count, datatype, peer, comm, stream),                                             \
      (sendbuff, NULL, count, datatype, -1, peer, comm, stream))                                   \
    X(Recv, P2P,                                                                                   \
      (void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,           \
       cudaStream_t stream),                                                                       \
      (recvbuff, count, datatype, peer, comm, stream),                                             \
      (NULL, recvbuff, count, datatype, -1, peer, comm, stream))                                   \
    X(GroupStart, GSTART, (void), (), ())                                                          \
    X(GroupEnd, GEND, (void), (), ())                                                              \
    X(GroupSimulateEnd, GEND, (ncclSimInfo_t *simInfo), (simInfo), ())                             \
    X(CommInitRank, INIT, (ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank),           \
      (comm, nranks, commId, rank), (comm, NULL, NULL, &commId, 1))                                \
    X(CommInitRankConfig, INIT,                                                                    \
      (ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config),         \
      (comm, nranks, commId, rank, config), (comm, config, NULL, &commId, 1))                      \
    X(CommInitRankScalable, INIT,                                                                  \
      (ncclComm_t *newcomm, int nranks, int myrank, int nId, ncclUniqueId *commIds,                \
       ncclConfig_t *config),                                                                      \
      (newcomm, nranks, myrank, nId, commIds, config), (newcomm, config, NULL, commIds, nId))       \
    X(CommInitAll, INITALL, (ncclComm_t *comm, int ndev, const int *devlist),                     \
      (comm, ndev, devlist), (comm, ndev))                                                         \
    X(CommSplit, INIT,                                                                             \
      (ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config),            \
      (comm, color, key, newcomm, config), (newcomm, config, comm, NULL, color))                   \
    X(CommShrink, INIT,                                                                            \
      (ncclComm_t comm, int *excludeRanksList, int excludeRanksCount, ncclComm_t *newcomm,         \
       ncclConfig_t *config, int shrinkFlags),                                                     \
      (comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags),                   \
      (newcomm, config, comm, NULL, -1))                                                           \
    X(CommFinalize, FINI, (ncclComm_t comm), (comm), (comm))                                       \
    X(CommDestroy, FINI, (ncclComm_t comm), (comm), (comm))                                        \
    X(CommAbort, FINI, (ncclComm_t comm), (comm), (comm))                                          \
    X(CommRevoke, FINI, (ncclComm_t comm, int revokeFlags), (comm, revokeFlags), (comm))           \
    X(CommCount, CALLONLY, (const ncclComm_t comm, int *count), (comm, count), ())                 \
    X(CommUserRank, CALLONLY, (const ncclComm_t comm, int *rank), (comm, rank), ())                \
    X(CommCuDevice, CALLONLY, (const ncclComm_t comm, int *device), (comm, device), ())            \
    X(CommGetAsyncError, CALLONLY, (ncclComm_t comm, ncclResult_t *asyncError), (comm, asyncError), ())\
    X(GetVersion, CALLONLY, (int *version), (version), ())

typedef enum {
#define X(name, cls, params, args, hook) UB_NCCL_##name,
    UB_NCCL_LIST(X)
#undef X
    UB_NCCL_COUNT
} ub_nccl_id;

/* The real functions, typed from nccl.h's own pncclXxx prototypes. */
typedef struct ub_nccl_real {
#define X(name, cls, params, args, hook) __typeof__(pnccl##name) *name;
    UB_NCCL_LIST(X)
#undef X
} ub_nccl_real;

extern ub_nccl_real ub_nccl;
extern const char *const ub_nccl_names[UB_NCCL_COUNT];  /* "ncclAllReduce", ... */

/* Resolves every real function once (thread-safe); returns 0 when the table is usable. */
int ub_nccl_resolve(void);

#endif
