/* Finding the real NCCL and CUDA runtime functions (docs/design.md section 4), once per process.
 *
 * NCCL: frameworks load libnccl with RTLD_LOCAL, so RTLD_NEXT alone may miss it.  We take the
 * library the process already loaded (dlopen(..., RTLD_NOLOAD)), or USBYTE_NCCL_LIB, and look
 * up the pncclXxx aliases NCCL exports for interposers (strong, unlike the weak ncclXxx), then
 * fall back to RTLD_NEXT.  CUDA: the libcudart.so.* the process loaded (PyTorch wheels bring
 * their own), looked up with the runtime's symbol version first.  The CUDA driver: the
 * libcuda.so.1 the process loaded (the runtime loads it at its first call).  Any candidate that is
 * one of our own wrappers is rejected: calling it would recurse forever. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cuda_list.h"
#include "driver_list.h"
#include "globals.h"
#include "guard.h"
#include "log.h"
#include "nccl_list.h"

ub_nccl_real ub_nccl;
ub_cuda_real ub_cuda;

const char *const ub_nccl_names[UB_NCCL_COUNT] = {
#define X(name, cls, params, args, hook) "nccl" #name,
    UB_NCCL_LIST(X)
#undef X
};

const char *const ub_cuda_names[UB_CUDA_COUNT] = {
#define X(name, cls, params, args, hook) #name,
    UB_CUDA_LIST(X)
#undef X
};

/* The runtime's version node, from the library the process loaded (libcudart.so.12 -> node
 * "libcudart.so.12"); CUDA 13's when none is loaded yet. */
static char cudart_node[64] = "libcudart.so.13";

static bool is_ours(void *fn)
{
    Dl_info mine, theirs;
    if (!fn)
        return false;
    if (!dladdr((void *)is_ours, &mine) || !dladdr(fn, &theirs))
        return false;
    return mine.dli_fbase == theirs.dli_fbase;
}

static void *checked(void *fn) { return is_ours(fn) ? NULL : fn; }

/* ---- NCCL ---- */

static pthread_once_t nccl_once = PTHREAD_ONCE_INIT;
static int nccl_status = -1;
static char nccl_origin[600] = "";

static void *nccl_lookup(void *handle, const char *name)
{
    char alias[80];
    snprintf(alias, sizeof alias, "p%s", name);
    void *fn = NULL;
    if (handle) {
        fn = checked(dlsym(handle, alias));
        if (!fn)
            fn = checked(dlsym(handle, name));
    }
    if (!fn)
        fn = checked(dlsym(RTLD_NEXT, alias));
    if (!fn)
        fn = checked(dlsym(RTLD_NEXT, name));
    return fn;
}

static int nccl_resolve_guarded(void)
{
    const char *lib = ub_cfg.nccl_lib[0] ? ub_cfg.nccl_lib : "libnccl.so.2";
    void *handle = dlopen(lib, RTLD_NOLOAD | RTLD_LAZY);
    if (!handle && ub_cfg.nccl_lib[0]) {
        handle = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
        if (!handle)
            ub_error("USBYTE_NCCL_LIB=\"%s\" cannot be loaded (%s); trying the process's own NCCL", lib,
                     dlerror());
    }
    if (handle && ub_cfg.nccl_lib[0] && !checked(dlsym(handle, "pncclAllReduce")) &&
        is_ours(dlsym(handle, "ncclAllReduce"))) {
        ub_error("USBYTE_NCCL_LIB=\"%s\" is usbyte's own library, not NCCL; trying the process's own NCCL", lib);
        handle = NULL;
    }
    if (handle && ub_cfg.nccl_lib[0] && !dlsym(handle, "pncclAllReduce") && !dlsym(handle, "ncclAllReduce")) {
        ub_error("USBYTE_NCCL_LIB=\"%s\" is not NCCL (it defines no ncclAllReduce); trying the process's own NCCL",
                 lib);
        handle = NULL;
    }
    snprintf(nccl_origin, sizeof nccl_origin, "%s", handle ? lib : "RTLD_NEXT");
#define X(name, cls, params, args, hook) ub_nccl.name = (__typeof__(ub_nccl.name))nccl_lookup(handle, "nccl" #name);
    UB_NCCL_LIST(X)
#undef X
    /* The functions every communicator needs; the rest may be absent in older NCCLs. */
    nccl_status = (ub_nccl.AllReduce && ub_nccl.GroupStart && ub_nccl.GroupEnd) ? 0 : -1;
    if (nccl_status)
        ub_error("no real NCCL found (looked in %s and RTLD_NEXT): NCCL calls will fail", lib);
    else
        ub_debug("real NCCL functions from %s", nccl_origin);
    return nccl_status;
}

