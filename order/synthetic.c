/* Seeded synthetic profiles (see usbyte/synthetic.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "usbyte/synthetic.h"

uint64_t ub_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double ub_uniform01(uint64_t *state) { return (double)(ub_splitmix64(state) >> 11) * 0x1.0p-53; }

static double log_uniform(uint64_t *st, double lo, double hi)
{
    return exp(log(lo) + (log(hi) - log(lo)) * ub_uniform01(st));
}

void ub_synthetic_free(ub_profile *prof)
{
    if (!prof)
        return;
    free(prof->calls);
    free(prof->forward);
    memset(prof, 0, sizeof(*prof));
}

int ub_synthetic_profile(const ub_synthetic_opts *o, ub_profile *out)
{
    memset(out, 0, sizeof(*out));
    int n = o->n_calls;
    if (n < 1)
        return -1;
    uint64_t st = o->seed ^ 0x7573627974650000ULL; /* "usbyte": different streams from seed 0 */
    ub_splitmix64(&st);

    out->has_net = true;
    out->alpha = o->alpha > 0 ? o->alpha : 523e-6;
    out->beta = o->beta > 0 ? o->beta : 8.571e-10;
    out->copy_beta = o->copy_beta > 0 ? o->copy_beta : 0.0;
    out->n_calls = n;
    out->calls = calloc((size_t)n, sizeof(ub_call));
    int S = 1;
    if (!o->barrier)
        S = o->n_forward > 0 ? o->n_forward : (n + 1) / 2;
    if (S > n)
        S = n;
    out->n_forward = S;
    out->forward = calloc((size_t)S, sizeof(double));
    if (!out->calls || !out->forward) {
        ub_synthetic_free(out);
        return -1;
    }

    /* Communication vs compute: the backward pass takes `ratio` times the WFBP link time, so
     * most profiles are communication-bound and planning matters. */
    double ratio = 0.2 + 0.8 * ub_uniform01(&st);
    double total_link = 0.0, total_bytes = 0.0;
    for (int k = 0; k < n; k++) {
        ub_call *c = &out->calls[k];
        c->dtype = UB_DTYPE_FLOAT32;
        if (o->mixed_dtypes) {
            double u = ub_uniform01(&st);
            c->dtype = u < 0.7 ? UB_DTYPE_FLOAT32 : u < 0.9 ? UB_DTYPE_FLOAT16 : UB_DTYPE_BFLOAT16;
        }
        c->op = UB_OP_SUM;
        double bytes = ub_uniform01(&st) < 0.1 ? log_uniform(&st, 4.0 * (1 << 20), 64.0 * (1 << 20))
                                               : log_uniform(&st, 256.0, 4.0 * (1 << 20));
        uint64_t elem = ub_dtype_size(c->dtype);
        uint64_t count = (uint64_t)(bytes / (double)elem);
        c->bytes = (count ? count : 1) * elem;
        c->merge = !(o->merge_false_fraction > 0 && ub_uniform01(&st) < o->merge_false_fraction);
        c->measured_comm = -1.0;
        total_link += out->alpha + out->beta * (double)c->bytes;
        total_bytes += (double)c->bytes;
    }
    /* WFBP's link time grows with n startups, which merging removes: measured against it, large
     * profiles become compute-bound and every plan optimal.  Hard instances are measured
     * against the bytes alone. */
    if (o->comm_bound) {
        ratio = 0.3 + 0.6 * ub_uniform01(&st);
        total_link = out->beta * total_bytes;
    }
    /* Ready times: each call's backward compute is proportional to its size, with noise and a
     * floor (small layers still cost a kernel launch). */
    double *w = malloc(sizeof(double) * (size_t)n);
    if (!w) {
        ub_synthetic_free(out);
        return -1;
    }
    double wsum = 0.0;
    for (int k = 0; k < n; k++) {
        w[k] = (0.3 + ub_uniform01(&st)) * ((double)out->calls[k].bytes + 65536.0);
        wsum += w[k];
    }
    double t = 0.0, backward = ratio * total_link;
    for (int k = 0; k < n; k++) {
        t += backward * w[k] / wsum;
        out->calls[k].ready = t;
    }
    free(w);
    out->backward_end = t + backward * 0.01 * ub_uniform01(&st);
    out->gap = backward * 0.02 * ub_uniform01(&st);
    /* Forward: half the backward, spread over the segments; call k (arrival order, output side
     * first) is needed by segment (n-1-k)*S/n, so needs never increase along arrival. */
    double fsum = 0.0;
    for (int s = 0; s < S; s++) {
        out->forward[s] = 0.2 + ub_uniform01(&st);
        fsum += out->forward[s];
    }
    for (int s = 0; s < S; s++)
        out->forward[s] *= 0.5 * backward / fsum;
    for (int k = 0; k < n; k++)
        out->calls[k].need = o->barrier ? 0 : (int)((long long)(n - 1 - k) * S / n);
    return 0;
}
