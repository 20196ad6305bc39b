/* The time model, measured on the stream with events (the only timing check of the emulator).
 *
 *   emu_timing            payload on: allreduce results must be right
 *   emu_timing nopayload  run with USBYTE_EMU_PAYLOAD=0: results untouched, time still modelled
 *
 * For a tiny and a large allreduce, the median over REPS of the event-measured stream time,
 * less what the emulator's op log (USBYTE_EMU_OPLOG, tests/emu/nccl/oplog.h) says was added
 * beyond the model, must match 2(p-1)*alpha + 2(p-1)/p * M/bw within 10% + 2 ms.  Added: the
 * stream waiting for this host to issue the call or to record the end event (a descheduled
 * thread), a late peer, data movement slower than the modelled link (as under ThreadSanitizer)
 * and the worker waking late from its sleep (a busy machine).  So that an emulator that overslept
 * cannot hide in the last, the smallest wake-up lateness over all the operations this rank ran
 * must stay under 1 ms: a busy machine delays some wake-ups, a wrong sleep delays them all.
 * Without the log nothing is taken out.  The 2 ms absorbs the event's own stamping; 10% bounds
 * everything proportional.  Each measured allreduce follows a small allreduce, which ends at the
 * same instant on every rank (all ranks sleep until the same modelled end), so a peer is rarely
 * late.  ncclGroupSimulateEnd must return the same formula (in microseconds) and launch nothing.
 * A ring of send/recv in one group must take alpha + bytes/bw (same tolerance). */
#include <math.h>
#include <stdint.h>

#include "../../integration/emu_common.h"

#define REPS 5

static double env_or(const char *name, double def)
{
    const char *s = getenv(name);
    return s ? atof(s) : def;
}

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* This rank's op log, or NULL without one. */
static FILE *open_oplog(int rank)
{
    const char *pattern = getenv("USBYTE_EMU_OPLOG");
    if (pattern == NULL || *pattern == '\0')
        return NULL;
    char path[1024], rank_text[16];
    snprintf(rank_text, sizeof rank_text, "%d", rank);
    size_t n = 0;
    for (const char *q = pattern; *q && n + 16 < sizeof path; q++) {
        if (q[0] == '%' && q[1] == 'r') {
            n += (size_t)snprintf(path + n, sizeof path - n, "%s", rank_text);
            q++;
        } else {
            path[n++] = *q;
        }
    }
    path[n] = '\0';
    FILE *f = fopen(path, "r");
    EXPECT(f != NULL, "cannot open the op log %s", path);
    return f;
}

struct oprec {
    char kind[32];
    long long queued, arrival, start, data_end, model_end, end;
};

static int next_rec(FILE *f, struct oprec *r)
{
    char line[512];
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%*s %*d %*d %*u %31s %*u %lld %lld %lld %lld %lld %lld", r->kind, &r->queued, &r->arrival,
                   &r->start, &r->data_end, &r->model_end, &r->end) == 7)
            return 1;
    return 0;
}

static double pos_ms(long long ns) { return ns > 0 ? (double)ns / 1e6 : 0.0; }

/* What the emulator and this host added beyond the model to the last operation of `kind`, in ms
 * (0 without a log).  The start event, recorded at host time `recorded` (the log's clock) right
 * after the operation before it, is stamped at the later of that and that operation's end; the
 * end event, recorded at `end_recorded`, at the later of that and this operation's end. */
static double last_excess_ms(int rank, const char *kind, long long recorded, long long end_recorded)
{
    FILE *f = open_oplog(rank);
    if (f == NULL)
        return 0;
    struct oprec r;
    long long prev_end = 0;
    double excess = -1;
    while (next_rec(f, &r)) {
        if (strcmp(r.kind, kind) == 0) {
            long long stamped = recorded > prev_end ? recorded : prev_end;
            excess = pos_ms(r.queued - stamped)        /* the host issued the call late */
                     + pos_ms(r.start - r.queued)      /* a late peer */
                     + pos_ms(r.end - r.model_end)     /* slow data, a late wake-up */
                     + pos_ms(end_recorded - r.end);   /* the host recorded the end late */
        }
        prev_end = r.end;
    }
    fclose(f);
    EXPECT(excess >= 0, "no %s in the op log", kind);
    return excess;
}

