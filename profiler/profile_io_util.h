/* What profile_io.c and plan_io.c share: the one-line error with its origin and the
 * descriptions of JSON values that messages quote.  Private to those two files (its name
 * matches the profile_io*.c glob that puts it into $(PLAN_LIB)). */
#ifndef USBYTE_PROFILE_IO_UTIL_H
#define USBYTE_PROFILE_IO_UTIL_H

#include <jansson.h>
#include <stddef.h>

/* Where an error goes and what it names first (usually the file). */
typedef struct ub_io_where {
    const char *origin;
    char *err;
    size_t errlen;
} ub_io_where;

/* Writes "origin: <message>" into w->err as one printable line (line breaks in echoed JSON
 * become spaces, other control bytes \xNN); returns -1 so callers can `return ub_io_fail(...)`. */
int ub_io_fail(const ub_io_where *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The type of a JSON value with its article: "an object", "a real number", ... */
const char *ub_json_kind(const json_t *v);

/* A short, printable description of a JSON value for "got ..." in messages: the value itself
 * for scalars (strings cut at 40 characters), the kind for arrays and objects.  Returned by
 * value so it can be used inline: ub_json_describe(v).text lives until the end of the call
 * it is passed to. */
typedef struct ub_json_desc {
    char text[64];
} ub_json_desc;
ub_json_desc ub_json_describe(const json_t *v);

#endif
