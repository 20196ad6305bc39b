/* Finding libcupti as the process has it (docs/runtime.md, "CUPTI").  A framework brings its own
 * CUPTI beside its CUDA runtime (PyTorch's CUDA 12 wheels: site-packages/nvidia/cuda_cupti/lib
 * beside nvidia/cuda_runtime/lib; CUDA 13 wheels: both in nvidia/cu13/lib; conda and toolkits:
 * the same lib directory, or extras/CUPTI/lib64), usually not on the search path; a profiler may
 * have loaded one already.  A CUPTI of another installation than the runtime's would not match
 * it, and a second copy in the process would compete with the first for the one subscription. */
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cupti.h"

struct found {
    const char *prefix;
    char path[PATH_MAX];
};

static int find_loaded(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct found *f = data;
    const char *name = info->dlpi_name;
    if (!name || !*name)
        return 0;
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (strncmp(base, f->prefix, strlen(f->prefix)) != 0)
        return 0;
    snprintf(f->path, sizeof f->path, "%s", name);
    return 1;
}

/* The path of the first loaded object whose file name starts with prefix ("" when none). */
static const char *loaded_path(const char *prefix, struct found *f)
{
    f->prefix = prefix;
    f->path[0] = '\0';
    dl_iterate_phdr(find_loaded, f);
    return f->path;
}

void *ub_cupti_loaded(void)
{
    struct found f;
    const char *path = loaded_path("libcupti.so", &f);
    return *path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
}

/* A candidate is usable when it loads and has the functions the watcher calls. */
static void *try_open(const char *path, int flags, char *why, size_t why_len)
{
    void *h = dlopen(path, flags);
    if (!h) {
        if (why && !*why)
            snprintf(why, why_len, "%s", dlerror());
        return NULL;
    }
    if (!dlsym(h, "cuptiSubscribe") || !dlsym(h, "cuptiUnsubscribe") || !dlsym(h, "cuptiEnableCallback")) {
        if (why && !*why)
            snprintf(why, why_len, "%s lacks cuptiSubscribe, cuptiUnsubscribe or cuptiEnableCallback", path);
        dlclose(h);
        return NULL;
    }
    return h;
}

/* The names tried: the loaded runtime's major version first. */
static void names_for(unsigned major, const char *names[3])
{
    bool twelve = major == 12;
    names[0] = twelve ? "libcupti.so.12" : "libcupti.so.13";
    names[1] = twelve ? "libcupti.so.13" : "libcupti.so.12";
    names[2] = "libcupti.so";
}

/* Directories where a CUDA runtime's own CUPTI lives, relative to the runtime's directory. */
static const char *const beside[] = {
    ".",                          /* conda, toolkits (lib64), CUDA 13 wheels (nvidia/cu13/lib) */
    "../../cuda_cupti/lib",       /* CUDA 12 wheels: nvidia/cuda_runtime/lib -> nvidia/cuda_cupti/lib */
    "../extras/CUPTI/lib64",      /* toolkits: lib64 -> extras/CUPTI/lib64 */
    "../../../extras/CUPTI/lib64" /* toolkits, runtime seen as targets/<arch>/lib */
};

void *ub_cupti_open(char *origin, size_t origin_len, char *why, size_t why_len)
{
    struct found f;
    why[0] = '\0';
    const char *path = loaded_path("libcupti.so", &f);
    void *h;
    if (*path && (h = try_open(path, RTLD_NOW | RTLD_NOLOAD, why, why_len))) {
        snprintf(origin, origin_len, "%s (already loaded in the process)", path);
        return h;
    }
    struct found rt;
    const char *cudart = loaded_path("libcudart.so", &rt);
    unsigned major = 0;
    const char *slash = strrchr(cudart, '/');
    sscanf(slash ? slash + 1 : cudart, "libcudart.so.%u", &major);
    const char *names[3];
    names_for(major, names);
    if (slash) {
        char dir[PATH_MAX], candidate[PATH_MAX];
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - cudart), cudart);
        for (size_t d = 0; d < sizeof beside / sizeof beside[0]; d++)
            for (int n = 0; n < 3; n++) {
                bool same = !strcmp(beside[d], ".");
                if (snprintf(candidate, sizeof candidate, "%s/%s%s%s", dir, same ? "" : beside[d], same ? "" : "/",
                             names[n]) >= (int)sizeof candidate ||
                    access(candidate, F_OK) != 0)
                    continue;
                if ((h = try_open(candidate, RTLD_NOW | RTLD_LOCAL, why, why_len))) {
                    snprintf(origin, origin_len, "%s (next to the CUDA runtime %s)", candidate, cudart);
                    return h;
                }
            }
    }
    for (int n = 0; n < 3; n++)
        if ((h = try_open(names[n], RTLD_NOW | RTLD_LOCAL, why, why_len))) {
            struct link_map *lm = NULL;
            dlinfo(h, RTLD_DI_LINKMAP, &lm);
            snprintf(origin, origin_len, "%s (%s through the library search path)", lm && lm->l_name ? lm->l_name : names[n],
                     names[n]);
            return h;
        }
    if (!*why)
        snprintf(why, why_len, "no libcupti.so.13, .12 or libcupti.so loaded, beside the CUDA runtime or on the "
                               "library search path");
    return NULL;
}
