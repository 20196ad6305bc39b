/* Resolution of the driver's stream memory operations (see driver.h).  The versioned _v2 names
 * are the ones cuda.h maps cuStreamWaitValue64/cuStreamWriteValue64 to since CUDA 11.7; the plain
 * names are the older ABI with the same signature. */
#include <dlfcn.h>
#include <pthread.h>

#include "driver.h"
#include "runtime.h"

ub_driver_real ub_driver;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static int driver_status = -1;

static void *lookup(void *handle, const char *v2, const char *plain)
{
    void *fn = dlsym(handle, v2);
    return fn ? fn : dlsym(handle, plain);
}

static void driver_resolve_once(void)
{
    ub_inside++;
    void *handle = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
    if (!handle)
        handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (handle) {
        ub_driver.wait_value64 = (ub_cu_mem_op_fn)lookup(handle, "cuStreamWaitValue64_v2", "cuStreamWaitValue64");
        ub_driver.write_value64 = (ub_cu_mem_op_fn)lookup(handle, "cuStreamWriteValue64_v2", "cuStreamWriteValue64");
    }
    driver_status = ub_driver.wait_value64 && ub_driver.write_value64 ? 0 : -1;
    if (driver_status)
        ub_warn("the driver's stream memory operations (cuStreamWaitValue64, cuStreamWriteValue64 in "
                "libcuda.so.1) are not available%s: schedule mode cannot redirect completion",
                handle ? "" : " (libcuda.so.1 cannot be loaded)");
    ub_inside--;
}

int ub_driver_resolve(void)
{
    pthread_once(&driver_once, driver_resolve_once);
    return driver_status;
}