/* The smallest wake-up lateness (end past the later of model_end and data_end) over every
 * operation of this rank's log, in ms, and how many there were; -1 without a log. */
static double min_wake_ms(int rank, int *count)
{
    FILE *f = open_oplog(rank);
    *count = 0;
    if (f == NULL)
        return -1;
    struct oprec r;
    double least = INFINITY;
    while (next_rec(f, &r)) {
        long long due = r.model_end > r.data_end ? r.model_end : r.data_end;
        least = fmin(least, (double)(r.end - due) / 1e6);
        (*count)++;
    }
    fclose(f);
    return least;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int payload = !(argc > 1 && strcmp(argv[1], "nopayload") == 0);
    int rank, p;
    ncclComm_t comm = world_comm(&rank, &p);
    double alpha_us = env_or("USBYTE_EMU_ALPHA_US", 20), gbps = env_or("USBYTE_EMU_GBPS", 10);
    cudaStream_t s;
    CUDA_OK(cudaStreamCreate(&s));
    cudaEvent_t start, end;
    CUDA_OK(cudaEventCreate(&start));
    CUDA_OK(cudaEventCreate(&end));
    const size_t counts[] = {1, 2u << 20};   /* 4 bytes and 8 MiB of float32 */
    float *buf, *sync;
    CUDA_OK(cudaMalloc((void **)&buf, counts[1] * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&sync, sizeof(float)));
    float *fill = malloc(counts[1] * sizeof(float));
    for (size_t i = 0; i < counts[1]; i++)
        fill[i] = (float)(rank + 1);

    for (int c = 0; c < 2; c++) {
        size_t n = counts[c];
        double bytes = (double)n * sizeof(float);
        double model_ms = (2.0 * (p - 1) * alpha_us + 2.0 * (p - 1) / p * bytes / (gbps * 1e3)) / 1e3;
        double ms[REPS], excess[REPS];
        for (int r = 0; r < REPS; r++) {
            CUDA_OK(cudaMemcpy(buf, fill, n * sizeof(float), cudaMemcpyHostToDevice));
            NCCL_OK(ncclAllReduce(sync, sync, 1, ncclFloat32, ncclSum, comm, s));
            long long recorded = now_ns();
            CUDA_OK(cudaEventRecord(start, s));
            NCCL_OK(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, s));
            long long end_recorded = now_ns();
            CUDA_OK(cudaEventRecord(end, s));
            CUDA_OK(cudaEventSynchronize(end));
            float t;
            CUDA_OK(cudaEventElapsedTime(&t, start, end));
            excess[r] = last_excess_ms(rank, "allreduce", recorded, end_recorded);
            ms[r] = t - excess[r];
            float got[2], want = payload ? (float)p * (p + 1) / 2 : (float)(rank + 1);
            CUDA_OK(cudaMemcpy(&got[0], buf, sizeof(float), cudaMemcpyDeviceToHost));
            CUDA_OK(cudaMemcpy(&got[1], buf + n - 1, sizeof(float), cudaMemcpyDeviceToHost));
            for (int e = 0; e < 2; e++)
                EXPECT(got[e] == want, "allreduce %s: %s element is %g, want %g", payload ? "with payload" : "payload-free",
                       e ? "last" : "first", got[e], want);
        }
        qsort(ms, REPS, sizeof ms[0], cmp);
        qsort(excess, REPS, sizeof excess[0], cmp);
        double med = ms[REPS / 2], slack = 0.10 * model_ms + 2.0;
        printf("timing: allreduce %.0f bytes on %d ranks: median %.3f ms after taking out what the emulator added (median "
               "%.3f ms), model %.3f ms (allowed +-%.3f)\n",
               bytes, p, med, excess[REPS / 2], model_ms, slack);
        EXPECT(fabs(med - model_ms) <= slack, "measured %.3f ms vs model %.3f ms", med, model_ms);
    }

    /* A ring of send/recv in one group: alpha + bytes/bw per rank; data moves only with payload. */
    if (p > 1) {
        const size_t n = 250000;   /* 1 MB */
        double model_ms = (alpha_us + n * 4.0 / (gbps * 1e3)) / 1e3, ms[REPS], excess[REPS];
        float *out;
        CUDA_OK(cudaMalloc((void **)&out, n * sizeof(float)));
        for (int r = 0; r < REPS; r++) {
            CUDA_OK(cudaMemcpy(buf, fill, n * sizeof(float), cudaMemcpyHostToDevice));
            CUDA_OK(cudaMemcpy(out, fill, n * sizeof(float), cudaMemcpyHostToDevice));
            NCCL_OK(ncclAllReduce(sync, sync, 1, ncclFloat32, ncclSum, comm, s));
            long long recorded = now_ns();
            CUDA_OK(cudaEventRecord(start, s));
            NCCL_OK(ncclGroupStart());
            NCCL_OK(ncclSend(buf, n, ncclFloat32, (rank + 1) % p, comm, s));
            NCCL_OK(ncclRecv(out, n, ncclFloat32, (rank + p - 1) % p, comm, s));
            NCCL_OK(ncclGroupEnd());
            long long end_recorded = now_ns();
            CUDA_OK(cudaEventRecord(end, s));
            CUDA_OK(cudaEventSynchronize(end));
            float t, got;
            CUDA_OK(cudaEventElapsedTime(&t, start, end));
            excess[r] = last_excess_ms(rank, "p2p", recorded, end_recorded);
            ms[r] = t - excess[r];
            CUDA_OK(cudaMemcpy(&got, out + n - 1, sizeof got, cudaMemcpyDeviceToHost));
            float want = payload ? (float)((rank + p - 1) % p + 1) : (float)(rank + 1);
            EXPECT(got == want, "send/recv %s: last element %g, want %g", payload ? "with payload" : "payload-free", got, want);
        }
        qsort(ms, REPS, sizeof ms[0], cmp);
        qsort(excess, REPS, sizeof excess[0], cmp);
        double med = ms[REPS / 2], slack = 0.10 * model_ms + 2.0;
        printf("timing: send/recv ring of %zu bytes on %d ranks: median %.3f ms after taking out what the emulator added (median "
               "%.3f ms), model %.3f ms (allowed +-%.3f)\n",
               n * sizeof(float), p, med, excess[REPS / 2], model_ms, slack);
        EXPECT(fabs(med - model_ms) <= slack, "measured %.3f ms vs model %.3f ms", med, model_ms);
        CUDA_OK(cudaFree(out));
    }

    /* ncclGroupSimulateEnd: the model's estimate, nothing launched. */
    ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclAllReduce(buf, buf, counts[1], ncclFloat32, ncclSum, comm, s));
    NCCL_OK(ncclAllGather(buf, buf, 1000, ncclFloat32, comm, s));
    NCCL_OK(ncclBroadcast(buf, buf, 5000, ncclFloat32, 0, comm, s));
    NCCL_OK(ncclGroupSimulateEnd(&info));
    double ar = 2.0 * (p - 1) * alpha_us + 2.0 * (p - 1) / p * counts[1] * 4.0 / (gbps * 1e3);
    double ag = (p - 1) * alpha_us + (p - 1.0) / p * (p * 1000 * 4.0) / (gbps * 1e3);
    double bc = (p - 1) * alpha_us + 5000 * 4.0 / (gbps * 1e3);
    double want = p > 1 ? ar + ag + bc : 0;
    printf("timing: ncclGroupSimulateEnd %.3f us, model %.3f us\n", info.estimatedTime, want);
    EXPECT(fabs(info.estimatedTime - want) <= 1e-5 * want + 1e-3, "estimate %g us, model %g us", info.estimatedTime, want);
    /* Had the simulated operations been launched, this allreduce would meet an allgather. */
    float one = 1;
    CUDA_OK(cudaMemcpy(sync, &one, sizeof one, cudaMemcpyHostToDevice));
    NCCL_OK(ncclAllReduce(sync, sync, 1, ncclFloat32, ncclSum, comm, s));
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaMemcpy(&one, sync, sizeof one, cudaMemcpyDeviceToHost));
    EXPECT(one == (payload ? (float)p : 1.0f), "allreduce after the simulated group: %g", one);
    int ops;
    double wake = min_wake_ms(rank, &ops);
    if (wake >= 0) {
        printf("timing: smallest wake-up lateness over %d operations %.3f ms\n", ops, wake);
        EXPECT(wake < 1.0, "every one of %d operations ended at least %.3f ms after its modelled end: the emulator "
               "oversleeps", ops, wake);
    }
    NCCL_OK(ncclCommDestroy(comm));
    free(fill);
    printf("timing: done\n");
    return 0;
}
