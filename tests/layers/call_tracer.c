/* The entries and exits of the runtime's functions, for tests/layers/way.py: linked into a
 * libusbyte.so whose interpose/ objects are built with -finstrument-functions (`make
 * TRACE_CALLS=1`, its own BUILD), never into the library a job runs.  Each event is the
 * function's offset in the library, the thread and whether it enters or leaves; at exit the
 * events go to $USBYTE_TRACE_CALLS.<pid> (nothing is written without it).  This file itself is
 * not instrumented (the hooks would call themselves). */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define NOT_TRACED __attribute__((no_instrument_function))

/* 8 Mi events of 16 bytes: the library's bss, touched only as far as a run fills it. */
enum { TRACE_CAPACITY = 8 << 20 };

typedef struct {
    uint64_t offset; /* the function's address less the library's base */
    uint32_t thread; /* 1, 2, ... in the order the threads first entered a function */
    uint32_t enter;  /* 1: entry, 0: exit */
} trace_event;

static trace_event events[TRACE_CAPACITY];
static atomic_uint_fast64_t n_events;
static atomic_uint threads;
static _Thread_local uint32_t thread_id;
static _Atomic uintptr_t base; /* the library's, found at the first event (by every thread that races there) */

/* Relaxed atomic stores: threads still running at exit may write while the events are written
 * out (what they add then is not read). */
static NOT_TRACED void note(void *fn, uint32_t enter)
{
    uintptr_t b = atomic_load_explicit(&base, memory_order_relaxed);
    if (!b) {
        Dl_info info;
        if (dladdr((void *)&note, &info) && info.dli_fbase)
            atomic_store_explicit(&base, b = (uintptr_t)info.dli_fbase, memory_order_relaxed);
    }
    if (!thread_id)
        thread_id = atomic_fetch_add(&threads, 1) + 1;
    uint_fast64_t i = atomic_fetch_add_explicit(&n_events, 1, memory_order_relaxed);
    if (i < TRACE_CAPACITY) {
        __atomic_store_n(&events[i].offset, (uint64_t)((uintptr_t)fn - b), __ATOMIC_RELAXED);
        __atomic_store_n(&events[i].thread, thread_id, __ATOMIC_RELAXED);
        __atomic_store_n(&events[i].enter, enter, __ATOMIC_RELAXED);
    }
}

NOT_TRACED void __cyg_profile_func_enter(void *fn, void *site)
{
    (void)site;
    note(fn, 1);
}

NOT_TRACED void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)site;
    note(fn, 0);
}

/* A run that filled the buffer is written as far as it got, with the count of events lost first:
 * way.py refuses it. */
static NOT_TRACED __attribute__((destructor)) void write_events(void)
{
    const char *stem = getenv("USBYTE_TRACE_CALLS");
    if (!stem || !*stem)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s.%ld", stem, (long)getpid());
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    uint64_t n = atomic_load(&n_events);
    uint64_t kept = n < TRACE_CAPACITY ? n : TRACE_CAPACITY;
    uint64_t lost = n - kept;
    fwrite(&lost, sizeof lost, 1, f);
    trace_event chunk[4096];
    for (uint64_t i = 0; i < kept; i += sizeof chunk / sizeof chunk[0]) {
        uint64_t m = kept - i < sizeof chunk / sizeof chunk[0] ? kept - i : sizeof chunk / sizeof chunk[0];
        for (uint64_t j = 0; j < m; j++)
            chunk[j] = (trace_event){__atomic_load_n(&events[i + j].offset, __ATOMIC_RELAXED),
                                     __atomic_load_n(&events[i + j].thread, __ATOMIC_RELAXED),
                                     __atomic_load_n(&events[i + j].enter, __ATOMIC_RELAXED)};
        fwrite(chunk, sizeof chunk[0], m, f);
    }
    fclose(f);
}
