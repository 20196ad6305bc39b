/* Strict parsing of the USBYTE_ variables (see usbyte/config.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "usbyte/config.h"
#include "usbyte/policy.h"

_Static_assert(UB_CFG_COUNT <= 32, "ub_config.source is too small for UB_CONFIG_LIST");

static const char *const mode_names[] = {"off", "observe", "schedule"};
static const char *const log_names[] = {"error", "warn", "info", "debug"};
static const char *const completion_names[] = {"stream", "call"};

const char *ub_mode_name(ub_mode m) { return (unsigned)m < 3 ? mode_names[m] : "?"; }
const char *ub_log_level_name(ub_log_level l) { return (unsigned)l < 4 ? log_names[l] : "?"; }
const char *ub_completion_name(ub_completion c) { return (unsigned)c < 2 ? completion_names[c] : "?"; }

const char *ub_config_name(ub_config_id id)
{
    static const char *const names[] = {
#define X(field, name, kind, def, help) "USBYTE_" name,
        UB_CONFIG_LIST(X)
#undef X
    };
    return (unsigned)id < UB_CFG_COUNT ? names[id] : "?";
}

const char *ub_config_source_name(ub_config_source src)
{
    switch (src) {
    case UB_SRC_ENV: return "env";
    case UB_SRC_FALLBACK: return "bad value ignored";
    default: return "default";
    }
}

static int parse_choice(const char *text, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(text, names[i]) == 0)
            return i;
    return -1;
}

/* Each parser returns 0 and stores the value, or -1 leaving the field untouched. */
static int parse_MODE(const char *t, ub_mode *out)
{
    int v = parse_choice(t, mode_names, 3);
    if (v < 0) return -1;
    *out = (ub_mode)v;
    return 0;
}

static int parse_LOG(const char *t, ub_log_level *out)
{
    int v = parse_choice(t, log_names, 4);
    if (v < 0) return -1;
    *out = (ub_log_level)v;
    return 0;
}

static int parse_COMPLETION(const char *t, ub_completion *out)
{
    int v = parse_choice(t, completion_names, 2);
    if (v < 0) return -1;
    *out = (ub_completion)v;
    return 0;
}

static int parse_POLICY(const char *t, int *out)
{
    int v = ub_policy_parse(t);
    if (v < 0) return -1;
    *out = v;
    return 0;
}

/* A plain decimal integer in [lo, hi] (no sign, no blanks, no trailing text). */
static int parse_int_range(const char *t, long lo, long hi, int *out)
{
    const char *digits = lo < 0 && *t == '-' ? t + 1 : t; /* no '+', spaces or empty text */
    if (*digits < '0' || *digits > '9')
        return -1;
    char *end;
    errno = 0;
    long v = strtol(t, &end, 10);
    if (errno || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_WARMUP(const char *t, int *out) { return parse_int_range(t, 1, 1000, out); }
static int parse_STAGING(const char *t, int *out) { return parse_int_range(t, 0, 65536, out); }
static int parse_SECONDS(const char *t, int *out) { return parse_int_range(t, 1, 86400, out); }
static int parse_COUNT(const char *t, int *out) { return parse_int_range(t, 0, 1000000, out); }
/* Negative: a plan predicted slower than wfbp runs too (experiments, tests of a given policy). */
static int parse_PERCENT(const char *t, int *out) { return parse_int_range(t, -100, 100000, out); }
static int parse_ALIGN(const char *t, int *out)
{
    int v;
    if (parse_int_range(t, 1, 1 << 20, &v) != 0 || (v & (v - 1)) != 0)
        return -1;
    *out = v;
    return 0;
}

static int parse_BOOL(const char *t, bool *out)
{
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(t, yes[i]) == 0) { *out = true; return 0; }
        if (strcasecmp(t, no[i]) == 0) { *out = false; return 0; }
    }
    return -1;
}

static int copy_text(const char *t, char *out, size_t len)
{
    size_t n = strlen(t);
    if (n >= len)
        return -1;
    memcpy(out, t, n + 1);
    return 0;
}

