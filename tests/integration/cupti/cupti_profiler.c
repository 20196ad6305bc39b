/* A program with a CUPTI profiler of its own, like torch.profiler (cupti_profiler.sh): it links
 * libcupti and subscribes through the PLT, as kineto does, or as a tool injected into the
 * process does, from inside its own library.
 *   cupti_profiler before   subscribes through the PLT (cuptiSubscribe_v2, named
 *                           "test-profiler") before its first NCCL call, and keeps CUPTI to the end
 *   cupti_profiler tool     the same, calling libcupti's own cuptiSubscribe_v2 (no interposer
 *                           sees it, as none sees a call inside an injected tool's library)
 *   cupti_profiler later    subscribes while usbyte watches the warm-up: each iteration it asks
 *                           CUPTI itself (the library's own cuptiSubscribe, bypassing any
 *                           interposer) whether someone holds it, and once someone does,
 *                           subscribes through the PLT; it profiles PROFILED iterations and
 *                           unsubscribes (as a profiler's schedule ends), then a second
 *                           communicator, split from the first, runs its iterations: usbyte may
 *                           watch its warm-up again
 * Either way its subscription must succeed and its callbacks must be called (the profiler works);
 * it prints "profiler subscribed at iteration N", "profiler unsubscribed at iteration U" (later)
 * and "profiler saw K callbacks".  Eight allreduces per iteration on a stream of their own, results
 * checked; the host idles GAP_US between iterations (an optimizer step, the next batch), so that the
 * widest gap between ready times marks where an iteration begins unless the machine stalls longer
 * inside one (then usbyte profiles again from the right phase: cupti_profiler.sh knows both). */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <cupti.h>

#include "../emu_common.h"

#define CALLS 8
#define ITERS 24
#define PROFILED 3
#define GAP_US 20000

static atomic_int callbacks;

static void CUPTIAPI on_callback(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
    (void)user;
    (void)domain;
    (void)cbid;
    (void)data;
    atomic_fetch_add(&callbacks, 1);
}

static CUpti_SubscriberHandle sub;

/* libcupti's own function, not the one the PLT binds to (an interposer's). */
static void *cupti_own(const char *name)
{
    void *lib = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
    EXPECT(lib, "libcupti.so.13 is not loaded: %s", dlerror());
    void *fn = dlsym(lib, name);
    EXPECT(fn, "libcupti.so.13 has no %s", name);
    dlclose(lib);
    return fn;
}

static void subscribe(bool named, bool direct)
{
    CUptiResult r;
    if (named) {
        CUpti_SubscriberParams p = {CUpti_SubscriberParams_STRUCT_SIZE, "test-profiler", NULL, 0};
        __typeof__(cuptiSubscribe_v2) *fn = direct ? (__typeof__(cuptiSubscribe_v2) *)cupti_own("cuptiSubscribe_v2")
                                                   : cuptiSubscribe_v2;
        r = fn(&sub, on_callback, NULL, &p);
    } else {
        r = cuptiSubscribe(&sub, on_callback, NULL);
    }
    const char *text = "?";
    cuptiGetResultString(r, &text);
    EXPECT(r == CUPTI_SUCCESS, "the profiler's cuptiSubscribe returned %s", text);
    EXPECT(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS, "cuptiEnableDomain failed");
}

/* Whether some subscriber holds CUPTI now, asked of the library itself. */
static bool held(void)
{
    __typeof__(cuptiSubscribe) *real = (__typeof__(cuptiSubscribe) *)cupti_own("cuptiSubscribe");
    CUpti_SubscriberHandle probe;
    CUptiResult r = real(&probe, on_callback, NULL);
    if (r == CUPTI_SUCCESS)
        EXPECT(cuptiUnsubscribe(probe) == CUPTI_SUCCESS, "cuptiUnsubscribe failed");
    EXPECT(r == CUPTI_SUCCESS || r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, "cuptiSubscribe returned %d", r);
    return r != CUPTI_SUCCESS;
}

static float value(int rank, int it, int c, int i) { return (float)((rank + 2) * 3 + it * 5 + c * 11 + i % 7); }

