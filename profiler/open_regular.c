/* The one rule for opening an input file (see usbyte/open_regular.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "usbyte/open_regular.h"

int ub_open_regular(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (err && errlen)
            snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    struct stat st = {0};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int e = errno;
        close(fd);
        const char *why = S_ISDIR(st.st_mode)   ? strerror(EISDIR)
                          : S_ISREG(st.st_mode) ? strerror(e)
                                                : "not a regular file (a FIFO, a socket or a device)";
        if (err && errlen)
            snprintf(err, errlen, "%s: cannot read: %s", path, why);
        return -1;
    }
    return fd;
}
