/* Packing one rank's summary into the agreement vectors and unpacking the combined result (see
 * usbyte/record.h).  Only max and sum are used: both are exact on doubles in any order, so every
 * rank decodes bit-identical numbers whatever order NCCL reduces in.  The vectors have constant
 * lengths: nothing a rank measured changes the size of what it issues. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "usbyte/config.h"
#include "usbyte/config_agree.h"
#include "usbyte/policy.h"
#include "usbyte/record.h"

#define AGREE_FORMAT 7.0
#define NO_SAMPLE 1e300
#define STR_(x) #x
#define STR(x) STR_(x)

/* Offsets in the max vector. */
#define CALLS_AT UB_AGREE_HEADER_LEN
#define GLOBALS_AT (UB_AGREE_HEADER_LEN + UB_AGREE_PER_CALL * UB_AGREE_CAP)

_Static_assert(UB_AGREE_FLAG_COUNT == sizeof(ub_agree_flags) / sizeof(double), "UB_AGREE_FLAG_COUNT");

void ub_agree_header_encode(int n_calls, uint32_t period, uint64_t seq_hash, const ub_agree_settings *set,
                            double out[UB_AGREE_HEADER_LEN])
{
    double v[UB_AGREE_HEADER_FIELDS] = {
        (double)n_calls, (double)period,
        (double)((seq_hash >> 48) & 0xffff), (double)((seq_hash >> 32) & 0xffff),
        (double)((seq_hash >> 16) & 0xffff), (double)(seq_hash & 0xffff),
        AGREE_FORMAT,
#define X(field, var) (double)set->field,
        UB_AGREE_SETTING_LIST(X)
#undef X
    };
    for (int i = 0; i < UB_AGREE_HEADER_FIELDS; i++) {
        out[i] = v[i];
        out[UB_AGREE_HEADER_FIELDS + i] = -v[i];
    }
}

bool ub_agree_header_unanimous(const double combined[UB_AGREE_HEADER_LEN])
{
    for (int i = 0; i < UB_AGREE_HEADER_FIELDS; i++)
        if (!(combined[i] == -combined[UB_AGREE_HEADER_FIELDS + i]))
            return false;
    return true;
}

static double finite_or(double v, double none) { return isfinite(v) ? v : none; }

void ub_agree_encode(const ub_agree_local *l, double *max_vec, double *sum_vec)
{
    memset(max_vec, 0, UB_AGREE_MAX_LEN * sizeof *max_vec);
    memset(sum_vec, 0, UB_AGREE_SUM_LEN * sizeof *sum_vec);
    ub_agree_header_encode(l->n_calls, l->period, l->seq_hash, &l->settings, max_vec);
    const ub_summary *s = l->summary;
    bool usable = s && s->n_calls == l->n_calls && l->n_calls <= UB_AGREE_CAP;
    for (int c = 0; usable && c < s->n_calls; c++) {
        const ub_summary_call *k = &s->calls[c];
        double *m = &max_vec[CALLS_AT + UB_AGREE_PER_CALL * c];
        m[0] = finite_or(k->ready, 0.0);
        m[1] = finite_or(k->need, -1.0);
        m[2] = finite_or(k->done, -1.0);
        /* A rank without a duration sample (0: e.g. calls held in a group spanning the end of
         * the warm-up) must not win the min over ranks. */
        double cmin = finite_or(k->comm_cost, 0.0);
        m[3] = cmin > 0 ? -cmin : -NO_SAMPLE;
        m[4] = k->barrier ? 1.0 : 0.0;
        m[5] = k->fallback ? 1.0 : 0.0;
        m[6] = k->split ? 1.0 : 0.0;
        sum_vec[c] = finite_or(k->comm_mean, 0.0);
        sum_vec[UB_AGREE_SUM_VOTES + c] = s->phase_votes ? s->phase_votes[c] : 0;
    }
    if (usable)
        sum_vec[UB_AGREE_SUM_VOTERS] = s->phase_votes ? s->phase_voters : 0;
    double *g = &max_vec[GLOBALS_AT];
    int f = 0;
#define X(field, meaning) g[f++] = finite_or(l->flags.field, 0.0);
    UB_AGREE_FLAG_LIST(X)
#undef X
    g[f] = usable ? finite_or(s->iteration, 0.0) : 0.0;
    /* Too many calls is the same on every rank (n_calls is portable): not a rank failure. */
    g[f + 1] = (usable || l->n_calls > UB_AGREE_CAP || l->n_calls == 0) ? 0.0 : 1.0;
    sum_vec[UB_AGREE_SUM_RANKS] = 1.0;
}

ub_agree_outcome ub_agree_decode(const double *max_vec, const double *sum_vec, ub_agreed *out)
{
    memset(out, 0, sizeof *out);
    if (!ub_agree_header_unanimous(max_vec))
        return UB_AGREE_MISMATCH;
    int n_calls = (int)max_vec[0];
    if (n_calls < 1)
        return UB_AGREE_NO_CALLS;
    if (n_calls > UB_AGREE_CAP)
        return UB_AGREE_TOO_MANY;
    const double *g = &max_vec[GLOBALS_AT];
    if (g[UB_AGREE_FLAG_COUNT + 1] > 0.5)
        return UB_AGREE_RANK_FAILED;
    out->calls = calloc((size_t)n_calls, sizeof *out->calls);
    if (!out->calls)
        return UB_AGREE_NOMEM;
    out->n_calls = n_calls;
    out->ranks = (int)lround(sum_vec[UB_AGREE_SUM_RANKS]);
    if (out->ranks < 1)
        out->ranks = 1;
    for (int c = 0; c < n_calls; c++) {
        const double *m = &max_vec[CALLS_AT + UB_AGREE_PER_CALL * c];
        ub_summary_call *k = &out->calls[c];
        k->ready = m[0];
        k->need = m[1];
        k->done = m[2];
        k->comm_cost = -m[3] >= NO_SAMPLE ? 0.0 : -m[3];
        k->barrier = m[4] > 0.5;
        k->fallback = m[5] > 0.5;
        k->split = m[6] > 0.5;
        k->comm_mean = sum_vec[c] / out->ranks;
    }
    int f = 0;
#define X(field, meaning) out->flags.field = g[f++];
    UB_AGREE_FLAG_LIST(X)
#undef X
    out->iteration = g[f];
    out->phase = ub_phase_majority(&sum_vec[UB_AGREE_SUM_VOTES], n_calls, sum_vec[UB_AGREE_SUM_VOTERS]);
    return UB_AGREE_OK;
}

