/* The runtime's configuration (docs/design.md section 7): one X-macro list of every USBYTE_
 * variable, parsed strictly from the environment.  A bad value produces one warning naming
 * the variable, the value and the default used, and falls back to the default; nothing here
 * can crash on input.  Parsing is a pure function of a lookup callback so tests need no
 * environment. */
#ifndef USBYTE_CONFIG_H
#define USBYTE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { UB_MODE_OFF, UB_MODE_OBSERVE, UB_MODE_SCHEDULE } ub_mode;
/* When an event the application records on a NCCL stream after call k completes (docs/design.md
 * section 3): stream = once calls 0..k have (CUDA's own rule), call = once call k has. */
typedef enum { UB_COMPLETION_STREAM, UB_COMPLETION_CALL } ub_completion;
typedef enum { UB_LOG_ERROR, UB_LOG_WARN, UB_LOG_INFO, UB_LOG_DEBUG } ub_log_level;

/* X(field, NAME without prefix, kind, default text, description).  Kinds: MODE, LOG, COMPLETION
 * (enums), POLICY (a policy name of usbyte/policy.h), WARMUP (integer 1..1000), STAGING (MiB,
 * 0..65536), ALIGN (a power of two, 1..1048576 bytes), SECONDS (1..86400), COUNT (0..1000000),
 * PERCENT (0..100000),
 * BOOL (0/1/true/false/yes/no/on/off), PATTERN (non-empty path pattern), LOGPATH (a path
 * pattern or empty = unset), PATH (any string; empty = unset).  Variables that change what is issued to NCCL (MODE, POLICY, COMPLETION,
 * STAGING_MB, ALIGN, MIN_GAIN_PCT, VERIFY, VERIFY_EVERY, CALIBRATE) are part of the agreement; WARMUP decides where it is issued
 * and must be the same on every rank. */
#define UB_CONFIG_LIST(X)                                                                      \
    X(mode, "MODE", MODE, "schedule", "off | observe (measure and plan only) | schedule (run the plan)") \
    X(policy, "POLICY", POLICY, "best", "policy whose plan is chosen (docs/model.md names)")        \
    X(warmup, "WARMUP", WARMUP, "5", "whole iterations profiled after the period is found")   \
    X(report, "REPORT", PATTERN, "usbyte-report-%r.json", "report path; %r rank, %p pid, %h host") \
    X(log, "LOG", LOG, "warn", "error | warn | info | debug")                                  \
    X(log_file, "LOG_FILE", LOGPATH, "", "log destination, %r rank and %p pid (default standard error)")            \
    X(nccl_lib, "NCCL_LIB", PATH, "", "NCCL library to take the real functions from")         \
    X(cupti, "CUPTI", BOOL, "1", "watch the NCCL streams with CUPTI during warm-up")           \
    X(dump_config, "DUMP_CONFIG", BOOL, "0", "print every setting and where it came from")     \
    X(completion, "COMPLETION", COMPLETION, "stream", "stream (CUDA's rule: an event after call k waits for calls 0..k) | call (for call k only)") \
    X(staging_mb, "STAGING_MB", STAGING, "256", "largest staging buffer for merged blocks, MiB (0: never merge)") \
    X(align, "ALIGN", ALIGN, "512", "cuts inside a call fall on multiples of this many bytes")  \
    X(hang_s, "HANG_S", SECONDS, "30", "an event polled this long by the issuing thread on a block that cannot be issued is a hang") \
    X(max_deviations, "MAX_DEVIATIONS", COUNT, "4", "deviations from the plan before the communicator is profiled again") \
    X(min_gain_pct, "MIN_GAIN_PCT", PERCENT, "2", "schedule only when the plan is predicted this many percent faster than wfbp") \
    X(verify, "VERIFY", BOOL, "1", "after the switch, measure the plan against pass-through and keep only what is faster") \
    X(verify_every, "VERIFY_EVERY", COUNT, "200", "iterations between checks of what verification kept (0: checked once)") \
    X(calibrate, "CALIBRATE", BOOL, "1", "before the switch, probe the block sizes the warm-up did not show and fit the model on them too")

typedef enum { UB_SRC_DEFAULT, UB_SRC_ENV, UB_SRC_FALLBACK } ub_config_source;

typedef struct ub_config {
    ub_mode mode;
    int policy;            /* ub_policy_id */
    int warmup;
    char report[512];
    ub_log_level log;
    char log_file[512];
    char nccl_lib[512];
    bool cupti;
    bool dump_config;
    ub_completion completion;
    int staging_mb;
    int align;
    int hang_s;
    int max_deviations;
    int min_gain_pct;
    bool verify;
    int verify_every;
    bool calibrate;
    /* where each value came from, indexed by UB_CFG_<field> */
    ub_config_source source[32];
} ub_config;

typedef enum {
#define X(field, name, kind, def, help) UB_CFG_##field,
    UB_CONFIG_LIST(X)
#undef X
    UB_CFG_COUNT
} ub_config_id;

/* Returns the value of a variable (full name, e.g. "USBYTE_MODE") or NULL when unset. */
typedef const char *(*ub_config_lookup)(const char *name, void *ctx);
/* Receives one complete warning line (no prefix, no newline). */
typedef void (*ub_config_warn)(const char *line, void *ctx);

/* Fills cfg from lookup; calls warn once per bad value.  Returns the number of warnings. */
int ub_config_parse(ub_config *cfg, ub_config_lookup lookup, ub_config_warn warn, void *ctx);
void ub_config_defaults(ub_config *cfg);

/* "USBYTE_MODE=observe (env)" for variable id into buf; returns buf. */
const char *ub_config_describe(const ub_config *cfg, ub_config_id id, char *buf, size_t len);
/* The value as text ("observe", "5", ...). */
const char *ub_config_value_text(const ub_config *cfg, ub_config_id id, char *buf, size_t len);
const char *ub_config_name(ub_config_id id);  /* "USBYTE_MODE" */
const char *ub_config_source_name(ub_config_source src);
const char *ub_mode_name(ub_mode m);
const char *ub_log_level_name(ub_log_level l);
const char *ub_completion_name(ub_completion c);

/* Expands %r (rank; "unknown" when rank < 0), %p (pid), %h (host name) and %% in pattern.
 * Returns 0, or -1 when the result does not fit or the pattern has an unknown %-escape
 * (then out holds a one-line reason). */
int ub_expand_report_path(const char *pattern, int rank, long pid, const char *host, char *out, size_t len);

#endif
