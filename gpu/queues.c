/* queues: does a stream memory wait hold back the work of other streams?  CUDA multiplexes streams
 * onto a few hardware queues (CUDA_DEVICE_MAX_CONNECTIONS of them, 8 unless set): a wait at the
 * head of a queue blocks whatever was submitted behind it in that queue, whichever stream it
 * belongs to.  This program measures which streams share a queue with the first one.
 *
 *   queues [--pre P] [--pairs K1,K2,...] [--wait-ms T]
 *
 * Creates P streams that are never used (as a framework does before usbyte's), then streams
 * s0..sN (N the largest K).  For each K: s0 waits (cuStreamWaitValue64) until a word is >= 1, then
 * writes a second word; sK, submitted after the wait, writes the first word (cuStreamWriteValue64).
 * "ok": sK got through within T ms (its write does not queue behind the wait); "hang": it did
 * not, so the two streams share a hardware queue and the wait can never end on its own.  A hang is
 * then released by the host storing the word (pinned mapped memory, which the GPU polls), and both
 * streams must finish within T ms ("released"), else the pair is "stuck" and the exit status is 3.
 * One JSON object per pair on stdout, then a summary object; exit 0 when every pair ended.  A hang
 * is an answer, not an error: the caller compares the pattern with the emulator's model. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#define MAX_PAIRS 64
#define MAX_STREAMS 4096

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "queues: %s: %s\n", what, detail);
    exit(2);
}

#define CUDA_OK(x)                                                          \
    do {                                                                    \
        cudaError_t e_ = (x);                                               \
        if (e_ != cudaSuccess)                                              \
            die(#x, cudaGetErrorString(e_));                                \
    } while (0)

#define CU_OK(x)                                                            \
    do {                                                                    \
        CUresult r_ = (x);                                                  \
        if (r_ != CUDA_SUCCESS) {                                           \
            const char *s_ = NULL;                                          \
            cuGetErrorString(r_, &s_);                                      \
            die(#x, s_ ? s_ : "unknown driver error");                     \
        }                                                                   \
    } while (0)

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Polls the streams until all of them are idle or T ms have passed; true when idle. */
static bool idle_within(cudaStream_t *s, int n, double wait_ms)
{
    double end = now_ms() + wait_ms;
    for (;;) {
        bool all = true;
        for (int i = 0; i < n; i++) {
            cudaError_t e = cudaStreamQuery(s[i]);
            if (e == cudaErrorNotReady)
                all = false;
            else if (e != cudaSuccess)
                die("cudaStreamQuery", cudaGetErrorString(e));
        }
        if (all)
            return true;
        if (now_ms() >= end)
            return false;
        usleep(200);
    }
}

