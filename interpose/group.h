/* The calling thread's NCCL groups (group.c). */
#ifndef USBYTE_GROUP_H
#define USBYTE_GROUP_H

#include "lock_contract.h"
#include "state.h"

void ub_group_enter(void);
int ub_group_leave(void);             /* the depth left */
int ub_thread_group_depth(void);
bool ub_thread_in_group(void);
/* Work that must follow the launch of this thread's open groups, run (lock held) after the
 * outermost real ncclGroupEnd; data is copied (at most 48 bytes).  false: no room.  The life
 * cycle takes the queue there and runs each fn(data) itself (ub_group_ended): a function of a
 * higher tier is called from above, never from this file. */
#define UB_MAX_AFTER_LAUNCH 64
#define UB_AFTER_LAUNCH_DATA 48
typedef void (*ub_after_launch_fn)(const void *data);
typedef struct ub_after_launch {
    ub_after_launch_fn fn;
    unsigned char data[UB_AFTER_LAUNCH_DATA];
} ub_after_launch;
bool ub_group_after_launch(ub_after_launch_fn fn, const void *data, size_t size);
bool ub_group_pending(void);
/* Empties this thread's queue into out (UB_MAX_AFTER_LAUNCH entries); returns how many. */
int ub_group_take_after_launch(ub_after_launch *out);
/* Ends the calling thread's open groups for real (the operations issued in them are launched) and
 * reopens them: blocks and the agreement's read may then follow what came before them, in order.
 * NCCL's failure is returned, and noted for the application's outermost ncclGroupEnd. */
ncclResult_t ub_group_split_begin(int depth);
ncclResult_t ub_group_split_end(int depth);
/* Notes a failure of what usbyte issued inside this thread's open group; returns r. */
ncclResult_t ub_group_note_error(ncclResult_t r);
/* What the application's ncclGroupEnd returns: r (the real one's result), or, at the outermost,
 * a failure noted inside the group (then forgotten). */
ncclResult_t ub_group_result(ncclResult_t r);

#endif
