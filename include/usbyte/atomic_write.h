/* Writing an output file (report, plan, SVG, HTML) so that a reader never sees a partial one
 * and a hostile or careless path cannot redirect or destroy anything.
 *
 * ub_write_file_atomic(path, data, len, err, errlen) writes the len bytes to a new temporary in
 * path's directory, named "PATH.<pid>.<16 hex random>.partial" and created with
 * O_CREAT | O_EXCL | O_NOFOLLOW (so a symbolic link planted at any name is never followed, and
 * two writers never share a temporary), fsyncs it, and renames it to path.  It refuses, before
 * writing anything, a path that exists and is not a regular file (a symbolic link, a directory,
 * a device such as /dev/null, a FIFO): only a regular file or a missing path is replaced.
 * Several processes writing the same path each leave it holding one whole file (the last
 * rename wins).  Returns 0, or -1 with one line in err naming the path and the reason; the
 * temporary is removed on every failure.  Never allocates; safe in exit handlers.  A text
 * built with stdio goes through open_memstream first. */
#ifndef USBYTE_ATOMIC_WRITE_H
#define USBYTE_ATOMIC_WRITE_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

int ub_write_file_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen);

/* The same for a JSON document formatted with jansson's flags (json_dumps), e.g.
 * JSON_COMPACT | JSON_REAL_PRECISION(17): what ub_plan_save, ub_profile_save and the tools'
 * JSON outputs need.  This one allocates (the formatted text). */
int ub_write_json_atomic(const char *path, const json_t *doc, size_t flags, char *err, size_t errlen);

/* A text built with stdio in memory, then written as ub_write_file_atomic does:
 * ub_memtext_open gives the stream (NULL with the reason in err); ub_memtext_write closes it,
 * writes the text to path unless `failed` (the builder saw an error), and frees it. */
typedef struct ub_memtext {
    FILE *f;
    char *text;
    size_t len;
} ub_memtext;
FILE *ub_memtext_open(ub_memtext *t, const char *path, char *err, size_t errlen);
int ub_memtext_write(ub_memtext *t, const char *path, int failed, char *err, size_t errlen);

#endif
