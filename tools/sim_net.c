/* Network presets for --net, each with where its numbers come from (docs/planner.md says more).
 * docs/model.md's ring formula: alpha = 2(p-1)*a0, beta = 2(p-1)/p * b0. */
#include <stdio.h>
#include <string.h>

#include "sim.h"

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
    double p = (double)ranks;
    *alpha = 2.0 * (p - 1.0) * net->a0;
    *beta = 2.0 * (p - 1.0) / p * net->b0;
}
