/* One communicator's calls that look like PyTorch DDP's gradient buckets, on the page: what usbyte
 * can do with them and what it cannot, and what a smaller bucket_cap_mb could change, bounded by
 * what a bucket-level profile can tell (docs/planner.md, "DDP's buckets on the report's page").
 *
 * DDP launches a bucket once its last gradient is in, so a profile of DDP's allreduces records
 * one ready time per bucket, not the times of the gradients inside.  Those gradients became
 * ready after the previous bucket of their dtype did (DDP rebuilds its buckets in the order the
 * gradients became ready), which is the earliest any smaller bucket holding them could be
 * launched; and, the layers being needed by the next forward in the reverse of that order, no
 * gradient of a bucket is needed before the previous bucket's own need.  The profile with those
 * ready times and needs (rp_ddp_earliest) is therefore a relaxation of every finer bucketing of
 * the same gradients: its lower bound (docs/model.md, rule 6) is an iteration no bucket_cap_mb
 * can go below under the model.  How close finer buckets come to it depends on the gradients'
 * own ready times, which the profile does not hold, so the page gives the bound, not a forecast.
 * The first bucket keeps its ready time and need: it is DDP's first_bucket_bytes bucket, which
 * bucket_cap_mb does not change, and the profile's time starts at its ready time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "report_html.h"
#include "usbyte/alloc.h"
#include "usbyte/model.h"

#define MIB (1024.0 * 1024.0)
#define N_CLASSES (UB_DTYPE_COUNT * UB_OP_COUNT)

/* Below this much of a possible gain the page says finer buckets cannot help. */
#define NEGLIGIBLE_GAIN 0.005

static int class_of(const ub_call *c) { return (int)c->dtype * UB_OP_COUNT + (int)c->op; }

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

bool rp_ddp_shaped(const ub_profile *p, rp_ddp_shape *out)
{
    memset(out, 0, sizeof *out);
    out->n_buckets = p->n_calls;
    if (p->n_calls < 4)
        return false;
    int first[N_CLASSES], last[N_CLASSES];
    for (int c = 0; c < N_CLASSES; c++)
        first[c] = last[c] = -1;
    for (int k = 0; k < p->n_calls; k++) {
        int c = class_of(&p->calls[k]);
        if (first[c] < 0)
            first[c] = k;
        last[c] = k;
    }
    uint64_t *middle = ub_xrealloc(NULL, sizeof(uint64_t) * (size_t)p->n_calls, "reading DDP's buckets");
    int m = 0;
    for (int k = 0; k < p->n_calls; k++) {
        int c = class_of(&p->calls[k]);
        if (k != first[c] && k != last[c])
            middle[m++] = p->calls[k].bytes;
    }
    bool shaped = false;
    if (m >= 2) {
        qsort(middle, (size_t)m, sizeof *middle, cmp_u64);
        out->n_middle = m;
        out->min_middle = middle[0];
        out->max_middle = middle[m - 1];
        /* Buckets closed at one cap all hold at least the cap; tensors alone vary far more. */
        shaped = 2 * middle[0] >= middle[m / 2];
    }
    free(middle);
    return shaped;
}

int rp_ddp_earliest(const ub_profile *p, ub_profile *out)
{
    *out = *p;
    out->calls = ub_xrealloc(NULL, sizeof(ub_call) * (size_t)(p->n_calls > 0 ? p->n_calls : 1), "reading DDP's buckets");
    memcpy(out->calls, p->calls, sizeof(ub_call) * (size_t)p->n_calls);
    int prev[N_CLASSES];
    for (int c = 0; c < N_CLASSES; c++)
        prev[c] = -1;
    for (int k = 0; k < p->n_calls; k++) {
        int c = class_of(&p->calls[k]);
        int q = prev[c];
        if (q >= 0) {
            out->calls[k].ready = fmin(p->calls[k].ready, p->calls[q].ready);
            if (p->calls[q].need > out->calls[k].need)
                out->calls[k].need = p->calls[q].need;
        }
        prev[c] = k;
    }
    return 0;
}

/* A size in MiB, or KiB below one MiB (the page's units). */
static void size_text(rp_page *pg, uint64_t bytes)
{
    if ((double)bytes >= MIB)
        rp_out(pg, "%.1f MiB", (double)bytes / MIB);
    else
        rp_out(pg, "%.1f KiB", (double)bytes / 1024.0);
}

