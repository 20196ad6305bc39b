/* The two baselines: WFBP (what NCCL does without us) and SyncEASGD (wait for the whole
 * backward pass, then reduce everything at once). */
#include <stdlib.h>

#include "usbyte/alloc.h"
#include "usbyte/model.h"
#include "usbyte/policy.h"

/* One block per call, in arrival order: each allreduce goes out as soon as its gradient is
 * ready and the link is free (wait-free backpropagation). */
int ub_policy_wfbp(const ub_profile *prof, ub_plan *out)
{
    if (prof->n_calls <= 0)
        return -1;
    ub_plan_clear(out);
    for (int k = 0; k < prof->n_calls; k++) {
        ub_plan_begin_block(out);
        ub_plan_add_segment(out, k, 0, prof->calls[k].bytes);
    }
    return 0;
}

/* One allreduce holding everything.  A block must be homogeneous and must not cross a call
 * marked "merge": false, so "everything" becomes: one block per (dtype, op) class inside each
 * region between merge barriers.  Choice: inside a region the classes go in the order their
 * first call arrived, which is what a framework that buckets by dtype would issue.  With a
 * staging limit a class is packed into consecutive blocks of whole calls up to staging_max
 * (a call alone never needs staging, whatever its size). */
int ub_policy_syncea(const ub_profile *prof, ub_plan *out)
{
    int n = prof->n_calls;
    if (n <= 0)
        return -1;
    ub_plan_clear(out);
    char *done = ub_xcalloc((size_t)n, 1, "planning syncea");
    int region_start = 0;
    for (int k = 0; k < n; k++) {
        /* A region ends at a merge:false call (it may still share a block with earlier calls)
         * or at the last call. */
        if (prof->calls[k].merge && k != n - 1)
            continue;
        for (int first = region_start; first <= k; first++) {
            if (done[first])
                continue;
            ub_plan_begin_block(out);
            double block_bytes = 0.0;
            for (int m = first; m <= k; m++) {
                if (done[m] || prof->calls[m].dtype != prof->calls[first].dtype ||
                    prof->calls[m].op != prof->calls[first].op)
                    continue;
                double b = (double)prof->calls[m].bytes;
                if (block_bytes > 0.0 && !ub_staging_fits(prof, block_bytes + b)) {
                    ub_plan_begin_block(out);
                    block_bytes = 0.0;
                }
                ub_plan_add_segment(out, m, 0, prof->calls[m].bytes);
                block_bytes += b;
                done[m] = 1;
            }
        }
        region_start = k + 1;
    }
    free(done);
    return 0;
}
