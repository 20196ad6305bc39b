/* `ddp`: PyTorch DistributedDataParallel's default gradient buckets, as a reference.
 *
 * DDP (torch/csrc/distributed/c10d/reducer.cpp, compute_bucket_assignment_by_size, called by
 * Reducer::rebuild_buckets after the first iteration with the parameters in the order their
 * gradients became ready) keeps one open bucket per (dtype, device); each tensor is appended to
 * the open bucket of its dtype and the bucket closes once its size is at least the current
 * limit (the check comes after the append, so a bucket may end above the cap).  The limits are
 * consumed per dtype: first_bucket_bytes (dist._DEFAULT_FIRST_BUCKET_BYTES, 1 MiB), then
 * bucket_bytes_cap (bucket_cap_mb, 25 MiB) for every later bucket.  Buckets are listed in the
 * order they close, the buckets still open at the end after them, and the Reducer launches
 * them strictly in that order, each once all its gradients are in.  Here the gradient-ready
 * order is the profile's arrival order and a (dtype, op) class stands for DDP's (dtype,
 * device); each bucket becomes one block, in that order.
 *
 * Where a plan must depart from DDP to stay valid (docs/model.md):
 *   - at a call marked "merge": false every open bucket closes, after that call is added, in
 *     the order of its first call (a block may not span the barrier);
 *   - a bucket of several calls closes before a call that would take it above staging_max;
 *   - the buckets still open at the end (DDP: unordered_map order) go in the order of their
 *     first call.
 * Every closure, for whatever reason, moves its class on to the second cap, as DDP's does. */
#include <stdio.h>
#include <stdlib.h>

#include "usbyte/alloc.h"
#include "usbyte/model.h"
#include "usbyte/policy.h"
#include "usbyte/reference.h"

#define N_CLASSES (UB_DTYPE_COUNT * UB_OP_COUNT)

typedef struct {
    int *head, *tail, *next;   /* per bucket: first and last call; per call: the next in its bucket */
    int *order;                /* buckets in closing order */
    int n_buckets, n_closed;
    int open[N_CLASSES];       /* the class's open bucket, -1 when none */
    int opened_by[N_CLASSES];  /* its first call */
    uint64_t bytes[N_CLASSES];
    int closed_before[N_CLASSES]; /* buckets of the class closed so far (which cap applies) */
} buckets;

static void close_bucket(buckets *b, int cls)
{
    if (b->open[cls] < 0)
        return;
    b->order[b->n_closed++] = b->open[cls];
    b->open[cls] = -1;
    b->bytes[cls] = 0;
    b->closed_before[cls]++;
}

/* Every open bucket, in the order of its first call. */
static void close_all(buckets *b)
{
    for (;;) {
        int first = -1;
        for (int c = 0; c < N_CLASSES; c++)
            if (b->open[c] >= 0 && (first < 0 || b->opened_by[c] < b->opened_by[first]))
                first = c;
        if (first < 0)
            return;
        close_bucket(b, first);
    }
}

int ub_ddp_plan(const ub_profile *prof, uint64_t first_cap, uint64_t cap, ub_plan *out)
{
    int n = prof->n_calls;
    if (n <= 0)
        return -1;
    ub_plan_clear(out);
    buckets b = {0};
    size_t sz = (size_t)n;
    b.head = ub_xrealloc(NULL, sizeof(int) * sz, "planning ddp");
    b.tail = ub_xrealloc(NULL, sizeof(int) * sz, "planning ddp");
    b.next = ub_xrealloc(NULL, sizeof(int) * sz, "planning ddp");
    b.order = ub_xrealloc(NULL, sizeof(int) * sz, "planning ddp");
    for (int c = 0; c < N_CLASSES; c++)
        b.open[c] = -1;
    for (int k = 0; k < n; k++) {
        const ub_call *call = &prof->calls[k];
        int cls = (int)call->dtype * UB_OP_COUNT + (int)call->op;
        if (b.open[cls] >= 0 && !ub_staging_fits(prof, (double)b.bytes[cls] + (double)call->bytes))
            close_bucket(&b, cls);
        b.next[k] = -1;
        if (b.open[cls] < 0) {
            int id = b.n_buckets++;
            b.head[id] = b.tail[id] = k;
            b.open[cls] = id;
            b.opened_by[cls] = k;
        } else {
            int id = b.open[cls];
            b.next[b.tail[id]] = k;
            b.tail[id] = k;
        }
        b.bytes[cls] = call->bytes > UINT64_MAX - b.bytes[cls] ? UINT64_MAX : b.bytes[cls] + call->bytes;
        uint64_t limit = b.closed_before[cls] == 0 ? first_cap : cap;
        if (b.bytes[cls] >= limit)
            close_bucket(&b, cls);
        if (!call->merge)
            close_all(&b);
    }
    close_all(&b);
    for (int i = 0; i < b.n_closed; i++) {
        ub_plan_begin_block(out);
        for (int k = b.head[b.order[i]]; k >= 0; k = b.next[k])
            ub_plan_add_segment(out, k, 0, prof->calls[k].bytes);
    }
    snprintf(out->params, sizeof(out->params), "first_bucket=%llu bucket=%llu", (unsigned long long)first_cap,
             (unsigned long long)cap);
    free(b.head);
    free(b.tail);
    free(b.next);
    free(b.order);
    return 0;
}

