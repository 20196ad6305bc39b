/* Interference between communication and compute (USBYTE_EMU_INTERFERENCE=F, 0..1, default 0).
 *
 * On a GPU, NCCL's kernels take SMs and memory bandwidth from the compute kernels that run beside
 * them.  The emulator models it per device: the NCCL stand-in marks the time each of its
 * operations occupies a device (usbyteEmuDeviceCommBegin/End, from the rank's arrival to the
 * release of the stream), and every compute op of that device (an emulated kernel, a host
 * function, a graph's kernel and host nodes) is held F times the time such an operation ran
 * beside it, after its function returns: work that took d with o of it overlapped takes
 * d + F*o (small additions are slept together, below, so that the OS's sleep granularity does
 * not inflate them).  The added time is not itself stretched; copies, memsets and event work are
 * not compute and are never stretched.
 *
 * The overlap is exact, from a per-device "communication clock": the total time during which at
 * least one NCCL operation occupied the device.  A compute op reads it when its function starts
 * and when it returns; the difference is the time it was overlapped, however many collectives
 * began and ended in between.
 *
 * usbyteEmuComputeStretchNs() tells compute that models its own timing (a framework-shaped
 * trainer whose layers sleep to deadlines from the backward's start) how much this stream has
 * been held so far: each worker thread runs one stream, so the total is the worker's.  Such a
 * trainer moves its deadlines by it, so that a slowed layer delays every later one, as a slowed
 * kernel does on a GPU, while its own wake-up lateness still does not accumulate. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "device.h"
#include "export.h"
#include "interference.h"

struct comm_clock {
    pthread_mutex_t mu;
    int active;            /* NCCL operations occupying the device now */
    uint64_t busy_ns;      /* time with active > 0, up to since_ns */
    uint64_t since_ns;     /* when active last became > 0 */
    uint64_t read_ns;      /* the latest value read: the clock never goes back below it */
};

static struct comm_clock clocks[EMU_MAX_DEVICES];
static pthread_once_t factor_once = PTHREAD_ONCE_INIT;
static double factor;

static void read_factor(void)
{
    for (int d = 0; d < EMU_MAX_DEVICES; d++)
        pthread_mutex_init(&clocks[d].mu, NULL);
    const char *s = getenv("USBYTE_EMU_INTERFERENCE");
    if (s == NULL || *s == '\0')
        return;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !(v >= 0.0 && v <= 1.0)) {
        fprintf(stderr, "usbyte-emu: warning: USBYTE_EMU_INTERFERENCE='%s' is not a number in [0, 1]; using the "
                "default 0\n", s);
        return;
    }
    factor = v;
}

double emu_interference(void)
{
    pthread_once(&factor_once, read_factor);
    return factor;
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static struct comm_clock *clock_of(int device)
{
    return device >= 0 && device < EMU_MAX_DEVICES ? &clocks[device] : NULL;
}

static uint64_t busy_at(const struct comm_clock *c, uint64_t now)
{
    return c->busy_ns + (c->active > 0 && now > c->since_ns ? now - c->since_ns : 0);
}

EMU_EXPORT void usbyteEmuDeviceCommBegin(int device)
{
    struct comm_clock *c = clock_of(device);
    if (emu_interference() == 0.0 || c == NULL)
        return;
    pthread_mutex_lock(&c->mu);
    if (c->active++ == 0)
        c->since_ns = now_ns();
    pthread_mutex_unlock(&c->mu);
}

EMU_EXPORT void usbyteEmuDeviceCommEnd(int device, uint64_t end_ns)
{
    struct comm_clock *c = clock_of(device);
    if (emu_interference() == 0.0 || c == NULL)
        return;
    pthread_mutex_lock(&c->mu);
    if (c->active > 0 && --c->active == 0) {
        /* The stream's release (end_ns) can be earlier than now: a read between the two counted
         * up to the read, and the clock must not go back (a compute op would see a negative
         * overlap, an unsigned one that sleeps for ever). */
        uint64_t end = end_ns != 0 ? end_ns : now_ns();
        c->busy_ns += end > c->since_ns ? end - c->since_ns : 0;
        if (c->busy_ns < c->read_ns)
            c->busy_ns = c->read_ns;
    }
    pthread_mutex_unlock(&c->mu);
}

static uint64_t comm_clock_read(int device)
{
    struct comm_clock *c = clock_of(device);
    pthread_mutex_lock(&c->mu);
    uint64_t t = busy_at(c, now_ns());
    if (t < c->read_ns)
        t = c->read_ns;
    c->read_ns = t;
    pthread_mutex_unlock(&c->mu);
    return t;
}

/* The time added after compute ops on this thread (a stream's worker), in total. */
static __thread uint64_t tl_stretch_ns;

/* Added time not yet slept (negative: slept beyond it).  A sleep overshoots its target by the
 * OS's timer slack and wake-up (~50 us here); a layer of 10 us beside a collective owes 2 us at
 * F = 0.2, so sleeping each op's extra alone would add the overshoot instead, several times what F
 * says, to every small op.  The extra is slept once at least EMU_STRETCH_SLEEP_MIN_NS are owed, and what a
 * sleep took beyond the debt is taken off the next: the total added is F times the overlap. */
#define EMU_STRETCH_SLEEP_MIN_NS 200000
static __thread int64_t tl_debt_ns;

EMU_EXPORT uint64_t usbyteEmuComputeStretchNs(void) { return tl_stretch_ns; }

void emu_compute_run(int device, void (*fn)(void *), void *arg)
{
    double f = emu_interference();
    if (f == 0.0 || clock_of(device) == NULL) {
        fn(arg);
        return;
    }
    uint64_t before = comm_clock_read(device);
    fn(arg);
    uint64_t overlapped = comm_clock_read(device) - before;
    uint64_t extra = (uint64_t)llround(f * (double)overlapped);
    if (extra == 0)
        return;
    tl_stretch_ns += extra;
    tl_debt_ns += (int64_t)extra;
    if (tl_debt_ns < EMU_STRETCH_SLEEP_MIN_NS)
        return;
    uint64_t from = now_ns(), to = from + (uint64_t)tl_debt_ns;
    struct timespec until = {(time_t)(to / 1000000000ull), (long)(to % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR) {
    }
    tl_debt_ns -= (int64_t)(now_ns() - from);
}
