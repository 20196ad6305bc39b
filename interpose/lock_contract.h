/* The runtime's mutexes and the contract of the functions that take, need or release them,
 * written so that clang's -Wthread-safety checks it (tests/locks/; docs/runtime.md, "Locks").
 * Under another compiler the annotations are empty.
 *
 * A function's declaration says what it does with a lock:
 *   UB_REQUIRES(m)  called with m held, returns with m held, never releases it;
 *   UB_REQUIRES_UNLOCKS(m)  held on entry and on return, released meanwhile (a wait, a real NCCL
 *                   call, planning), itself or by what it calls: what the caller read before
 *                   may have changed (tests/locks/releasing.py checks which it is);
 *   UB_ACQUIRE(m)   called without m, returns with it; UB_RELEASE(m) the other way round;
 *   UB_EXCLUDES(m)  called without m (it takes m itself, or calls what must not run under m).
 * Data marked UB_GUARDED_BY(m) is read and written only with m held.
 *
 * The order of the mutexes, each defined where its data is, and each after the first in its
 * declaration (UB_ACQUIRED_AFTER, which the analysis checks):
 *   1. ub_state_mutex (tables.c): the communicators, streams, events and all their records; never
 *      held across a real NCCL call (UB_NCCL's contract excludes it);
 *   2. the leaves, taken alone or with the global lock held, never one inside another and never
 *      with anything taken inside them: versions_mutex and io_mutex (report_rt.c: the versions
 *      learnt once, one report writer at a time), capture_mutex (capture.c: the streams under
 *      graph capture), cu_resolve_mutex (resolve.c: the driver's entry points, looked up once).
 * A thread never takes the global lock while it holds a leaf. */
#ifndef USBYTE_LOCK_CONTRACT_H
#define USBYTE_LOCK_CONTRACT_H

#include <pthread.h>

#if defined(__clang__)
#define UB_TSA(x) __attribute__((x))
#else
#define UB_TSA(x)
#endif

#define UB_CAPABILITY(name) UB_TSA(capability(name))
#define UB_GUARDED_BY(m) UB_TSA(guarded_by(m))
#define UB_REQUIRES(...) UB_TSA(requires_capability(__VA_ARGS__))
#define UB_REQUIRES_UNLOCKS(...) UB_TSA(requires_capability(__VA_ARGS__))
#define UB_ACQUIRE(...) UB_TSA(acquire_capability(__VA_ARGS__))
#define UB_RELEASE(...) UB_TSA(release_capability(__VA_ARGS__))
#define UB_TRY_ACQUIRE(...) UB_TSA(try_acquire_capability(__VA_ARGS__))
#define UB_EXCLUDES(...) UB_TSA(locks_excluded(__VA_ARGS__))
#define UB_ACQUIRED_AFTER(...) UB_TSA(acquired_after(__VA_ARGS__))
/* The mutexes' own wrappers (what the analysis trusts), and the report at exit, whose trylock
 * may find the lock held by a dead thread (lifecycle.c). */
#define UB_NO_LOCK_ANALYSIS UB_TSA(no_thread_safety_analysis)

/* A pthread mutex the analysis knows as a capability. */
typedef struct UB_CAPABILITY("mutex") ub_mutex {
    pthread_mutex_t m;
} ub_mutex;
#define UB_MUTEX_INITIALIZER {PTHREAD_MUTEX_INITIALIZER}

/* The global lock (tables.c), first in the order: named here for the annotations, taken only
 * through ub_state_lock and its kin (tables.h). */
extern ub_mutex ub_state_mutex;

static inline void ub_mutex_lock(ub_mutex *mu) UB_ACQUIRE(mu) UB_NO_LOCK_ANALYSIS;
static inline void ub_mutex_unlock(ub_mutex *mu) UB_RELEASE(mu) UB_NO_LOCK_ANALYSIS;
static inline void ub_mutex_lock(ub_mutex *mu) { pthread_mutex_lock(&mu->m); }
static inline void ub_mutex_unlock(ub_mutex *mu) { pthread_mutex_unlock(&mu->m); }

#endif
