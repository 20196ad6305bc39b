/* Network presets for --net, each with where its numbers come from (docs/planner.md says more),
 * and --net-table's measured curve read into the cost function's arrays.
 * docs/model.md's ring formula: alpha = 2(p-1)*a0, beta = 2(p-1)/p * b0. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "usbyte/fit.h"
#include "usbyte/model.h"
#include "usbyte/net_table.h"

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

/* Reads a data/net/ table (usbyte/net_table.h) into the arrays the curve is built from. */
int sim_net_table_load(const char *path, sim_net_table *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof(*t));
    ub_net_table rows;
    if (ub_net_table_read(path, &rows, err, errlen) != 0)
        return -1;
    if (rows.n > SIM_NET_TABLE_MAX) {
        snprintf(err, errlen, "%s: %d rows, more than the %d a curve holds", path, rows.n, SIM_NET_TABLE_MAX);
        ub_net_table_free(&rows);
        return -1;
    }
    for (int i = 0; i < rows.n; i++) {
        t->bytes[i] = rows.rows[i].bytes;
        t->out_s[i] = rows.rows[i].us * 1e-6;
        t->in_s[i] = rows.rows[i].in_place_us * 1e-6;
    }
    t->n = rows.n;
    t->has_inplace = rows.has_in_place;
    ub_net_table_free(&rows);
    return 0;
}

int sim_net_table_curve(const sim_net_table *t, ub_net_curve *out)
{
    return ub_net_curve_from_points(t->bytes, t->has_inplace ? t->in_s : t->out_s, t->n, UB_NET_TAIL_TABLE, out);
}