void rp_html_ddp(rp_page *pg, const rp_comm *c)
{
    rp_ddp_shape sh;
    if (!c->have_profile || !c->profile.has_net || !rp_ddp_shaped(&c->profile, &sh))
        return;
    const ub_profile *p = &c->profile;
    ub_plan best, wfbp;
    ub_plan_init(&best, "best");
    ub_plan_init(&wfbp, "wfbp");
    bool planned = ub_policy_run(UB_POLICY_BEST, p, &best) == 0 && ub_policy_run(UB_POLICY_WFBP, p, &wfbp) == 0;
    ub_profile early;
    rp_ddp_earliest(p, &early);
    double bound = ub_lower_bound(&early);
    free(early.calls);
    rp_out(pg, "<div class=\"box ddp\" id=\"ddp-%d\">\n<h3>DDP's buckets: what usbyte can and cannot do here</h3>\n",
           c->index);
    rp_out(pg, "<p>These %d allreduces look like PyTorch DDP's gradient buckets: all but the first and the last of "
               "each dtype hold ", sh.n_buckets);
    size_text(pg, sh.min_middle);
    rp_out(pg, " to ");
    size_text(pg, sh.max_middle);
    rp_out(pg, ", as buckets do that DDP closes once they reach <code>bucket_cap_mb</code> (25 MiB unless set; the "
               "first bucket 1 MiB), so the cap here is at most ");
    size_text(pg, sh.min_middle);
    rp_out(pg, ".</p>\n<ul>\n<li>usbyte sees the buckets, not the tensors in them: a bucket's allreduce is issued "
               "only once its last gradient is in, so none of its bytes can be sent earlier. What usbyte can do is "
               "merge, cut and reorder these buckets: its best plan predicts ");
    rp_derived(pg, "span", "class=\"ddp-best\"", 1e3, 3, planned ? best.iteration : NAN);
    rp_out(pg, " ms, against ");
    rp_derived(pg, "span", "class=\"ddp-wfbp\"", 1e3, 3, planned ? wfbp.iteration : NAN);
    rp_out(pg, " ms for DDP's buckets as they are (wfbp). A larger <code>bucket_cap_mb</code> makes fewer, later "
               "buckets: the trade of merging neighbouring buckets, which that plan already makes where it "
               "pays.</li>\n");
    rp_out(pg, "<li>A smaller <code>bucket_cap_mb</code> gives finer ready times: each smaller bucket could go as soon "
               "as its own gradients are in. How much that gains depends on when each gradient inside a bucket "
               "becomes ready, which this profile does not record, so usbyte cannot predict it. What the profile does "
               "bound: even if every gradient of a bucket had been ready as soon as the bucket before it, the "
               "earliest it can have been, no plan under the model could finish an iteration in less than ");
    rp_derived(pg, "span", "class=\"ddp-bound\"", 1e3, 3, bound);
    double gain = planned ? best.iteration / bound - 1.0 : NAN;
    if (!isfinite(gain)) {
        rp_out(pg, " ms.</li>\n");
    } else if (gain < NEGLIGIBLE_GAIN) {
        rp_out(pg, " ms: usbyte's plan on these buckets is within ");
        rp_derived(pg, "span", "class=\"ddp-gain\"", 100, 1, fmax(gain, 0.0));
        rp_out(pg, "%% of that, so a smaller <code>bucket_cap_mb</code> cannot help here.</li>\n");
    } else {
        rp_out(pg, " ms, so finer buckets could gain at most ");
        rp_derived(pg, "span", "class=\"ddp-gain\"", 100, 1, gain);
        rp_out(pg, "%% over usbyte's plan on these buckets.</li>\n"
                   "<li>To measure it: run again with a smaller cap, e.g. <code>DistributedDataParallel(model, "
                   "bucket_cap_mb=%.3g)</code> (a quarter of the present buckets), and compare the two pages; usbyte "
                   "merges the smaller buckets again where a startup costs more than the wait.</li>\n",
               (double)sh.min_middle / MIB / 4.0);
    }
    rp_out(pg, "</ul>\n</div>\n");
    ub_plan_free(&best);
    ub_plan_free(&wfbp);
}