/* ITERS iterations on comm; later: the profiler subscribes once CUPTI is held, and unsubscribes
 * PROFILED iterations after. */
static void run(ncclComm_t comm, int rank, int world, bool later, int *subscribed_at, int *unsubscribed_at)
{
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float *h, *d[CALLS];
    size_t n[CALLS], most = 64 + 16 * CALLS;
    CUDA_OK(cudaMallocHost((void **)&h, most * sizeof *h));
    for (int c = 0; c < CALLS; c++) {
        n[c] = 64 + 16 * (size_t)c;
        CUDA_OK(cudaMalloc((void **)&d[c], n[c] * sizeof(float)));
    }
    for (int it = 0; it < ITERS; it++) {
        usleep(GAP_US);
        if (later && *subscribed_at < 0 && held()) {
            subscribe(false, false);
            *subscribed_at = it;
        } else if (later && *subscribed_at >= 0 && *unsubscribed_at < 0 && it == *subscribed_at + PROFILED) {
            EXPECT(atomic_load(&callbacks) > 0, "the profiler's callback was never called");
            EXPECT(cuptiUnsubscribe(sub) == CUPTI_SUCCESS, "the profiler's cuptiUnsubscribe failed");
            *unsubscribed_at = it;
        }
        for (int c = 0; c < CALLS; c++) {
            for (size_t i = 0; i < n[c]; i++)
                h[i] = value(rank, it, c, (int)i);
            CUDA_OK(cudaMemcpy(d[c], h, n[c] * sizeof(float), cudaMemcpyHostToDevice));
            NCCL_OK(ncclAllReduce(d[c], d[c], n[c], ncclFloat32, ncclSum, comm, s));
        }
        CUDA_OK(cudaStreamSynchronize(s));
        for (int c = 0; c < CALLS; c++) {
            CUDA_OK(cudaMemcpy(h, d[c], n[c] * sizeof(float), cudaMemcpyDeviceToHost));
            for (size_t i = 0; i < n[c]; i++) {
                float want = 0;
                for (int r = 0; r < world; r++)
                    want += value(r, it, c, (int)i);
                EXPECT(h[i] == want, "iteration %d call %d element %zu: %g, expected %g", it, c, i, h[i], want);
            }
        }
    }
    for (int c = 0; c < CALLS; c++)
        CUDA_OK(cudaFree(d[c]));
    CUDA_OK(cudaFreeHost(h));
    CUDA_OK(cudaStreamDestroy(s));
}

int main(int argc, char **argv)
{
    EXPECT(argc == 2 && (!strcmp(argv[1], "before") || !strcmp(argv[1], "tool") || !strcmp(argv[1], "later")),
           "usage: cupti_profiler before|tool|later");
    bool later = !strcmp(argv[1], "later");
    int subscribed_at = -1, unsubscribed_at = -1;
    if (!later) {
        subscribe(true, !strcmp(argv[1], "tool"));
        subscribed_at = 0;
    }
    int rank, world;
    ncclComm_t comm = world_comm(&rank, &world);
    run(comm, rank, world, later, &subscribed_at, &unsubscribed_at);
    EXPECT(subscribed_at >= 0, "nobody held CUPTI during the %d iterations", ITERS);
    EXPECT(atomic_load(&callbacks) > 0, "the profiler's callback was never called");
    if (later) {
        EXPECT(unsubscribed_at >= 0, "the profiler did not unsubscribe");
        ncclComm_t second;
        NCCL_OK(ncclCommSplit(comm, 0, rank, &second, NULL));
        run(second, rank, world, false, &subscribed_at, &unsubscribed_at);
        NCCL_OK(ncclCommDestroy(second));
    } else {
        EXPECT(cuptiUnsubscribe(sub) == CUPTI_SUCCESS, "the profiler's cuptiUnsubscribe failed");
    }
    printf("profiler subscribed at iteration %d\n", subscribed_at);
    if (later)
        printf("profiler unsubscribed at iteration %d\n", unsubscribed_at);
    printf("profiler saw %d callbacks\n", atomic_load(&callbacks));
    NCCL_OK(ncclCommDestroy(comm));
    printf("cupti_profiler ok: rank %d\n", rank);
    return 0;
}