static int parse_PATTERN(const char *t, char (*out)[512])
{
    if (*t == '\0')
        return -1;
    char probe[1024];  /* the pattern must expand */
    if (ub_expand_report_path(t, 0, 1, "h", probe, sizeof probe) < 0)
        return -1;
    return copy_text(t, *out, sizeof *out);
}

static int parse_PATH(const char *t, char (*out)[512]) { return copy_text(t, *out, sizeof *out); }
static int parse_LOGPATH(const char *t, char (*out)[512]) { return *t ? parse_PATTERN(t, out) : parse_PATH(t, out); }

/* What each kind accepts, for the warning text. */
#define EXPECT_MODE "off, observe or schedule"
#define EXPECT_LOG "error, warn, info or debug"
#define POLICY_WORD(e, name, fn) " " name
#define EXPECT_POLICY "a policy name (one of:" UB_POLICY_LIST(POLICY_WORD) ")"
#define EXPECT_WARMUP "an integer from 1 to 1000"
#define EXPECT_COMPLETION "stream or call"
#define EXPECT_STAGING "an integer number of MiB from 0 to 65536"
#define EXPECT_ALIGN "a power of two from 1 to 1048576 (bytes)"
#define EXPECT_SECONDS "an integer number of seconds from 1 to 86400"
#define EXPECT_COUNT "an integer from 0 to 1000000"
#define EXPECT_PERCENT "an integer number of percent from -100 to 100000"
#define EXPECT_BOOL "0/1, true/false, yes/no or on/off"
#define EXPECT_PATTERN "a non-empty path with only %%r, %%p, %%h or %%%% escapes, under 512 bytes"
#define EXPECT_PATH "a path under 512 bytes"
#define EXPECT_LOGPATH "empty, or a path with only %%r, %%p, %%h or %%%% escapes, under 512 bytes"

