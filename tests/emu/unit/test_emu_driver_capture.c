/* Graph capture begun outside cudaStreamBeginCapture, as the emulator provides it: the driver's
 * cuStreamBeginCapture (legacy one-argument form: global mode), _v2, ToGraph and their _ptsz
 * forms, cuStreamEndCapture and cuStreamIsCapturing; the runtime's
 * cudaStreamBeginCaptureToGraph (the captured nodes appended after the given dependencies);
 * and the lookups cuGetProcAddress(_v2) and cudaGetDriverEntryPoint(ByVersion) (_ptsz).
 *
 * This program defines its own cudaStreamBeginCapture and cuGetProcAddress_v2, exported
 * (-rdynamic) where an LD_PRELOAD interposer's would be: the driver entry points must not reach
 * the former, the runtime's entry-point lookups must not consult the latter, and the driver's
 * table must hand out its own functions, not these. */
/* cudaGetDriverEntryPoint is deprecated in CUDA 13, and still exported: it is tested here. */
#define CUDA_ENABLE_DEPRECATED 1

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "usbyte/cuda_exports.h"   /* cuStreamBeginCapture: the legacy one-argument function */

#define CHECK(call) assert_int_equal((call), cudaSuccess)
#define CU_CHECK(call) assert_int_equal((call), CUDA_SUCCESS)

/* ---- the interposer stand-ins ---- */
static int runtime_begin_calls, proc_address_calls;

__attribute__((visibility("default"))) cudaError_t cudaStreamBeginCapture(cudaStream_t stream,
                                                                          enum cudaStreamCaptureMode mode)
{
    __atomic_add_fetch(&runtime_begin_calls, 1, __ATOMIC_SEQ_CST);
    cudaError_t (*real)(cudaStream_t, enum cudaStreamCaptureMode);
    *(void **)&real = dlsym(RTLD_NEXT, "cudaStreamBeginCapture");
    return real(stream, mode);
}

static void *libcuda(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(h);
    return h;
}

static void *driver_fn(const char *name)
{
    void *fn = dlsym(libcuda(), name);
    assert_non_null(fn);
    return fn;
}

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                                                    cuuint64_t flags,
                                                                    CUdriverProcAddressQueryResult *symbolStatus)
{
    __atomic_add_fetch(&proc_address_calls, 1, __ATOMIC_SEQ_CST);
    CUresult (*real)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
    *(void **)&real = driver_fn("cuGetProcAddress_v2");
    return real(symbol, pfn, cudaVersion, flags, symbolStatus);
}

/* The driver's own cuGetProcAddress_v2, not this program's. */
static CUresult proc_address(const char *symbol, void **pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
    CUresult (*real)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
    *(void **)&real = driver_fn("cuGetProcAddress_v2");
    return real(symbol, pfn, version, flags, status);
}

/* ---- helpers ---- */
static char order[64];
static int order_n;

static void log_char(void *arg)
{
    order[__atomic_fetch_add(&order_n, 1, __ATOMIC_SEQ_CST)] = (char)(uintptr_t)arg;
}

static void reset_log(void)
{
    memset(order, 0, sizeof order);
    order_n = 0;
}

static cudaStream_t new_stream(void)
{
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return s;
}

static enum cudaStreamCaptureStatus status_of(cudaStream_t s)
{
    enum cudaStreamCaptureStatus st = (enum cudaStreamCaptureStatus)99;
    CHECK(cudaStreamIsCapturing(s, &st));
    return st;
}

static size_t node_count(cudaGraph_t g)
{
    size_t n = 0;
    CHECK(cudaGraphGetNodes(g, NULL, &n));
    return n;
}

