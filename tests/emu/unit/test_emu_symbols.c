/* The stand-ins export what the real libraries export, with the same sonames and symbol
 * versions (an LD_PRELOAD interposer must meet cudaEventRecord@@libcudart.so.13 here exactly
 * as it will on a GPU machine).  Reads the dynamic symbol tables with readelf; where the real
 * libraries are installed under CUDA_HOME, every emulated export is also checked against them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dlfcn.h>

#include <cmocka.h>

#define MAX_SYMS 4096

struct symtab {
    int n;
    char names[MAX_SYMS][256];   /* "name@@VERSION" or "name" */
};

static char emu_dir[4200];

/* Defined global functions of lib, as readelf prints them. */
static int read_symbols(const char *lib, struct symtab *t)
{
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "readelf --dyn-syms -W '%s' 2>/dev/null", lib);
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    char line[1024];
    t->n = 0;
    while (fgets(line, sizeof line, p) && t->n < MAX_SYMS) {
        char type[16], bind[16], vis[16], ndx[16], name[240];
        if (sscanf(line, "%*s %*s %*s %15s %15s %15s %15s %239s", type, bind, vis, ndx, name) != 5)
            continue;
        if (strcmp(ndx, "UND") == 0 || strcmp(type, "FUNC") != 0 || strcmp(bind, "LOCAL") == 0)
            continue;
        snprintf(t->names[t->n++], sizeof t->names[0], "%s", name);
    }
    return pclose(p) == 0 && t->n > 0 ? 0 : -1;
}

static int has(const struct symtab *t, const char *name)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->names[i], name) == 0)
            return 1;
    return 0;
}

static void lib_path(char *out, size_t size, const char *name)
{
    snprintf(out, size, "%s/%s", emu_dir, name);
}

static int setup(void **state)
{
    (void)state;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    *slash = '\0';
    snprintf(emu_dir, sizeof emu_dir, "%s/../../emu", exe);
    return 0;
}

