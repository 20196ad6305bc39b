/* Network presets for --net, each with where its numbers come from (docs/planner.md says more).
 * docs/model.md's ring formula: alpha = 2(p-1)*a0, beta = 2(p-1)/p * b0. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "usbyte/fit.h"
#include "usbyte/model.h"

/* The MG-WFBP figures are fitted alpha/beta for 8 nodes (p = 8), converted back:
 *   a0 = alpha / (2*7),  b0 = beta / (2*7/8). */
const sim_net sim_nets[] = {
    {"10gbe", 5.230272768511732e-4 / 14.0, 8.570746975492128e-10 / 1.75,
     "MG-WFBP's fitted 8-node 10GbE allreduce: alpha 523 us, beta 8.571e-10 s/B (HKBU-HPML/MG-WFBP "
     "distributed_optimizer.py), converted to per-step a0, b0 by the ring formula"},
    {"56gb-ib", 9.75367204301171e-5 / 14.0, 3.0568230536676206e-10 / 1.75,
     "MG-WFBP's fitted 8-node 56Gb InfiniBand allreduce: alpha 97.5 us, beta 3.057e-10 s/B (same source), "
     "converted to a0, b0"},
    {"100gb-ib", 6.6e-6, 1.0 / 12e9,
     "one 100Gb InfiniBand NIC: b0 from the ~12 GB/s bus bandwidth nccl-tests reports (busbw is defined so "
     "that time = 2(p-1)/p * M / busbw); a0 = 6.6 us, NCCL's per-step latency of the Ring/Simple protocol "
     "over the network (hwLat in NCCL's src/graph/tuning.cc)"},
    {"nvlink", 5.7e-6, 1.0 / 230e9,
     "NVLink/NVSwitch inside one node (DGX A100 class): b0 from the ~230 GB/s all_reduce bus bandwidth "
     "NVIDIA publishes for 8 A100 with nccl-tests; a0 = 5.7 us, NCCL's per-step NVLink Ring/Simple latency "
     "(tuning.cc); approximate, for what-if comparisons only"},
};
const int sim_n_nets = (int)(sizeof(sim_nets) / sizeof(sim_nets[0]));

const sim_net *sim_net_find(const char *name)
{
    for (int i = 0; name && i < sim_n_nets; i++)
        if (strcmp(sim_nets[i].name, name) == 0)
            return &sim_nets[i];
    return NULL;
}

void sim_net_names(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < sim_n_nets && used < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", sim_nets[i].name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

void sim_net_apply(const sim_net *net, int ranks, double *alpha, double *beta)
{
    if (ub_ring_to_fit(net->a0, net->b0, ranks, alpha, beta) != 0)
        *alpha = *beta = 0.0; /* one rank: no ring step */
}

/* Reads an all_reduce_perf table (docs/model.md, "--net-table"): `#` comments, rows
 * bytes<TAB>us[<TAB>inplace_us], bytes rising. */
int sim_net_table_load(const char *path, sim_net_table *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof(*t));
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    char line[512];
    int lineno = 0, inplace_rows = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '#' || *p == '\n' || *p == '\r' || *p == '\0')
            continue;
        if (t->n == SIM_NET_TABLE_MAX) {
            snprintf(err, errlen, "%s: line %d: more than %d rows", path, lineno, SIM_NET_TABLE_MAX);
            goto bad;
        }
        char *end;
        errno = 0;
        double bytes = strtod(p, &end);
        if (end == p || errno || !(bytes > 0) || !isfinite(bytes) || (*end != '\t' && *end != ' ')) {
            snprintf(err, errlen, "%s: line %d: expected bytes<TAB>us[<TAB>inplace_us], bytes > 0", path, lineno);
            goto bad;
        }
        p = end;
        double us = strtod(p, &end);
        if (end == p || !(us >= 0) || !isfinite(us)) {
            snprintf(err, errlen, "%s: line %d: the time (us) is missing or not a finite number >= 0", path, lineno);
            goto bad;
        }
        p = end;
        double in = strtod(p, &end);
        bool has_in = end != p;
        if (has_in && (!(in >= 0) || !isfinite(in))) {
            snprintf(err, errlen, "%s: line %d: the in-place time (us) is not a finite number >= 0", path, lineno);
            goto bad;
        }
        p = has_in ? end : p;
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
        if (*p) {
            snprintf(err, errlen, "%s: line %d: unexpected text after the times", path, lineno);
            goto bad;
        }
        if (t->n > 0 && !(bytes > t->bytes[t->n - 1])) {
            snprintf(err, errlen, "%s: line %d: bytes %.0f not above the previous row's %.0f", path, lineno, bytes,
                     t->bytes[t->n - 1]);
            goto bad;
        }
        t->bytes[t->n] = bytes;
        t->out_s[t->n] = us * 1e-6;
        t->in_s[t->n] = has_in ? in * 1e-6 : -1.0;
        inplace_rows += has_in;
        t->n++;
    }
    fclose(f);
    if (t->n == 0) {
        snprintf(err, errlen, "%s: no rows", path);
        return -1;
    }
    t->has_inplace = inplace_rows == t->n;
    return 0;
bad:
    fclose(f);
    return -1;
}

int sim_net_table_curve(const sim_net_table *t, ub_net_curve *out)
{
    return ub_net_curve_from_points(t->bytes, t->has_inplace ? t->in_s : t->out_s, t->n, UB_NET_TAIL_TABLE, out);
}