/* A library loaded here may call CUDA or NCCL from its constructors: not the application's calls. */
static void nccl_resolve_once(void) { UB_REAL(nccl_resolve_guarded()); }

int ub_nccl_resolve(void)
{
    pthread_once(&nccl_once, nccl_resolve_once);
    /* The NCCL hooks call the CUDA runtime (events, streams): a program whose first call through
     * usbyte is an NCCL one must find that table filled too. */
    if (!atomic_load_explicit(&ub_cuda_resolved, memory_order_acquire))
        ub_cuda_resolve();
    return nccl_status;
}

/* ---- CUDA runtime ---- */

static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;
static int cuda_status = -1;
atomic_bool ub_cuda_resolved;

static int find_cudart(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    const char *name = info->dlpi_name;
    const char *base = name ? strrchr(name, '/') : NULL;
    base = base ? base + 1 : name;
    if (base && strncmp(base, "libcudart.so", 12) == 0) {
        snprintf(data, 600, "%s", name);
        return 1;
    }
    return 0;
}

static void *cuda_lookup(void *handle, const char *name)
{
    void *fn = NULL;
    if (handle) {
        fn = checked(dlvsym(handle, name, cudart_node));
        if (!fn)
            fn = checked(dlsym(handle, name));
    }
    if (!fn)
        fn = checked(dlvsym(RTLD_NEXT, name, cudart_node));
    if (!fn)
        fn = checked(dlsym(RTLD_NEXT, name));
    return fn;
}

static int cuda_resolve_guarded(void)
{
    char path[600] = "";
    dl_iterate_phdr(find_cudart, path);
    void *handle = path[0] ? dlopen(path, RTLD_NOLOAD | RTLD_LAZY) : NULL;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    unsigned major;
    if (sscanf(base, "libcudart.so.%u", &major) == 1)
        snprintf(cudart_node, sizeof cudart_node, "libcudart.so.%u", major);
#define X(name, cls, params, args, hook) ub_cuda.name = (__typeof__(ub_cuda.name))cuda_lookup(handle, #name);
    UB_CUDA_LIST(X)
#undef X
    cuda_status = (ub_cuda.cudaEventRecord && ub_cuda.cudaStreamWaitEvent) ? 0 : -1;
    if (cuda_status)
        ub_error("no real CUDA runtime found (%s): CUDA calls through usbyte will fail",
                 path[0] ? path : "no libcudart.so.* loaded");
    else
        ub_debug("real CUDA runtime functions from %s (version node %s)", path[0] ? path : "RTLD_NEXT", cudart_node);
    return cuda_status;
}

static void cuda_resolve_once(void)
{
    UB_REAL(cuda_resolve_guarded());
    /* Publishes the table: a wrapper reads it only after seeing this (weakly ordered CPUs too). */
    atomic_store_explicit(&ub_cuda_resolved, true, memory_order_release);
}

int ub_cuda_resolve(void)
{
    pthread_once(&cuda_once, cuda_resolve_once);
    return cuda_status;
}

/* ---- CUDA driver ---- */

ub_cu_real ub_cu;
/* Taken alone or after the global lock; nothing else is taken while it is held (lock_contract.h). */
static ub_mutex cu_resolve_mutex UB_ACQUIRED_AFTER(ub_state_mutex) = UB_MUTEX_INITIALIZER;
static atomic_bool cu_found;

static void cu_resolve_guarded(void) UB_REQUIRES(cu_resolve_mutex)
{
    void *handle = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
    if (!handle)
        return;
#define X(name, cls, params, args, hook) ub_cu.name = (__typeof__(ub_cu.name))checked(dlsym(handle, #name));
    UB_CU_LIST(X)
#undef X
    dlclose(handle); /* the process holds its own reference */
    atomic_store_explicit(&cu_found, true, memory_order_release);
    ub_debug("real CUDA driver functions from libcuda.so.1");
}

bool ub_cu_resolve(void)
{
    if (atomic_load_explicit(&cu_found, memory_order_acquire))
        return true;
    ub_mutex_lock(&cu_resolve_mutex);
    if (!atomic_load_explicit(&cu_found, memory_order_relaxed))
        UB_REAL((cu_resolve_guarded(), 0));
    ub_mutex_unlock(&cu_resolve_mutex);
    return atomic_load_explicit(&cu_found, memory_order_acquire);
}