static long parse_long(const char *opt, const char *text, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || (*end && *end != ',') || v < lo || v > hi) {
        fprintf(stderr, "queues: %s: expected integers in [%ld, %ld], got '%s'\n", opt, lo, hi, text);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    long pre = 0, wait_ms = 2000;
    int pairs[MAX_PAIRS] = {1}, n_pairs = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--pre") && i + 1 < argc) {
            pre = parse_long("--pre", argv[++i], 0, MAX_STREAMS);
        } else if (!strcmp(argv[i], "--wait-ms") && i + 1 < argc) {
            wait_ms = parse_long("--wait-ms", argv[++i], 1, 600000);
        } else if (!strcmp(argv[i], "--pairs") && i + 1 < argc) {
            n_pairs = 0;
            for (const char *p = argv[++i]; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
                if (n_pairs == MAX_PAIRS)
                    die("--pairs", "too many");
                pairs[n_pairs++] = (int)parse_long("--pairs", p, 1, MAX_STREAMS - 1);
            }
        } else {
            fprintf(stderr, "usage: queues [--pre P] [--pairs K1,K2,...] [--wait-ms T]\n");
            return 2;
        }
    }
    int n = 0;
    for (int k = 0; k < n_pairs; k++)
        n = pairs[k] > n ? pairs[k] : n;
    n++;

    const char *conns = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaFree(NULL));   /* the context exists from here, whatever the runtime's version */
    CUdevice dev;
    CU_OK(cuCtxGetDevice(&dev));
    int memops = 0;
    CU_OK(cuDeviceGetAttribute(&memops, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, dev));
    if (!memops)
        die("the device", "has no 64-bit stream memory operations (CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS 0)");

    cudaStream_t *unused = calloc((size_t)pre + 1, sizeof *unused);
    cudaStream_t *s = calloc((size_t)n, sizeof *s);
    if (!unused || !s)
        die("calloc", "out of memory");
    for (long i = 0; i < pre; i++)
        CUDA_OK(cudaStreamCreateWithFlags(&unused[i], cudaStreamNonBlocking));
    for (int i = 0; i < n; i++)
        CUDA_OK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));

    /* Two words per pair: the flag sK writes, the mark s0 writes after its wait. */
    volatile uint64_t *words;
    CUDA_OK(cudaHostAlloc((void **)&words, 2 * sizeof(uint64_t) * MAX_PAIRS, cudaHostAllocMapped));
    memset((void *)words, 0, 2 * sizeof(uint64_t) * MAX_PAIRS);
    void *dwords;
    CUDA_OK(cudaHostGetDevicePointer(&dwords, (void *)words, 0));

    int hangs = 0, stuck = 0;
    for (int k = 0; k < n_pairs; k++) {
        int K = pairs[k];
        CUdeviceptr flag = (CUdeviceptr)((uintptr_t)dwords + (size_t)(2 * k) * sizeof(uint64_t));
        CUdeviceptr mark = flag + sizeof(uint64_t);
        double t0 = now_ms();
        CU_OK(cuStreamWaitValue64((CUstream)s[0], flag, 1, CU_STREAM_WAIT_VALUE_GEQ));
        CU_OK(cuStreamWriteValue64((CUstream)s[0], mark, 1, CU_STREAM_WRITE_VALUE_DEFAULT));
        CU_OK(cuStreamWriteValue64((CUstream)s[K], flag, 1, CU_STREAM_WRITE_VALUE_DEFAULT));
        bool through = idle_within(&s[K], 1, (double)wait_ms);
        double ms = now_ms() - t0;
        const char *result = "ok";
        if (!through) {
            result = "hang";
            hangs++;
            __atomic_store_n(&words[2 * k], 1, __ATOMIC_RELEASE); /* release the wait from the host */
        }
        cudaStream_t both[2] = {s[0], s[K]};
        bool done = idle_within(both, 2, (double)wait_ms) && __atomic_load_n(&words[2 * k + 1], __ATOMIC_ACQUIRE) == 1;
        if (!done) {
            result = "stuck";
            stuck++;
        }
        printf("{\"pair\": %d, \"pre\": %ld, \"connections\": \"%s\", \"result\": \"%s\", \"ms\": %.3f}\n", K, pre,
               conns ? conns : "", result, ms);
        fflush(stdout);
        if (stuck)
            break;   /* the streams are unusable now */
    }
    printf("{\"summary\": true, \"pre\": %ld, \"connections\": \"%s\", \"pairs\": %d, \"hangs\": %d, \"stuck\": %d}\n",
           pre, conns ? conns : "", n_pairs, hangs, stuck);
    fflush(stdout);
    if (stuck)
        _exit(3);   /* a context with a stream that never ends: leave without tearing it down */
    for (int i = 0; i < n; i++)
        CUDA_OK(cudaStreamDestroy(s[i]));
    for (long i = 0; i < pre; i++)
        CUDA_OK(cudaStreamDestroy(unused[i]));
    CUDA_OK(cudaFreeHost((void *)words));
    free(s);
    free(unused);
    return 0;
}
