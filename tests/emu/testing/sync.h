/* Gates and latches for the emulator's unit tests: host functions enqueued on streams block on
 * gates the test opens, and signal latches the test waits for, so no test ever sleeps "long
 * enough".  A latch wait gives up after a generous deadline so that a broken emulator fails
 * the test instead of hanging it. */
#ifndef USBYTE_EMU_TESTING_SYNC_H
#define USBYTE_EMU_TESTING_SYNC_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#define EMU_TEST_DEADLINE_S 20

struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool open;
};

#define GATE_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false}

static inline void gate_open(struct gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Waits until g is open; false if the deadline passed first. */
static inline bool gate_wait(struct gate *g)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += EMU_TEST_DEADLINE_S;
    pthread_mutex_lock(&g->mu);
    int rc = 0;
    while (!g->open && rc == 0)
        rc = pthread_cond_timedwait(&g->cv, &g->mu, &deadline);
    bool open = g->open;
    pthread_mutex_unlock(&g->mu);
    return open;
}

static inline bool gate_is_open(struct gate *g)
{
    pthread_mutex_lock(&g->mu);
    bool open = g->open;
    pthread_mutex_unlock(&g->mu);
    return open;
}

/* A host function (cudaHostFn_t) that blocks its stream until the gate opens. */
static inline void gate_host_fn(void *g)
{
    gate_wait(g);
}

/* A host function that opens the gate (a latch signalled by the stream). */
static inline void gate_open_fn(void *g)
{
    gate_open(g);
}

#endif
