/* Merged-gradient WFBP: blocks are runs of consecutive whole calls in arrival order.
 *
 * ub_policy_mgwfbp is the published rule (Shi, Chu, Li: "MG-WFBP: Efficient data communication
 * for distributed synchronous SGD algorithms", 2018/2019; the authors' implementation is
 * _generate_groups_mgwfbp in github.com/HKBU-HPML/MG-WFBP distributed_optimizer.py).  There,
 * layers are scanned from the output side (our call 0) towards the input side; for the current
 * group ending at layer l with communication start tau_c[l] and time t_c[l], and the next layer's
 * gradient ready at r = tau_b[l-1] + t_b[l-1]:
 *   if r < tau_c[l] + t_c[l]  (the next gradient is ready before this allreduce would finish):
 *       merge when tau_c[l] > r          (the allreduce would not even have started), or
 *       merge when r - tau_c[l] < alpha  (the wait it saves is shorter than one startup);
 * after a merge the group's time is recomputed for its new size and the start times are
 * recomputed.  Adapted to calls, with the choices we had to make:
 *   - t_c is this model's block cost (ub_block_cost), so a merged group pays copy_beta for
 *     staging; the "saved" time stays alpha as published (the paper's model has no staging),
 *     and on a cost curve it is what merging saves at the sizes in question:
 *     cost(group) + cost(next call) - cost(both).
 *   - the start of the group is max(end of the previous group, latest ready among its calls):
 *     the authors' recurrence over tau_c with t_c = 0 on absorbed layers computes exactly that.
 *   - a group is never extended across a call marked "merge": false or into a call of another
 *     dtype or op (the published code has one dtype and no barriers): the group is closed.
 *   - the rule ignores the forward segments (need), as published.
 *   - a group is closed where the next call would take it above staging_max.
 *
 * ub_policy_mgwfbp_dp is the exact optimum of the same family (consecutive whole calls, arrival
 * order) for the barrier case: there the iteration is max(B + g, end of the link) + forward, and
 * the end of a group is non-decreasing in the end of the previous one, so the earliest end of a
 * prefix is an optimal substructure:
 *   F[j] = min over allowed i <= j of  max(F[i-1], max ready[i..j]) + cost(i..j),   F[-1] = 0.
 * O(n^2) time in the worst case (the inner loop stops as soon as the group's latest ready
 * plus its cost reaches the best end found, which keeps it short on real profiles), O(n) memory.  With forward segments (need > 0) it still minimises the end of the
 * link, which is a valid plan but not necessarily the best consecutive merge. */
#include <stdlib.h>

#include "usbyte/alloc.h"
#include "usbyte/model.h"
#include "usbyte/policy.h"

/* May call k+1 join a block that already holds call k (and possibly earlier ones)? */
static int can_join(const ub_profile *prof, int k)
{
    const ub_call *a = &prof->calls[k], *b = &prof->calls[k + 1];
    return a->merge && a->dtype == b->dtype && a->op == b->op;
}

/* The published rule's alpha: what one allreduce of a+b bytes saves over two of a and b.  On a
 * line that is alpha; on a curve, cost(a) + cost(b) - cost(a + b) at the sizes in question. */
static double startup_saved(const ub_profile *prof, double a, double b)
{
    if (prof->curve.n <= 0)
        return prof->alpha;
    return ub_link_cost(prof, a) + ub_link_cost(prof, b) - ub_link_cost(prof, a + b);
}

static void emit_group(const ub_profile *prof, ub_plan *out, int first, int last)
{
    ub_plan_begin_block(out);
    for (int k = first; k <= last; k++)
        ub_plan_add_segment(out, k, 0, prof->calls[k].bytes);
}