static void expect_soname(const char *file, const char *soname)
{
    char path[4400], cmd[4600], line[512];
    lib_path(path, sizeof path, file);
    snprintf(cmd, sizeof cmd, "readelf -d '%s'", path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char expect[128];
    snprintf(expect, sizeof expect, "Library soname: [%s]", soname);
    int found = 0;
    while (fgets(line, sizeof line, p))
        found |= strstr(line, expect) != NULL;
    pclose(p);
    if (!found)
        fail_msg("%s: no %s", path, expect);
}

static void test_sonames(void **state)
{
    (void)state;
    expect_soname("libcudart.so.13", "libcudart.so.13");
    expect_soname("libcudart.so", "libcudart.so.13");
    expect_soname("libcuda.so.1", "libcuda.so.1");
    expect_soname("libcuda.so", "libcuda.so.1");
    expect_soname("libcupti.so.13", "libcupti.so.13");
    expect_soname("libcupti.so", "libcupti.so.13");
}

/* Every export carries the expected version: prefix -> "@@VERSION" ("" for unversioned). */
static void check_versions(const char *file, const char *const rules[][2], size_t n_rules, struct symtab *t)
{
    char path[4400];
    lib_path(path, sizeof path, file);
    assert_int_equal(read_symbols(path, t), 0);
    for (int i = 0; i < t->n; i++) {
        const char *sym = t->names[i];
        const char *at = strstr(sym, "@@");
        size_t base_len = at ? (size_t)(at - sym) : strlen(sym);
        int ok = 0;
        for (size_t r = 0; r < n_rules; r++) {
            size_t plen = strlen(rules[r][0]);
            if (base_len >= plen && strncmp(sym, rules[r][0], plen) == 0) {
                ok = rules[r][1][0] ? at != NULL && strcmp(at + 2, rules[r][1]) == 0 : at == NULL && strchr(sym, '@') == NULL;
                break;
            }
        }
        if (!ok)
            fail_msg("%s exports %s with an unexpected name or version", file, sym);
    }
}

static const char *const cudart_required[] = {
    "cudaGetDeviceCount", "cudaSetDevice", "cudaGetDevice", "cudaGetDeviceProperties", "cudaMalloc", "cudaFree",
    "cudaMallocHost", "cudaFreeHost", "cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority",
    "cudaStreamDestroy", "cudaStreamQuery", "cudaStreamQuery_ptsz", "cudaStreamSynchronize",
    "cudaStreamSynchronize_ptsz", "cudaStreamWaitEvent", "cudaStreamWaitEvent_ptsz", "cudaStreamIsCapturing",
    "cudaStreamIsCapturing_ptsz", "cudaStreamGetCaptureInfo", "cudaStreamGetCaptureInfo_ptsz", "cudaEventCreate",
    "cudaEventCreateWithFlags", "cudaEventRecord", "cudaEventRecord_ptsz", "cudaEventRecordWithFlags",
    "cudaEventRecordWithFlags_ptsz", "cudaEventQuery", "cudaEventSynchronize", "cudaEventElapsedTime",
    "cudaEventDestroy", "cudaMemcpyAsync", "cudaMemcpyAsync_ptsz", "cudaMemcpy", "cudaMemcpy_ptds",
    "cudaMemsetAsync", "cudaMemsetAsync_ptsz", "cudaLaunchHostFunc", "cudaLaunchHostFunc_ptsz",
    "cudaDeviceSynchronize", "cudaGetLastError", "cudaPeekAtLastError", "cudaGetErrorString", "cudaGetErrorName",
    "cudaRuntimeGetVersion", "cudaDriverGetVersion", "cudaLaunchKernel", "cudaLaunchKernel_ptsz",
    "cudaLaunchKernelExC", "cudaLaunchKernelExC_ptsz", "cudaLaunchCooperativeKernel", "cudaLaunchCooperativeKernel_ptsz",
    "cudaMemcpyBatchAsync", "cudaMemcpyBatchAsync_ptsz", "cudaMemcpy2DAsync", "cudaMemcpy2DAsync_ptsz",
    "cudaMemcpy3DAsync", "cudaMemcpy3DAsync_ptsz", "cudaMemcpyPeerAsync", "cudaMemcpy3DPeerAsync",
    "cudaMemcpy3DPeerAsync_ptsz", "cudaMemset2DAsync", "cudaMemset2DAsync_ptsz", "cudaMemset3DAsync",
    "cudaMemset3DAsync_ptsz", "cudaStreamAddCallback", "cudaStreamAddCallback_ptsz", "cudaGraphCreate",
    "cudaGraphAddKernelNode", "cudaGraphAddHostNode", "cudaGraphInstantiate", "cudaGraphLaunch", "cudaGraphLaunch_ptsz",
    "cudaGraphExecDestroy", "cudaGraphDestroy", "cudaStreamBeginCapture", "cudaStreamBeginCapture_ptsz",
    "cudaStreamEndCapture", "cudaStreamEndCapture_ptsz", "cudaThreadExchangeStreamCaptureMode",
};

static const char *const emu_required[] = {
    "usbyteEmuStreamEnqueue", "usbyteEmuSetActivity", "usbyteEmuValidRange", "usbyteEmuDumpStreams",
    "usbyteEmuStreamEnqueueEx", "usbyteEmuSetApiHook", "usbyteEmuApiCallback", "usbyteEmuContext",
    "usbyteEmuStreamCapturing", "usbyteEmuStreamEnqueueCapturable", "usbyteEmuSetStickyError", "usbyteEmuCopyAsync", "usbyteEmuSetAsync",
    "usbyteEmuLaunchKernel", "usbyteEmuLaunchHost", "usbyteEmuGraphLaunch", "usbyteEmuComputeStretchNs",
};

static const char *const cuda_required[] = {
    "cuInit", "cuDriverGetVersion", "cuDeviceGet", "cuDeviceGetCount", "cuCtxGetCurrent", "cuMemHostGetDevicePointer_v2",
    "cuPointerGetAttribute", "cuMemAlloc_v2", "cuMemFree_v2",
    "cuStreamWaitValue32", "cuStreamWaitValue32_v2", "cuStreamWaitValue32_ptsz", "cuStreamWaitValue32_v2_ptsz",
    "cuStreamWaitValue64", "cuStreamWaitValue64_v2", "cuStreamWaitValue64_ptsz", "cuStreamWaitValue64_v2_ptsz",
    "cuStreamWriteValue32", "cuStreamWriteValue32_v2", "cuStreamWriteValue32_ptsz", "cuStreamWriteValue32_v2_ptsz",
    "cuStreamWriteValue64", "cuStreamWriteValue64_v2", "cuStreamWriteValue64_ptsz", "cuStreamWriteValue64_v2_ptsz",
    "cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz", "cuLaunchCooperativeKernel",
    "cuLaunchCooperativeKernel_ptsz", "cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync_v2_ptsz", "cuMemcpyDtoHAsync_v2",
    "cuMemcpyDtoHAsync_v2_ptsz", "cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync_v2_ptsz", "cuMemcpyAsync",
    "cuMemcpyAsync_ptsz", "cuMemcpy2DAsync_v2", "cuMemcpy2DAsync_v2_ptsz", "cuMemcpy3DAsync_v2",
    "cuMemcpy3DAsync_v2_ptsz", "cuMemcpyPeerAsync", "cuMemcpyPeerAsync_ptsz", "cuMemsetD8Async", "cuMemsetD8Async_ptsz",
    "cuMemsetD16Async", "cuMemsetD16Async_ptsz", "cuMemsetD32Async", "cuMemsetD32Async_ptsz", "cuMemsetD2D8Async",
    "cuMemsetD2D8Async_ptsz", "cuMemsetD2D16Async", "cuMemsetD2D16Async_ptsz", "cuMemsetD2D32Async",
    "cuMemsetD2D32Async_ptsz", "cuLaunchHostFunc", "cuLaunchHostFunc_ptsz", "cuStreamAddCallback",
    "cuStreamAddCallback_ptsz", "cuGraphLaunch", "cuGraphLaunch_ptsz",
};

static const char *const cupti_required[] = {
    "cuptiSubscribe", "cuptiSubscribe_v2", "cuptiUnsubscribe", "cuptiEnableDomain", "cuptiEnableCallback",
    "cuptiGetResultString",
};

static struct symtab mine, real;

static void require_all(const struct symtab *t, const char *const *names, size_t n, const char *version, const char *lib)
{
    for (size_t i = 0; i < n; i++) {
        char full[160];
        snprintf(full, sizeof full, "%s%s%s", names[i], version[0] ? "@@" : "", version);
        if (!has(t, full))
            fail_msg("%s does not export %s", lib, full);
    }
}

/* Where the real library is installed, each emulated export must exist there identically. */
static void compare_with_real(const struct symtab *t, const char *real_path, const char *skip_prefix)
{
    if (access(real_path, R_OK) != 0) {
        print_message("(no %s: export list not compared with the real library)\n", real_path);
        return;
    }
    assert_int_equal(read_symbols(real_path, &real), 0);
    for (int i = 0; i < t->n; i++) {
        if (skip_prefix && strncmp(t->names[i], skip_prefix, strlen(skip_prefix)) == 0)
            continue;
        if (!has(&real, t->names[i]))
            fail_msg("%s is not exported by %s", t->names[i], real_path);
    }
}

static const char *cuda_home(void)
{
    const char *h = getenv("CUDA_HOME");
    return h && *h ? h : "/usr/local/cuda";
}

static void test_cudart_exports(void **state)
{
    (void)state;
    static const char *const rules[][2] = {{"cuda", "libcudart.so.13"}, {"usbyteEmu", "USBYTE_EMU"}};
    check_versions("libcudart.so.13", rules, 2, &mine);
    require_all(&mine, cudart_required, sizeof cudart_required / sizeof *cudart_required, "libcudart.so.13", "libcudart");
    require_all(&mine, emu_required, sizeof emu_required / sizeof *emu_required, "USBYTE_EMU", "libcudart");
    char real_path[4096];
    snprintf(real_path, sizeof real_path, "%s/lib64/libcudart.so.13", cuda_home());
    compare_with_real(&mine, real_path, "usbyteEmu");
}

static void test_cuda_exports(void **state)
{
    (void)state;
    static const char *const rules[][2] = {{"cu", ""}};
    check_versions("libcuda.so.1", rules, 1, &mine);
    require_all(&mine, cuda_required, sizeof cuda_required / sizeof *cuda_required, "", "libcuda");
    char real_path[4096];
    snprintf(real_path, sizeof real_path, "%s/lib64/stubs/libcuda.so", cuda_home());
    compare_with_real(&mine, real_path, NULL);
}

static void test_cupti_exports(void **state)
{
    (void)state;
    static const char *const rules[][2] = {{"cupti", "libcupti.so.13"}};
    check_versions("libcupti.so.13", rules, 1, &mine);
    require_all(&mine, cupti_required, sizeof cupti_required / sizeof *cupti_required, "libcupti.so.13", "libcupti");
    char real_path[4096];
    snprintf(real_path, sizeof real_path, "%s/lib64/libcupti.so.13", cuda_home());
    compare_with_real(&mine, real_path, NULL);
}

/* The dynamic linker binds versioned references here, as an interposer's dlvsym would. */
static void test_versioned_lookup(void **state)
{
    (void)state;
    char path[4400];
    lib_path(path, sizeof path, "libcudart.so.13");
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    assert_non_null(dlvsym(h, "cudaEventRecord", "libcudart.so.13"));
    assert_non_null(dlvsym(h, "cudaStreamWaitEvent_ptsz", "libcudart.so.13"));
    assert_non_null(dlvsym(h, "usbyteEmuStreamEnqueue", "USBYTE_EMU"));
    assert_null(dlvsym(h, "cudaEventRecord", "USBYTE_EMU"));
    dlclose(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sonames),
        cmocka_unit_test(test_cudart_exports),
        cmocka_unit_test(test_cuda_exports),
        cmocka_unit_test(test_cupti_exports),
        cmocka_unit_test(test_versioned_lookup),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
