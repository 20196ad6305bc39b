/* The calling thread's NCCL group (see group.c). */
#ifndef USBYTE_EMU_NCCL_GROUP_H
#define USBYTE_EMU_NCCL_GROUP_H

#include "nccl_emu.h"

int emu_group_depth(void);
void emu_group_start(void);
ncclResult_t emu_group_end(void);
ncclResult_t emu_group_simulate_end(ncclSimInfo_t *info);
/* Queues op on (c, stream); outside a group it is issued at once. */
ncclResult_t emu_group_add(struct ncclComm *c, cudaStream_t stream, const struct emu_coll *op);
/* A communicator attached inside a group: the wait for the other ranks happens at group end. */
ncclResult_t emu_group_add_init(struct ncclComm *c);
/* An operation's error: inside a group it is the group's (its outermost end returns it and
 * launches nothing, as NCCL's ncclGroupErrCheck); returns r. */
ncclResult_t emu_group_error(ncclResult_t r);

#endif
