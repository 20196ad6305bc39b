/* Seconds on CLOCK_MONOTONIC: what every elapsed-time measure and every wait's deadline reads
 * (the wall clock may step back or forward under NTP). */
#ifndef USBYTE_CLOCK_H
#define USBYTE_CLOCK_H

#include <time.h>

static inline double ub_monotonic_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif
