/* ub_write_file_atomic (usbyte/atomic_write.h).  Named profile_io_* so that the Makefile puts it
 * in libusbyte_plan.a, which the runtime, usbyte-sim and the other tools all link. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "usbyte/atomic_write.h"

/* Writers of one path that collide on a name (only with a broken random source) try again. */
#define UB_TEMP_ATTEMPTS 16

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *kind_name(mode_t m)
{
    return S_ISLNK(m) ? "a symbolic link" : S_ISDIR(m) ? "a directory" : S_ISCHR(m) ? "a character device"
         : S_ISBLK(m) ? "a block device" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket"
                      : "not a plain file";
}

/* 0 when path is missing or a regular file (lstat: a symbolic link is refused, not followed:
 * rename would replace the link, surprising whoever made it, and a link planted by someone
 * else is an attack). */
static int check_target(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        return fail(err, errlen, "%s: cannot examine the existing file (%s)", path, strerror(errno));
    }
    if (S_ISREG(st.st_mode))
        return 0;
    return fail(err, errlen, "%s: exists and is %s, not a regular file: left as it is", path, kind_name(st.st_mode));
}

static uint64_t random_part(unsigned attempt)
{
    uint64_t r;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r)
        return r;
    /* No entropy now (early boot, a seccomp filter): the clock and the attempt still differ
     * between writers, and O_EXCL turns any collision into another attempt. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ((uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)attempt << 56);
}

/* Makes the rename itself durable; a failure here loses nothing that was written. */
static void sync_directory(const char *path)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int ub_write_file_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
    if (path == NULL || path[0] == '\0')
        return fail(err, errlen, "(empty path): no file to write");
    if (check_target(path, err, errlen) != 0)
        return -1;
    /* The temporary extends the target's name, so it is in the same directory (rename never
     * crosses a file system) and says whose it is. */
    char tmp[PATH_MAX + 64];
    if (strlen(path) >= PATH_MAX)
        return fail(err, errlen, "%.80s...: path too long", path);
    int fd = -1;
    for (unsigned attempt = 0; attempt < UB_TEMP_ATTEMPTS && fd < 0; attempt++) {
        snprintf(tmp, sizeof tmp, "%s.%ld.%016llx.partial", path, (long)getpid(),
                 (unsigned long long)random_part(attempt));
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0666);
        if (fd < 0 && errno != EEXIST)
            return fail(err, errlen, "%s: cannot create the temporary %s (%s)", path, tmp, strerror(errno));
    }
    if (fd < 0)
        return fail(err, errlen, "%s: cannot create a temporary next to it (%d names taken)", path, UB_TEMP_ATTEMPTS);
    const char *what = NULL;
    if (write_all(fd, data, len) != 0)
        what = "write";
    else if (fsync(fd) != 0)
        what = "fsync";
    int saved = errno;
    if (close(fd) != 0 && what == NULL) {
        what = "close";
        saved = errno;
    }
    if (what != NULL) {
        unlink(tmp);
        return fail(err, errlen, "%s: %s of the temporary %s failed (%s)", path, what, tmp, strerror(saved));
    }
    /* Again just before the rename, which would replace whatever is there by then (there is no
     * "replace only a regular file" rename; this narrows the window to the two calls). */
    if (check_target(path, err, errlen) != 0) {
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        saved = errno;
        unlink(tmp);
        return fail(err, errlen, "%s: cannot rename the temporary %s to it (%s)", path, tmp, strerror(saved));
    }
    sync_directory(path);
    return 0;
}

int ub_write_json_atomic(const char *path, const json_t *doc, size_t flags, char *err, size_t errlen)
{
    char *text = doc ? json_dumps(doc, flags) : NULL;
    if (text == NULL)
        return fail(err, errlen, "%s: out of memory formatting the JSON", path ? path : "(no path)");
    int rc = ub_write_file_atomic(path, text, strlen(text), err, errlen);
    free(text);
    return rc;
}

FILE *ub_memtext_open(ub_memtext *t, const char *path, char *err, size_t errlen)
{
    t->text = NULL;
    t->len = 0;
    t->f = open_memstream(&t->text, &t->len);
    if (!t->f)
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    return t->f;
}

int ub_memtext_write(ub_memtext *t, const char *path, int failed, char *err, size_t errlen)
{
    int closed = fclose(t->f);
    int rc = -1;
    if (closed != 0 || failed || !t->text)
        snprintf(err, errlen, "%s: cannot write: out of memory", path);
    else
        rc = ub_write_file_atomic(path, t->text, t->len, err, errlen);
    free(t->text);
    t->text = NULL;
    t->f = NULL;
    return rc;
}
