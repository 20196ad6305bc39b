/* facts: what a CUDA + NCCL program started by the kit finds on this machine, as one JSON object:
 * the libraries it loaded (libcudart, libcuda, libnccl, from /proc/self/maps), their versions, the
 * number of devices, and for device 0 the attributes usbyte relies on: stream priorities (its
 * private stream runs at the highest), mapped pinned host memory, 64-bit stream memory
 * operations, unified addressing, concurrent copies and kernels; and CUDA_DEVICE_MAX_CONNECTIONS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

static void json_str(const char *key, const char *v, int last)
{
    printf("  \"%s\": ", key);
    if (v == NULL) {
        printf("null");
    } else {
        putchar('"');
        for (const char *p = v; *p; p++) {
            if (*p == '"' || *p == '\\')
                printf("\\%c", *p);
            else if ((unsigned char)*p < 0x20)
                printf("\\u%04x", *p);
            else
                putchar(*p);
        }
        putchar('"');
    }
    printf("%s\n", last ? "" : ",");
}

/* The path of the first mapping whose file name starts with NAME (e.g. "libnccl.so"). */
static const char *loaded(const char *name, char *buf, size_t len)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (f == NULL)
        return NULL;
    char line[4096];
    const char *found = NULL;
    while (!found && fgets(line, sizeof line, f)) {
        char *path = strchr(line, '/');
        if (path == NULL)
            continue;
        path[strcspn(path, "\n")] = '\0';
        const char *base = strrchr(path, '/') + 1;
        if (strncmp(base, name, strlen(name)) == 0) {
            snprintf(buf, len, "%s", path);
            found = buf;
        }
    }
    fclose(f);
    return found;
}

int main(void)
{
    int count = 0, rt = 0, drv = 0, nccl = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    ncclGetVersion(&nccl);
    printf("{\n");
    json_str("cuda_error", e == cudaSuccess ? NULL : cudaGetErrorString(e), 0);
    printf("  \"devices\": %d,\n  \"runtime_version\": %d,\n  \"driver_version\": %d,\n  \"nccl_version\": %d,\n",
           count, rt, drv, nccl);
    json_str("CUDA_DEVICE_MAX_CONNECTIONS", getenv("CUDA_DEVICE_MAX_CONNECTIONS"), 0);
    if (e == cudaSuccess && count > 0 && cudaSetDevice(0) == cudaSuccess && cudaFree(NULL) == cudaSuccess) {
        CUdevice dev;
        char name[256] = "";
        if (cuCtxGetDevice(&dev) == CUDA_SUCCESS && cuDeviceGetName(name, sizeof name, dev) == CUDA_SUCCESS)
            json_str("device0", name, 0);
        static const struct {
            const char *name;
            CUdevice_attribute a;
        } attrs[] = {
            {"compute_capability_major", CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
            {"compute_capability_minor", CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
            {"multiprocessors", CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
            {"async_engines", CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT},
            {"concurrent_kernels", CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS},
            {"can_map_host_memory", CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY},
            {"unified_addressing", CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING},
            {"stream_mem_ops_64bit", CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS},
            {"stream_wait_value_nor", CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR},
            {"can_flush_remote_writes", CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES},
            {"host_register_supported", CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED},
            {"memory_pools_supported", CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED},
        };
        for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
            int v = -1;
            if (cuDeviceGetAttribute(&v, attrs[i].a, dev) != CUDA_SUCCESS)
                v = -1;
            printf("  \"%s\": %d,\n", attrs[i].name, v);
        }
        int lo = 0, hi = 0;
        if (cudaDeviceGetStreamPriorityRange(&lo, &hi) == cudaSuccess)
            printf("  \"stream_priority_least\": %d,\n  \"stream_priority_greatest\": %d,\n", lo, hi);
        size_t free_b = 0, total_b = 0;
        if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
            printf("  \"memory_total_bytes\": %zu,\n  \"memory_free_bytes\": %zu,\n", total_b, free_b);
    }
    char b1[4096], b2[4096], b3[4096];
    json_str("libcudart", loaded("libcudart.so", b1, sizeof b1), 0);
    json_str("libcuda", loaded("libcuda.so", b2, sizeof b2), 0);
    json_str("libnccl", loaded("libnccl.so", b3, sizeof b3), 1);
    printf("}\n");
    return e == cudaSuccess && count > 0 ? 0 : 1;
}
