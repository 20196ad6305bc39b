/* Text for the hang dump and the queue diagnostics, formatted into a caller's buffer and
 * written with write(2): no allocation, no stdio and no lock, so that it may run in a signal
 * handler. */
#include <errno.h>
#include <unistd.h>

#include "dump_text.h"

size_t emu_put_str(char *buf, size_t at, size_t cap, const char *s)
{
    while (*s && at + 1 < cap)
        buf[at++] = *s++;
    return at;
}

static size_t put_digits(char *buf, size_t at, size_t cap, unsigned long long v, unsigned base)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v);
    while (n && at + 1 < cap)
        buf[at++] = tmp[--n];
    return at;
}

size_t emu_put_u64(char *buf, size_t at, size_t cap, unsigned long long v)
{
    return put_digits(buf, at, cap, v, 10);
}

size_t emu_put_hex(char *buf, size_t at, size_t cap, unsigned long long v)
{
    at = emu_put_str(buf, at, cap, "0x");
    return put_digits(buf, at, cap, v, 16);
}

void emu_write_all(int fd, const char *buf, size_t n)
{
    for (size_t off = 0; off < n;) {
        ssize_t w = write(fd, buf + off, n - off);
        if (w <= 0 && errno != EINTR)
            break;
        if (w > 0)
            off += (size_t)w;
    }
}
