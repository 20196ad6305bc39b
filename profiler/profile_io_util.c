/* Error lines and JSON value descriptions shared by the profile and plan readers. */
#include "profile_io_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int ub_io_fail(const ub_io_where *w, const char *fmt, ...)
{
    if (!w->err || w->errlen == 0)
        return -1;
    char msg[2048];
    int n = snprintf(msg, sizeof msg, "%s: ", w->origin);
    if (n < 0)
        return -1;
    if ((size_t)n < sizeof msg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
        va_end(ap);
    }
    /* One printable line, whatever the JSON held (names and the parser's "near '...'" are
     * echoed): a line break becomes a space, any other control byte \xNN, which a terminal
     * or a line reader would otherwise act on. */
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)msg; *p && o + 1 < w->errlen; p++) {
        if (*p == '\n' || *p == '\r') {
            w->err[o++] = ' ';
        } else if ((*p < 0x20 && *p != '\t') || *p == 0x7f) {
            if (o + 5 > w->errlen)
                break;
            snprintf(w->err + o, 5, "\\x%02x", *p);
            o += 4;
        } else {
            w->err[o++] = (char)*p;
        }
    }
    w->err[o] = '\0';
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