void ub_config_defaults(ub_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
#define X(field, name, kind, def, help)                 \
    if (parse_##kind(def, &cfg->field) != 0)            \
        abort(); /* a bad default is a programming error */ \
    cfg->source[UB_CFG_##field] = UB_SRC_DEFAULT;
    UB_CONFIG_LIST(X)
#undef X
}

/* What a bad value falls back to: the default, except where the default is not the safe side.
 * USBYTE_MODE's default runs the plan; a value nobody meant must not: observe changes nothing of
 * what is issued and still reports what schedule mode would do. */
static const char *fallback_text(ub_config_id id, const char *def, const char *bad, char *buf, size_t len,
                                 const char **what)
{
    *what = "the default";
    if (id == UB_CFG_mode) {
        *what = "the safe value";
        return "observe";
    }
    /* A bad report name keeps the directory it names, when that part is good: the reports go
     * where the user looks for them, under the default name. */
    const char *slash = id == UB_CFG_report ? strrchr(bad, '/') : NULL;
    char probe[1024];
    if (slash && (size_t)(slash - bad) + 1 + strlen(def) < len && (size_t)(slash - bad) + 1 + strlen(def) < 512) {
        snprintf(buf, len, "%.*s/%s", (int)(slash - bad), bad, def);
        if (ub_expand_report_path(buf, 0, 1, "h", probe, sizeof probe) == 0) {
            *what = "the default name in that directory";
            return buf;
        }
    }
    return def;
}

int ub_config_parse(ub_config *cfg, ub_config_lookup lookup, ub_config_warn warn, void *ctx)
{
    int warnings = 0;
    ub_config_defaults(cfg);
#define X(field, name, kind, def, help)                                                          \
    {                                                                                            \
        const char *text = lookup("USBYTE_" name, ctx);                                          \
        if (text) {                                                                              \
            if (parse_##kind(text, &cfg->field) == 0) {                                          \
                cfg->source[UB_CFG_##field] = UB_SRC_ENV;                                        \
            } else {                                                                             \
                char kept[1100];                                                                 \
                const char *what;                                                                \
                const char *used = fallback_text(UB_CFG_##field, def, text, kept, sizeof kept, &what); \
                if (parse_##kind(used, &cfg->field) != 0)                                        \
                    abort(); /* a bad fallback is a programming error */                         \
                char line[1800];                                                                 \
                snprintf(line, sizeof line,                                                      \
                         "USBYTE_" name "=\"%.600s\" is not valid (expected " EXPECT_##kind      \
                         "); using %s \"%.600s\"", text, what, used);                              \
                for (char *p = line; *p; p++)                                                    \
                    if (*p == '\n' || *p == '\r') *p = ' ';                                      \
                if (warn) warn(line, ctx);                                                       \
                cfg->source[UB_CFG_##field] = UB_SRC_FALLBACK;                                   \
                warnings++;                                                                      \
            }                                                                                    \
        }                                                                                        \
    }
    UB_CONFIG_LIST(X)
#undef X
    return warnings;
}

/* Each kind's value as text, so that ub_config_value_text is generated from the list. */
static void text_MODE(const ub_mode *v, char *buf, size_t len) { snprintf(buf, len, "%s", ub_mode_name(*v)); }
static void text_LOG(const ub_log_level *v, char *buf, size_t len) { snprintf(buf, len, "%s", ub_log_level_name(*v)); }
static void text_COMPLETION(const ub_completion *v, char *buf, size_t len) { snprintf(buf, len, "%s", ub_completion_name(*v)); }
static void text_POLICY(const int *v, char *buf, size_t len) { snprintf(buf, len, "%s", ub_policy_name((ub_policy_id)*v)); }
static void text_int(const int *v, char *buf, size_t len) { snprintf(buf, len, "%d", *v); }
#define text_WARMUP text_int
#define text_STAGING text_int
#define text_ALIGN text_int
#define text_SECONDS text_int
#define text_COUNT text_int
#define text_PERCENT text_int
static void text_BOOL(const bool *v, char *buf, size_t len) { snprintf(buf, len, "%d", *v ? 1 : 0); }
static void text_PATTERN(const char (*v)[512], char *buf, size_t len) { snprintf(buf, len, "%s", *v); }
#define text_PATH text_PATTERN
#define text_LOGPATH text_PATTERN

const char *ub_config_value_text(const ub_config *cfg, ub_config_id id, char *buf, size_t len)
{
    switch (id) {
#define X(field, name, kind, def, help) case UB_CFG_##field: text_##kind(&cfg->field, buf, len); break;
        UB_CONFIG_LIST(X)
#undef X
    default: snprintf(buf, len, "?"); break;
    }
    return buf;
}

const char *ub_config_describe(const ub_config *cfg, ub_config_id id, char *buf, size_t len)
{
    char value[600];
    snprintf(buf, len, "%s=%s (%s)", ub_config_name(id), ub_config_value_text(cfg, id, value, sizeof value),
             ub_config_source_name(cfg->source[id]));
    return buf;
}

int ub_expand_report_path(const char *pattern, int rank, long pid, const char *host, char *out, size_t len)
{
    size_t used = 0;
    char piece[256];
    for (const char *p = pattern; *p; p++) {
        const char *add = piece;
        if (*p != '%') {
            piece[0] = *p;
            piece[1] = '\0';
        } else {
            switch (p[1]) {
            case 'r':
                if (rank < 0) snprintf(piece, sizeof piece, "unknown");
                else snprintf(piece, sizeof piece, "%d", rank);
                break;
            case 'p': snprintf(piece, sizeof piece, "%ld", pid); break;
            case 'h': add = host ? host : "unknown-host"; break;
            case '%': snprintf(piece, sizeof piece, "%%"); break;
            default:
                snprintf(out, len, "unknown escape \"%%%c\" in report pattern (known: %%r %%p %%h %%%%)",
                         p[1] ? p[1] : ' ');
                return -1;
            }
            p++;
        }
        size_t n = strlen(add);
        if (used + n + 1 > len) {
            snprintf(out, len, "report path longer than %zu bytes", len - 1);
            return -1;
        }
        memcpy(out + used, add, n);
        used += n;
    }
    out[used] = '\0';
    return 0;
}
