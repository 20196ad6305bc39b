/* Error lines and JSON value descriptions shared by the profile and plan readers. */
#include "profile_io_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int ub_io_fail(const ub_io_where *w, const char *fmt, ...)
{
    if (!w->err || w->errlen == 0)
        return -1;
    int n = snprintf(w->err, w->errlen, "%s: ", w->origin);
    if (n < 0 || (size_t)n >= w->errlen)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err + n, w->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    /* One line, whatever the JSON held (names are echoed in messages). */
    for (char *p = w->err; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return -1;
}

const char *ub_json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

ub_json_desc ub_json_describe(const json_t *v)
{
    ub_json_desc d;
    switch (json_typeof(v)) {
    case JSON_INTEGER:
        snprintf(d.text, sizeof(d.text), "%lld", (long long)json_integer_value(v));
        break;
    case JSON_REAL:
        snprintf(d.text, sizeof(d.text), "%.17g", json_real_value(v));
        break;
    case JSON_STRING:
        snprintf(d.text, sizeof(d.text), "\"%.40s%s\"", json_string_value(v),
                 strlen(json_string_value(v)) > 40 ? "..." : "");
        break;
    case JSON_TRUE:
    case JSON_FALSE:
        snprintf(d.text, sizeof(d.text), "%s", json_is_true(v) ? "true" : "false");
        break;
    default: /* arrays, objects and null read the same either way */
        snprintf(d.text, sizeof(d.text), "%s", ub_json_kind(v));
    }
    return d;
}