int ub_policy_mgwfbp(const ub_profile *prof, ub_plan *out)
{
    int n = prof->n_calls;
    if (n <= 0)
        return -1;
    ub_plan_clear(out);
    double prev_end = 0.0;  /* end of the last closed group on the link */
    int first = 0;
    double group_ready = prof->calls[0].ready, group_bytes = (double)prof->calls[0].bytes;
    for (int k = 0; k < n; k++) {
        double start = prev_end > group_ready ? prev_end : group_ready;
        double cost = ub_block_cost(prof, group_bytes, k > first);
        int merge = 0;
        if (k + 1 < n && can_join(prof, k) &&
            ub_staging_fits(prof, group_bytes + (double)prof->calls[k + 1].bytes)) {
            double next_ready = prof->calls[k + 1].ready;
            if (next_ready < start + cost) {
                if (start > next_ready)
                    merge = 1;
                else if (next_ready - start < startup_saved(prof, group_bytes, (double)prof->calls[k + 1].bytes))
                    merge = 1;
            }
        }
        if (merge) {
            if (prof->calls[k + 1].ready > group_ready)
                group_ready = prof->calls[k + 1].ready;
            group_bytes += (double)prof->calls[k + 1].bytes;
            continue;
        }
        emit_group(prof, out, first, k);
        prev_end = start + cost;
        if (k + 1 < n) {
            first = k + 1;
            group_ready = prof->calls[k + 1].ready;
            group_bytes = (double)prof->calls[k + 1].bytes;
        }
    }
    return 0;
}

int ub_policy_mgwfbp_dp(const ub_profile *prof, ub_plan *out)
{
    int n = prof->n_calls;
    if (n <= 0)
        return -1;
    ub_plan_clear(out);
    /* best_end[j+1]: earliest end of the link over groupings of calls 0..j; cut[j+1]: first
     * call of the last group in that grouping. */
    double *best_end = ub_xrealloc(NULL, sizeof(double) * ((size_t)n + 1), "planning mgwfbp-dp");
    int *cut = ub_xrealloc(NULL, sizeof(int) * ((size_t)n + 1), "planning mgwfbp-dp");
    best_end[0] = 0.0;
    for (int j = 0; j < n; j++) {
        double ready = prof->calls[j].ready, bytes = 0.0;
        double best = -1.0;
        int best_i = j;
        for (int i = j; i >= 0; i--) {
            if (i < j && !can_join(prof, i))
                break;
            if (prof->calls[i].ready > ready)
                ready = prof->calls[i].ready;
            bytes += (double)prof->calls[i].bytes;
            if (i < j && !ub_staging_fits(prof, bytes))
                break; /* longer groups only grow */
            double cost = ub_block_cost(prof, bytes, i < j);
            /* Exact pruning: a longer group (smaller i) has at least this latest ready time and
             * these bytes, so it cannot end before ready + cost; once that reaches the best end
             * found, no smaller i can improve it.  (Only the staging term changes between the
             * single-call group and the others, and it only grows.) */
            if (best >= 0.0 && i < j && ready + cost >= best)
                break;
            double start = best_end[i] > ready ? best_end[i] : ready;
            double end = start + cost;
            /* Strict improvement only: ties keep the group found first (the smaller one),
             * so the plan is deterministic and uses no more staging than needed. */
            if (best < 0.0 || end < best) {
                best = end;
                best_i = i;
            }
        }
        best_end[j + 1] = best;
        cut[j + 1] = best_i;
    }
    /* Walk the cuts back from the last call, then emit the groups in arrival order. */
    int *firsts = ub_xrealloc(NULL, sizeof(int) * (size_t)n, "planning mgwfbp-dp");
    int groups = 0;
    for (int j = n - 1; j >= 0; j = cut[j + 1] - 1)
        firsts[groups++] = cut[j + 1];
    for (int g = groups - 1; g >= 0; g--) {
        int last = g > 0 ? firsts[g - 1] - 1 : n - 1;
        emit_group(prof, out, firsts[g], last);
    }
    free(firsts);
    free(best_end);
    free(cut);
    return 0;
}
