/* Whether the process is exiting.  From the moment the library's destructor stops the stream
 * workers (stream.c), no op begins any more and every runtime call that would run or wait for
 * work answers cudaErrorCudartUnloading, as the real runtime does after its teardown. */
#include <stdatomic.h>
#include <stdbool.h>

#include "unloading.h"

static atomic_bool unloading;

bool emu_unloading(void)
{
    return atomic_load_explicit(&unloading, memory_order_relaxed);
}

void emu_unloading_begin(void)
{
    atomic_store(&unloading, true);
}