int ub_policy_ddp(const ub_profile *prof, ub_plan *out)
{
    ub_reference_settings s = ub_reference_get();
    return ub_ddp_plan(prof, s.ddp_first_bucket, s.ddp_bucket, out);
}

/* `ddp-tuned`: what a DDP user gets by tuning DDP's one knob.  The settings swept are those a user
 * has: bucket_cap_mb from 1 to UB_DDP_TUNED_MAX_MB MiB, each with the first bucket at DDP's
 * default 1 MiB or at the cap itself (first_bucket_bytes is not a public argument of DDP, but
 * setting it to the cap is what a user who wants equal buckets ends up with).  The policy's own
 * settings come first, so a tie keeps them and the tuned plan is never slower than `ddp`.  Caps
 * next to each other mostly give the same buckets: a plan equal to the previous one of its
 * series (at first: the policy's own) is not evaluated again.  A cap above the bytes of all
 * calls closes no bucket by size but the first one's 1 MiB, so every larger cap gives the same
 * plans as the first such cap: the sweep stops there, having covered every setting. */
int ub_ddp_tuned_plan(const ub_profile *prof, uint64_t first_cap, uint64_t cap, ub_plan *out)
{
    if (prof->n_calls <= 0)
        return -1;
    ub_plan cand, prev[2];
    ub_plan_init(&cand, "ddp-tuned");
    ub_plan_init(&prev[0], "ddp-tuned");
    ub_plan_init(&prev[1], "ddp-tuned");
    ub_ddp_plan(prof, first_cap, cap, out);
    double best = ub_evaluate_const(prof, out, NULL);
    ub_plan_copy(&prev[0], out);
    ub_plan_copy(&prev[1], out);
    uint64_t best_first = first_cap, best_cap = cap;
    uint64_t total = 0;
    for (int k = 0; k < prof->n_calls; k++)
        total = prof->calls[k].bytes > UINT64_MAX - total ? UINT64_MAX : total + prof->calls[k].bytes;
    int evaluated = 1;
    for (uint64_t mb = 1; mb <= UB_DDP_TUNED_MAX_MB && (mb - 1) << 20 <= total; mb++) {
        for (int series = 0; series < 2; series++) {
            uint64_t c = mb << 20, f = series == 0 ? UB_DDP_FIRST_BUCKET_DEFAULT : c;
            if (series == 1 && f == UB_DDP_FIRST_BUCKET_DEFAULT)
                continue; /* the same setting as series 0 */
            ub_ddp_plan(prof, f, c, &cand);
            if (ub_plan_same_blocks(&cand, &prev[series]))
                continue;
            ub_plan_copy(&prev[series], &cand);
            evaluated++;
            double t = ub_evaluate_const(prof, &cand, NULL);
            if (t < best) {
                best = t;
                best_first = f;
                best_cap = c;
                ub_plan_copy(out, &cand);
            }
        }
    }
    ub_plan_free(&cand);
    ub_plan_free(&prev[0]);
    ub_plan_free(&prev[1]);
    snprintf(out->params, sizeof(out->params),
             "bucket_cap_mb=%g first_bucket_mb=%g (best of %d settings: bucket_cap_mb 1..%d, the first bucket 1 "
             "MiB or the cap; %d distinct plans evaluated)",
             (double)best_cap / (1 << 20), (double)best_first / (1 << 20), 2 * UB_DDP_TUNED_MAX_MB - 1,
             UB_DDP_TUNED_MAX_MB, evaluated);
    return 0;
}

int ub_policy_ddp_tuned(const ub_profile *prof, ub_plan *out)
{
    ub_reference_settings s = ub_reference_get();
    return ub_ddp_tuned_plan(prof, s.ddp_first_bucket, s.ddp_bucket, out);
}
