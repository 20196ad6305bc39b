/* Allocation that aborts with one line on failure (usbyte/alloc.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "usbyte/alloc.h"

/* q, the result of an allocation; when it failed, one line and abort. */
static void *checked(void *q, const char *what, va_list ap)
{
    if (!q) {
        fputs("usbyte: out of memory ", stderr);
        vfprintf(stderr, what, ap);
        fputc('\n', stderr);
        abort();
    }
    return q;
}

void *ub_xrealloc(void *p, size_t bytes, const char *what, ...)
{
    va_list ap;
    va_start(ap, what);
    void *q = checked(realloc(p, bytes ? bytes : 1), what, ap);
    va_end(ap);
    return q;
}

void *ub_xcalloc(size_t n, size_t size, const char *what, ...)
{
    va_list ap;
    va_start(ap, what);
    void *q = checked(calloc(n ? n : 1, size ? size : 1), what, ap);
    va_end(ap);
    return q;
}

uint32_t ub_grown_cap(uint32_t cap, uint32_t need, uint32_t first)
{
    if (need <= cap)
        return cap;
    uint32_t c = cap ? cap : first;
    while (c < need)
        c *= 2;
    return c;
}