/* Instantiates g, launches it on s once and returns what its host functions logged. */
static const char *run_graph(cudaGraph_t g, cudaStream_t s)
{
    reset_log();
    cudaGraphExec_t e;
    CHECK(cudaGraphInstantiate(&e, g, 0));
    CHECK(cudaGraphLaunch(e, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaGraphExecDestroy(e));
    return order;
}

/* ---- driver capture ---- */
enum begin_kind { LEGACY, LEGACY_PTSZ, V2, V2_PTSZ, TO_GRAPH, TO_GRAPH_PTSZ, N_BEGIN };

/* Begins a capture on `stream` (NULL for the _ptsz forms: the per-thread default stream). */
static CUresult driver_begin(enum begin_kind k, CUstream stream, CUgraph into)
{
    switch (k) {
    case LEGACY: return cuStreamBeginCapture(stream);
    case LEGACY_PTSZ: return cuStreamBeginCapture_ptsz(stream);
    case V2: return cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_RELAXED);
    case V2_PTSZ: return cuStreamBeginCapture_v2_ptsz(stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
    case TO_GRAPH: return cuStreamBeginCaptureToGraph(stream, into, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL);
    default: return cuStreamBeginCaptureToGraph_ptsz(stream, into, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL);
    }
}

/* Each driver begin: the runtime sees the capture (cudaStreamIsCapturing), the driver too,
 * work is captured, not run, and the driver's EndCapture returns the graph that runs it; the
 * public cudaStreamBeginCapture is never called. */
static void test_driver_begin_each_entry_point(void **state)
{
    (void)state;
    cudaStream_t created = new_stream();
    for (int k = 0; k < N_BEGIN; k++) {
        bool ptsz = k == LEGACY_PTSZ || k == V2_PTSZ || k == TO_GRAPH_PTSZ;
        bool to_graph = k == TO_GRAPH || k == TO_GRAPH_PTSZ;
        /* A _ptsz form given NULL captures the per-thread default stream. */
        cudaStream_t s = ptsz ? cudaStreamPerThread : created;
        CUstream handle = ptsz ? NULL : (CUstream)created;
        cudaGraph_t into = NULL;
        if (to_graph)
            CHECK(cudaGraphCreate(&into, 0));
        reset_log();
        CU_CHECK(driver_begin((enum begin_kind)k, handle, (CUgraph)into));
        assert_int_equal(status_of(s), cudaStreamCaptureStatusActive);
        CUstreamCaptureStatus cst = CU_STREAM_CAPTURE_STATUS_NONE;
        CU_CHECK(ptsz ? cuStreamIsCapturing_ptsz(NULL, &cst) : cuStreamIsCapturing(handle, &cst));
        assert_int_equal(cst, CU_STREAM_CAPTURE_STATUS_ACTIVE);
        if (!ptsz)   /* the per-thread stream is not the one capturing */
            assert_int_equal(status_of(cudaStreamPerThread), cudaStreamCaptureStatusNone);
        CHECK(cudaLaunchHostFunc(s, log_char, (void *)(uintptr_t)'a'));
        CHECK(cudaLaunchHostFunc(s, log_char, (void *)(uintptr_t)'b'));
        CUgraph g = NULL;
        CU_CHECK(ptsz ? cuStreamEndCapture_ptsz(NULL, &g) : cuStreamEndCapture(handle, &g));
        assert_non_null(g);
        if (to_graph)
            assert_ptr_equal(g, into);
        assert_int_equal(status_of(s), cudaStreamCaptureStatusNone);
        assert_int_equal(order_n, 0);   /* captured, not run */
        assert_int_equal(node_count((cudaGraph_t)g), 2);
        assert_string_equal(run_graph((cudaGraph_t)g, s), "ab");
        CHECK(cudaGraphDestroy((cudaGraph_t)g));
    }
    assert_int_equal(runtime_begin_calls, 0);
    /* The driver's own errors: the legacy stream, a capture already running, no capture. */
    assert_int_equal(cuStreamBeginCapture(NULL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CU_CHECK(cuStreamBeginCapture_v2((CUstream)created, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_int_equal(cuStreamBeginCapture((CUstream)created), CUDA_ERROR_ILLEGAL_STATE);
    assert_int_equal(cuStreamBeginCaptureToGraph((CUstream)created, NULL, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL),
                     CUDA_ERROR_INVALID_VALUE);
    CUgraph g;
    CU_CHECK(cuStreamEndCapture((CUstream)created, &g));
    CHECK(cudaGraphDestroy((cudaGraph_t)g));
    assert_int_equal(cuStreamEndCapture((CUstream)created, &g), CUDA_ERROR_ILLEGAL_STATE);
    assert_int_equal(cuStreamBeginCapture_v2((CUstream)created, (CUstreamCaptureMode)7), CUDA_ERROR_INVALID_VALUE);
    /* And the runtime's own entry point still goes through (this program's) public symbol. */
    CHECK(cudaStreamBeginCapture(created, cudaStreamCaptureModeGlobal));
    assert_int_equal(runtime_begin_calls, 1);
    CU_CHECK(cuStreamEndCapture((CUstream)created, &g));
    CHECK(cudaGraphDestroy((cudaGraph_t)g));
    CHECK(cudaStreamDestroy(created));
}

/* cudaMalloc from another thread, in that thread's default (global) mode. */
static void *malloc_from_thread(void *arg)
{
    void *p = NULL;
    cudaError_t *r = arg;
    *r = cudaMalloc(&p, 64);
    if (*r == cudaSuccess)
        CHECK(cudaFree(p));
    cudaGetLastError();
    return NULL;
}

static cudaError_t other_thread_malloc(void)
{
    cudaError_t r = cudaErrorUnknown;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, malloc_from_thread, &r), 0);
    pthread_join(t, NULL);
    return r;
}

/* The legacy one-argument begin captures in global mode: an unsafe call from another thread is
 * refused and invalidates the capture, which a relaxed _v2 capture does not prohibit. */
static void test_legacy_begin_is_global(void **state)
{
    (void)state;
    cudaStream_t s = new_stream();
    CUgraph g = (CUgraph)0x1;
    for (int ptsz = 0; ptsz < 2; ptsz++) {
        cudaStream_t cs = ptsz ? cudaStreamPerThread : s;
        CU_CHECK(ptsz ? cuStreamBeginCapture_ptsz(NULL) : cuStreamBeginCapture((CUstream)s));
        assert_int_equal(other_thread_malloc(), cudaErrorStreamCaptureUnsupported);
        assert_int_equal(status_of(cs), cudaStreamCaptureStatusInvalidated);
        assert_int_equal(ptsz ? cuStreamEndCapture_ptsz(NULL, &g) : cuStreamEndCapture((CUstream)s, &g),
                         CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        assert_null(g);
    }
    CU_CHECK(cuStreamBeginCapture_v2((CUstream)s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK(other_thread_malloc());
    CU_CHECK(cuStreamEndCapture((CUstream)s, &g));
    CHECK(cudaGraphDestroy((cudaGraph_t)g));
    CHECK(cudaStreamDestroy(s));
}

/* cudaStreamBeginCaptureToGraph (and the driver's): the captured nodes go into the given graph,
 * the first after the given dependencies, the next after it; its error cases. */
static void test_capture_to_graph(void **state)
{
    (void)state;
    cudaStream_t s = new_stream();
    cudaGraph_t g, other;
    CHECK(cudaGraphCreate(&g, 0));
    CHECK(cudaGraphCreate(&other, 0));
    cudaGraphNode_t a, b, foreign;
    struct cudaHostNodeParams pa = {log_char, (void *)(uintptr_t)'A'}, pb = {log_char, (void *)(uintptr_t)'B'};
    CHECK(cudaGraphAddHostNode(&a, g, NULL, 0, &pa));
    CHECK(cudaGraphAddHostNode(&b, g, &a, 1, &pb));
    CHECK(cudaGraphAddHostNode(&foreign, other, NULL, 0, &pa));
    reset_log();

    CHECK(cudaStreamBeginCaptureToGraph(s, g, &a, NULL, 1, cudaStreamCaptureModeGlobal));
    assert_int_equal(status_of(s), cudaStreamCaptureStatusActive);
    CHECK(cudaLaunchHostFunc(s, log_char, (void *)(uintptr_t)'c'));
    CHECK(cudaLaunchHostFunc(s, log_char, (void *)(uintptr_t)'d'));
    cudaGraph_t out = NULL;
    CHECK(cudaStreamEndCapture(s, &out));
    assert_ptr_equal(out, g);
    cudaGraphNode_t nodes[5];
    size_t n = 5;
    CHECK(cudaGraphGetNodes(g, nodes, &n));
    assert_int_equal(n, 4);
    assert_ptr_equal(nodes[0], a);
    assert_ptr_equal(nodes[1], b);
    assert_null(nodes[4]);
    cudaGraphNode_t deps[3];
    size_t nd = 3;
    CHECK(cudaGraphNodeGetDependencies(nodes[2], deps, NULL, &nd));   /* c after a only */
    assert_int_equal(nd, 1);
    assert_ptr_equal(deps[0], a);
    nd = 3;
    CHECK(cudaGraphNodeGetDependencies(nodes[3], deps, NULL, &nd));   /* d after c */
    assert_int_equal(nd, 1);
    assert_ptr_equal(deps[0], nodes[2]);
    nd = 3;
    CHECK(cudaGraphNodeGetDependencies(nodes[1], deps, NULL, &nd));
    assert_int_equal(nd, 1);
    assert_ptr_equal(deps[0], a);
    assert_int_equal(order_n, 0);
    assert_string_equal(run_graph(g, s), "ABcd");

    /* Through the driver's _ptsz form, after both a and b (default edge data given). */
    cudaGraphNode_t ab[2] = {a, b};
    CUgraphEdgeData edges[2];
    memset(edges, 0, sizeof edges);
    CU_CHECK(cuStreamBeginCaptureToGraph_ptsz(NULL, (CUgraph)g, (const CUgraphNode *)ab, edges, 2,
                                              CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    assert_int_equal(status_of(cudaStreamPerThread), cudaStreamCaptureStatusActive);
    CHECK(cudaLaunchHostFunc(cudaStreamPerThread, log_char, (void *)(uintptr_t)'e'));
    CUgraph cout = NULL;
    CU_CHECK(cuStreamEndCapture_ptsz(NULL, &cout));
    assert_ptr_equal(cout, g);
    n = 5;
    CHECK(cudaGraphGetNodes(g, nodes, &n));
    assert_int_equal(n, 5);
    nd = 3;
    CHECK(cudaGraphNodeGetDependencies(nodes[4], deps, NULL, &nd));
    assert_int_equal(nd, 2);
    assert_ptr_equal(deps[0], a);
    assert_ptr_equal(deps[1], b);

    /* Errors: no graph, a dependency of another graph or twice, NULL dependencies, programmatic
     * edge data, the legacy stream, a stream already capturing. */
    assert_int_equal(cudaStreamBeginCaptureToGraph(s, NULL, NULL, NULL, 0, cudaStreamCaptureModeGlobal),
                     cudaErrorInvalidValue);
    assert_int_equal(cudaStreamBeginCaptureToGraph(s, g, &foreign, NULL, 1, cudaStreamCaptureModeGlobal),
                     cudaErrorInvalidValue);
    cudaGraphNode_t twice[2] = {a, a};
    assert_int_equal(cudaStreamBeginCaptureToGraph(s, g, twice, NULL, 2, cudaStreamCaptureModeGlobal),
                     cudaErrorInvalidValue);
    assert_int_equal(cudaStreamBeginCaptureToGraph(s, g, NULL, NULL, 1, cudaStreamCaptureModeGlobal),
                     cudaErrorInvalidValue);
    cudaGraphEdgeData prog = {.type = cudaGraphDependencyTypeProgrammatic};
    assert_int_equal(cudaStreamBeginCaptureToGraph(s, g, &a, &prog, 1, cudaStreamCaptureModeGlobal),
                     cudaErrorNotSupported);
    assert_int_equal(cudaStreamBeginCaptureToGraph(cudaStreamLegacy, g, NULL, NULL, 0, cudaStreamCaptureModeGlobal),
                     cudaErrorStreamCaptureUnsupported);
    assert_int_equal(cudaStreamBeginCaptureToGraph(s, g, NULL, NULL, 0, (enum cudaStreamCaptureMode)9),
                     cudaErrorInvalidValue);
    assert_int_equal(status_of(s), cudaStreamCaptureStatusNone);
    CHECK(cudaStreamBeginCaptureToGraph_ptsz(NULL, g, NULL, NULL, 0, cudaStreamCaptureModeGlobal));
    assert_int_equal(cudaStreamBeginCaptureToGraph_ptsz(NULL, g, NULL, NULL, 0, cudaStreamCaptureModeGlobal),
                     cudaErrorIllegalState);
    /* An invalidated capture leaves the graph as it was. */
    CHECK(cudaLaunchHostFunc(cudaStreamPerThread, log_char, (void *)(uintptr_t)'x'));
    assert_int_equal(cudaStreamSynchronize(cudaStreamPerThread), cudaErrorStreamCaptureUnsupported);
    out = (cudaGraph_t)0x1;
    assert_int_equal(cudaStreamEndCapture(cudaStreamPerThread, &out), cudaErrorStreamCaptureInvalidated);
    assert_null(out);
    assert_int_equal(node_count(g), 5);
    /* A graph destroyed during the capture: EndCapture has nowhere to put the nodes. */
    CHECK(cudaStreamBeginCaptureToGraph(s, other, &foreign, NULL, 1, cudaStreamCaptureModeGlobal));
    CHECK(cudaLaunchHostFunc(s, log_char, (void *)(uintptr_t)'y'));
    CHECK(cudaGraphDestroy(other));
    assert_int_equal(cudaStreamEndCapture(s, &out), cudaErrorInvalidValue);
    assert_int_equal(status_of(s), cudaStreamCaptureStatusNone);
    cudaGetLastError();
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaStreamDestroy(s));
}

/* ---- lookups ---- */
static void expect_proc(const char *symbol, int version, cuuint64_t flags, const char *want)
{
    void *fn = (void *)0x1;
    CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)99;
    CU_CHECK(proc_address(symbol, &fn, version, flags, &st));
    assert_int_equal(st, CU_GET_PROC_ADDRESS_SUCCESS);
    assert_ptr_equal(fn, driver_fn(want));
}

static void test_cu_get_proc_address(void **state)
{
    (void)state;
    const cuuint64_t DEF = CU_GET_PROC_ADDRESS_DEFAULT, LEG = CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                     PTDS = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    expect_proc("cuStreamBeginCapture", 10000, DEF, "cuStreamBeginCapture");
    expect_proc("cuStreamBeginCapture", 10009, LEG, "cuStreamBeginCapture");
    expect_proc("cuStreamBeginCapture", 10010, DEF, "cuStreamBeginCapture_v2");
    expect_proc("cuStreamBeginCapture", 13000, LEG, "cuStreamBeginCapture_v2");
    expect_proc("cuStreamBeginCapture", 10000, PTDS, "cuStreamBeginCapture_ptsz");
    expect_proc("cuStreamBeginCapture", 13000, PTDS, "cuStreamBeginCapture_v2_ptsz");
    expect_proc("cuStreamBeginCaptureToGraph", 12030, DEF, "cuStreamBeginCaptureToGraph");
    expect_proc("cuStreamBeginCaptureToGraph", 12080, PTDS, "cuStreamBeginCaptureToGraph_ptsz");
    expect_proc("cuStreamEndCapture", 13000, PTDS, "cuStreamEndCapture_ptsz");
    expect_proc("cuStreamEndCapture", 13000, DEF, "cuStreamEndCapture");
    expect_proc("cuStreamIsCapturing", 10000, PTDS, "cuStreamIsCapturing_ptsz");
    expect_proc("cuGetProcAddress", 11030, DEF, "cuGetProcAddress");
    expect_proc("cuGetProcAddress", 11080, DEF, "cuGetProcAddress");
    expect_proc("cuGetProcAddress", 12000, DEF, "cuGetProcAddress_v2");
    expect_proc("cuGetProcAddress", 12000, PTDS, "cuGetProcAddress_v2");   /* no _ptsz: the legacy one */
    expect_proc("cuMemAlloc", 3020, DEF, "cuMemAlloc_v2");
    expect_proc("cuStreamWaitValue32", 11070, PTDS, "cuStreamWaitValue32_v2_ptsz");
    expect_proc("cuStreamWaitValue32", 11060, PTDS, "cuStreamWaitValue32_ptsz");
    expect_proc("cuInit", 13000, PTDS, "cuInit");
    /* The driver's own function, not this program's definition of the same name. */
    void *fn = NULL;
    CU_CHECK(proc_address("cuGetProcAddress", &fn, 12000, DEF, NULL));
    assert_ptr_not_equal(fn, (void *)cuGetProcAddress_v2);
    assert_ptr_equal(fn, driver_fn("cuGetProcAddress_v2"));
    /* The four-argument form answers the same. */
    CUresult (*legacy)(const char *, void **, int, cuuint64_t);
    *(void **)&legacy = driver_fn("cuGetProcAddress");
    CU_CHECK(legacy("cuStreamBeginCapture", &fn, 10000, PTDS));
    assert_ptr_equal(fn, driver_fn("cuStreamBeginCapture_ptsz"));

    /* Not found: an unknown symbol, a symbol newer than the version asked for. */
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
    fn = (void *)0x1;
    assert_int_equal(proc_address("cuNoSuchFunction", &fn, 13000, DEF, &st), CUDA_ERROR_NOT_FOUND);
    assert_int_equal(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    assert_null(fn);
    fn = (void *)0x1;
    assert_int_equal(proc_address("cuStreamBeginCapture_v2", &fn, 13000, DEF, &st), CUDA_ERROR_NOT_FOUND);
    assert_int_equal(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);   /* a base name is asked for */
    fn = (void *)0x1;
    st = CU_GET_PROC_ADDRESS_SUCCESS;
    assert_int_equal(proc_address("cuStreamBeginCaptureToGraph", &fn, 12020, PTDS, &st), CUDA_ERROR_NOT_FOUND);
    assert_int_equal(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    assert_null(fn);
    fn = (void *)0x1;
    assert_int_equal(legacy("cuStreamBeginCapture", &fn, 9020, DEF), CUDA_ERROR_NOT_FOUND);
    assert_null(fn);
    /* Bad arguments: unknown flags, a version newer than the driver, NULL pointers. */
    assert_int_equal(proc_address("cuInit", &fn, 13000, 4, &st), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(proc_address("cuInit", &fn, 13000, LEG | PTDS, &st), CUDA_ERROR_INVALID_VALUE);
    int driver = 0;
    CU_CHECK(cuDriverGetVersion(&driver));
    assert_int_equal(proc_address("cuInit", &fn, driver + 10, DEF, &st), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(proc_address(NULL, &fn, 13000, DEF, &st), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(proc_address("cuInit", NULL, 13000, DEF, &st), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(proc_address_calls, 0);
}

/* Every function the driver exports is in its table: found by its base name (the exported name
 * without _ptsz and _vN) at some CUDA version, with the flags its suffix calls for. */
static bool found_by_lookup(const char *name)
{
    char base[256];
    snprintf(base, sizeof base, "%s", name);
    size_t len = strlen(base);
    bool ptsz = len > 5 && strcmp(base + len - 5, "_ptsz") == 0;
    if (ptsz)
        base[len -= 5] = '\0';
    char *v = strrchr(base, '_');
    if (v && v[1] == 'v' && v[2] >= '0' && v[2] <= '9' && strspn(v + 2, "0123456789") == strlen(v + 2))
        *v = '\0';
    void *want = driver_fn(name);
    for (int version = 2000; version <= 13000; version += 10) {
        void *fn = NULL;
        if (proc_address(base, &fn, version,
                         ptsz ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                         NULL) == CUDA_SUCCESS &&
            fn == want)
            return true;
    }
    return false;
}

static void test_every_export_is_found(void **state)
{
    (void)state;
    Dl_info info;
    assert_int_not_equal(dladdr(driver_fn("cuInit"), &info), 0);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "readelf --dyn-syms -W '%s'", info.dli_fname);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    char line[512];
    int exports = 0;
    while (fgets(line, sizeof line, f)) {
        char type[32], bind[32], vis[32], ndx[32], name[256];
        if (sscanf(line, "%*s %*s %*s %31s %31s %31s %31s %255s", type, bind, vis, ndx, name) != 5 ||
            strcmp(type, "FUNC") != 0 || strcmp(bind, "GLOBAL") != 0 || strcmp(ndx, "UND") == 0)
            continue;
        exports++;
        if (!found_by_lookup(name))
            fail_msg("libcuda.so.1 exports %s, which cuGetProcAddress does not find", name);
    }
    assert_int_equal(pclose(f), 0);
    assert_true(exports > 80);   /* the table was read */
}

static void expect_entry(cudaError_t (*get)(const char *, void **, unsigned long long,
                                             enum cudaDriverEntryPointQueryResult *),
                         const char *symbol, unsigned long long flags, const char *want)
{
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult st = (enum cudaDriverEntryPointQueryResult)99;
    CHECK(get(symbol, &fn, flags, &st));
    assert_int_equal(st, cudaDriverEntryPointSuccess);
    assert_ptr_equal(fn, driver_fn(want));
}

static void expect_by_version(cudaError_t (*get)(const char *, void **, unsigned int, unsigned long long,
                                                 enum cudaDriverEntryPointQueryResult *),
                              const char *symbol, unsigned version, unsigned long long flags, const char *want)
{
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult st = (enum cudaDriverEntryPointQueryResult)99;
    CHECK(get(symbol, &fn, version, flags, &st));
    assert_int_equal(st, cudaDriverEntryPointSuccess);
    assert_ptr_equal(fn, driver_fn(want));
}

/* The runtime's lookups answer with the driver's own pointers (what dlsym on libcuda.so.1
 * gives), asking the driver's cuGetProcAddress_v2, never this program's. */
static void test_runtime_driver_entry_points(void **state)
{
    (void)state;
    expect_entry(cudaGetDriverEntryPoint, "cuStreamBeginCapture", cudaEnableDefault, "cuStreamBeginCapture_v2");
    expect_entry(cudaGetDriverEntryPoint, "cuStreamBeginCapture", cudaEnablePerThreadDefaultStream,
                 "cuStreamBeginCapture_v2_ptsz");
    expect_entry(cudaGetDriverEntryPoint_ptsz, "cuStreamBeginCapture", cudaEnableDefault,
                 "cuStreamBeginCapture_v2_ptsz");
    expect_entry(cudaGetDriverEntryPoint_ptsz, "cuStreamEndCapture", cudaEnableLegacyStream, "cuStreamEndCapture");
    expect_entry(cudaGetDriverEntryPoint, "cuGetProcAddress", cudaEnableDefault, "cuGetProcAddress_v2");
    expect_by_version(cudaGetDriverEntryPointByVersion, "cuStreamBeginCapture", 10000, cudaEnableDefault,
                      "cuStreamBeginCapture");
    expect_by_version(cudaGetDriverEntryPointByVersion, "cuStreamBeginCaptureToGraph", 12030,
                      cudaEnablePerThreadDefaultStream, "cuStreamBeginCaptureToGraph_ptsz");
    expect_by_version(cudaGetDriverEntryPointByVersion_ptsz, "cuStreamBeginCapture", 10000, cudaEnableDefault,
                      "cuStreamBeginCapture_ptsz");
    expect_by_version(cudaGetDriverEntryPointByVersion_ptsz, "cuGetProcAddress", 11030, cudaEnableDefault,
                      "cuGetProcAddress");
    /* Not found: cudaSuccess, no pointer, the reason in the status. */
    void *fn = (void *)0x1;
    enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSuccess;
    CHECK(cudaGetDriverEntryPoint("cuNoSuchFunction", &fn, cudaEnableDefault, &st));
    assert_null(fn);
    assert_int_equal(st, cudaDriverEntryPointSymbolNotFound);
    fn = (void *)0x1;
    CHECK(cudaGetDriverEntryPointByVersion("cuStreamBeginCaptureToGraph", &fn, 12000, cudaEnableDefault, &st));
    assert_null(fn);
    assert_int_equal(st, cudaDriverEntryPointVersionNotSufficent);
    /* Bad arguments. */
    assert_int_equal(cudaGetDriverEntryPointByVersion("cuInit", &fn, 13010, cudaEnableDefault, &st),
                     cudaErrorInvalidValue);
    assert_int_equal(cudaGetDriverEntryPoint("cuInit", &fn, 8, &st), cudaErrorInvalidValue);
    assert_int_equal(cudaGetDriverEntryPoint(NULL, &fn, cudaEnableDefault, &st), cudaErrorInvalidValue);
    cudaGetLastError();
    assert_int_equal(proc_address_calls, 0);
    /* This program's cuGetProcAddress_v2 is what a direct call reaches: the count can move. */
    CU_CHECK(cuGetProcAddress_v2("cuInit", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, NULL));
    assert_int_equal(proc_address_calls, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_driver_begin_each_entry_point),
        cmocka_unit_test(test_legacy_begin_is_global),
        cmocka_unit_test(test_capture_to_graph),
        cmocka_unit_test(test_cu_get_proc_address),
        cmocka_unit_test(test_every_export_is_found),
        cmocka_unit_test(test_runtime_driver_entry_points),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
