/* For the emulator's unit tests of stream and event semantics: their choreographies (a stream
 * held by a gate while another runs on) need streams that do not share a hardware queue, as on
 * a GPU with a queue per stream.  Such a binary calls emu_test_own_queues() first thing in
 * main, before any CUDA call, so that it runs under the most queues CUDA allows whatever
 * CUDA_DEVICE_MAX_CONNECTIONS the suite runs under, and emu_test_queues_were_own() last, which
 * fails if the binary made so many streams that the round robin came round (two streams, or a
 * stream and the legacy stream, in one queue).  test_emu_queues tests the sharing itself. */
#ifndef USBYTE_EMU_TESTING_QUEUES_H
#define USBYTE_EMU_TESTING_QUEUES_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "../emu_internal.h"

static inline void emu_test_own_queues(void)
{
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 1);
}

/* Stream ids count every stream made, the legacy one included, and queue 0 is the legacy
 * stream's: the k-th other stream has id k + 1 and queue k mod 32, so queue == id - 1 for a
 * new stream as long as the round robin has not come round. */
static inline bool emu_test_queues_were_own(void)
{
    cudaStream_t s;
    unsigned long long id = 0;
    if (cudaStreamCreate(&s) != cudaSuccess || cudaStreamGetId(cudaStreamLegacy, &id) != cudaSuccess ||
        cudaStreamGetId(s, &id) != cudaSuccess) {
        fprintf(stderr, "emu_test_queues_were_own: cannot make a stream\n");
        return false;
    }
    int q = usbyteEmuStreamQueue(s);
    cudaStreamDestroy(s);
    if (usbyteEmuQueueCount() != 32 || q != (int)(id - 1)) {
        fprintf(stderr, "this test binary made %llu streams: more than 32 hardware queues (stream %llu is in queue %d)\n",
                id, id, q);
        return false;
    }
    return true;
}

#endif