/* A setting of the header as text, as the configuration writes it. */
static void setting_text(ub_agree_setting_id k, double v, char *buf, size_t len)
{
    static const ub_config_id ids[] = {
#define X(field, var) UB_CFG_##field,
        UB_AGREE_SETTING_LIST(X)
#undef X
    };
    ub_config cfg;
    ub_config_defaults(&cfg);
    int i = (int)v;
    switch (k) {
#define X(field, var)                                                                                                  \
    case UB_AGREE_SETTING_##field: cfg.field = (__typeof__(cfg.field))i; break;
        UB_AGREE_SETTING_LIST(X)
#undef X
    default: snprintf(buf, len, "%g", v); return;
    }
    ub_config_value_text(&cfg, ids[k], buf, len);
}

static const char *setting_var(ub_agree_setting_id k)
{
    static const char *const vars[] = {
#define X(field, var) var,
        UB_AGREE_SETTING_LIST(X)
#undef X
    };
    return (unsigned)k < UB_AGREE_SETTING_COUNT ? vars[k] : "?";
}

/* Appends to buf at *used, which counts the whole text's length even past len (buf stays
 * terminated within len). */
static void add(char *buf, size_t len, size_t *used, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void add(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = *used < len ? vsnprintf(buf + *used, len - *used, fmt, ap) : vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0)
        *used += (size_t)n;
}

size_t ub_agree_mismatch_text(const double combined[UB_AGREE_HEADER_LEN], char *buf, size_t len)
{
    size_t used = 0;
    const double *hi = combined, *lo_neg = combined + UB_AGREE_HEADER_FIELDS;
#define DIFFERS(i) (!(hi[i] == -lo_neg[i]))
    buf[0] = '\0';
    add(buf, len, &used, "signature mismatch:");
    bool seq = false;
    for (int i = 0; i < 6; i++)
        seq |= DIFFERS(i);
    if (seq) {
        add(buf, len, &used, " the ranks saw different call sequences");
        if (DIFFERS(0))
            add(buf, len, &used, " (%.0f to %.0f allreduces per iteration)", -lo_neg[0], hi[0]);
        else if (DIFFERS(1))
            add(buf, len, &used, " (%.0f to %.0f NCCL calls per iteration)", -lo_neg[1], hi[1]);
        else
            add(buf, len, &used, " (as many calls, with other kinds, sizes, types or operations)");
    }
    if (DIFFERS(6))
        add(buf, len, &used, "%s the ranks run different usbyte versions (agreement formats %g to %g)", seq ? ";" : "",
            -lo_neg[6], hi[6]);
    int n = 0;
    for (int k = 0; k < UB_AGREE_SETTING_COUNT; k++) {
        int i = UB_AGREE_HEADER_SETTINGS_AT + k;
        if (!DIFFERS(i))
            continue;
        char a[64], b[64];
        setting_text((ub_agree_setting_id)k, -lo_neg[i], a, sizeof a);
        setting_text((ub_agree_setting_id)k, hi[i], b, sizeof b);
        add(buf, len, &used, "%s %s (%s on some ranks, %s on others)",
            n ? "," : (seq || DIFFERS(6)) ? "; the ranks run with different settings:" : " the ranks run with different settings:",
            setting_var((ub_agree_setting_id)k), a, b);
        n++;
    }
#undef DIFFERS
    if (n)
        add(buf, len, &used, ": set the same values on every rank");
    return used;
}

const char *ub_agree_outcome_reason(ub_agree_outcome o)
{
    switch (o) {
    case UB_AGREE_OK: return "agreed";
    case UB_AGREE_MISMATCH: return "signature mismatch: the ranks saw different call sequences (or run with another "
                                   "USBYTE_MODE, USBYTE_POLICY, USBYTE_COMPLETION, USBYTE_STAGING_MB, USBYTE_ALIGN, "
                                   "USBYTE_MIN_GAIN_PCT, USBYTE_VERIFY, USBYTE_VERIFY_EVERY or USBYTE_CALIBRATE)";
    case UB_AGREE_NO_CALLS: return "no allreduce to plan in the iteration";
    case UB_AGREE_TOO_MANY: return "more than " STR(UB_AGREE_CAP) " allreduces per iteration (the agreement's capacity, UB_AGREE_CAP)";
    case UB_AGREE_RANK_FAILED: return "a rank could not measure its warm-up (its log says why)";
    case UB_AGREE_NOMEM: return "out of memory while decoding the agreement";
    }
    return "?";
}

void ub_agreed_free(ub_agreed *a)
{
    free(a->calls);
    memset(a, 0, sizeof *a);
}
