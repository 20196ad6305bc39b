/* The calling thread's NCCL group depth, and what must follow the launch of its open groups: an
 * operation issued inside a group is launched at the outermost ncclGroupEnd, so device work that
 * must come after it (a profiled call's end event, the agreement's copy back) waits for then. */
#include <pthread.h>
#include <string.h>

#include "group.h"
#include "guard.h"
#include "nccl_list.h"
#include "state.h"

static _Thread_local int group_depth;
static _Thread_local ub_after_launch queue[UB_MAX_AFTER_LAUNCH];
static _Thread_local int n_queue;
/* A failure of what usbyte issued while this thread's group was open (the group ended early, a
 * block of the plan): NCCL would have failed the whole group, so its outermost end returns it. */
static _Thread_local ncclResult_t group_error;

void ub_group_enter(void) { group_depth++; }

int ub_group_leave(void)
{
    if (group_depth > 0)
        group_depth--;
    return group_depth;
}

int ub_thread_group_depth(void) { return group_depth; }
bool ub_thread_in_group(void) { return group_depth > 0; }
bool ub_group_pending(void) { return n_queue > 0; }

bool ub_group_after_launch(ub_after_launch_fn fn, const void *data, size_t size)
{
    if (n_queue == UB_MAX_AFTER_LAUNCH || size > UB_AFTER_LAUNCH_DATA)
        return false;
    queue[n_queue].fn = fn;
    memcpy(queue[n_queue].data, data, size);
    n_queue++;
    return true;
}

int ub_group_take_after_launch(ub_after_launch *out)
{
    int n = n_queue;
    n_queue = 0;
    memcpy(out, queue, (size_t)n * sizeof *out);
    return n;
}

ncclResult_t ub_group_split_begin(int depth)
{
    for (int i = 0; i < depth; i++) {
        ncclResult_t r = UB_NCCL(ub_nccl.GroupEnd());
        if (r != ncclSuccess) /* the application's group failed (NCCL dropped it): its own end says so */
            return ub_group_note_error(r);
    }
    return ncclSuccess;
}

ncclResult_t ub_group_split_end(int depth)
{
    for (int i = 0; i < depth; i++) {
        ncclResult_t r = UB_NCCL(ub_nccl.GroupStart());
        if (r != ncclSuccess)
            return ub_group_note_error(r);
    }
    return ncclSuccess;
}

ncclResult_t ub_group_note_error(ncclResult_t r)
{
    if (r != ncclSuccess && group_error == ncclSuccess)
        group_error = r;
    return r;
}

ncclResult_t ub_group_result(ncclResult_t r)
{
    if (group_depth > 0)
        return r;
    ncclResult_t noted = group_error;
    group_error = ncclSuccess;
    return r != ncclSuccess || noted == ncclSuccess ? r : noted;
}
