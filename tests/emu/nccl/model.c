#include "model.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Strict number parsing: the whole string, finite, within [lo, hi]. */
static int parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !isfinite(v) || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static double env_double(const char *name, double lo, double hi, double def, FILE *warn)
{
    const char *s = getenv(name);
    double v;
    if (s == NULL)
        return def;
    if (parse_double(s, lo, hi, &v) == 0)
        return v;
    if (warn != NULL)
        fprintf(warn, "usbyte-emu: warning: %s='%s' is not a number in [%g, %g]; using the default %g\n",
                name, s, lo, hi, def);
    return def;
}

void emu_model_from_env(struct emu_model *m, FILE *warn)
{
    m->alpha_us = env_double("USBYTE_EMU_ALPHA_US", 0.0, 1e9, EMU_MODEL_DEFAULT_ALPHA_US, warn);
    m->gbps = env_double("USBYTE_EMU_GBPS", 1e-6, 1e9, EMU_MODEL_DEFAULT_GBPS, warn);
    m->payload = 1;
    const char *s = getenv("USBYTE_EMU_PAYLOAD");
    if (s != NULL) {
        if (strcmp(s, "0") == 0)
            m->payload = 0;
        else if (strcmp(s, "1") != 0 && warn != NULL)
            fprintf(warn, "usbyte-emu: warning: USBYTE_EMU_PAYLOAD='%s' is not 0 or 1; using the default 1\n", s);
    }
    m->check = EMU_CHECK_STRICT;
    s = getenv("USBYTE_EMU_CHECK");
    if (s != NULL) {
        if (strcmp(s, "bytes") == 0)
            m->check = EMU_CHECK_BYTES;
        else if (strcmp(s, "strict") != 0 && warn != NULL)
            fprintf(warn, "usbyte-emu: warning: USBYTE_EMU_CHECK='%s' is not strict or bytes; using the default strict\n", s);
    }
}

/* bytes / (gbps * 1e9 B/s), in microseconds */
static double transfer_us(const struct emu_model *m, double bytes)
{
    return bytes / (m->gbps * 1e3);
}

double emu_model_collective_us(const struct emu_model *m, enum emu_kind kind, size_t count,
                               size_t elem_size, int nranks)
{
    if (nranks <= 1)
        return 0.0;
    double p = nranks;
    double bytes = (double)count * (double)elem_size;
    switch (kind) {
    case EMU_ALLREDUCE:
        return 2.0 * (p - 1.0) * m->alpha_us + transfer_us(m, 2.0 * (p - 1.0) / p * bytes);
    case EMU_BROADCAST:
    case EMU_REDUCE:
        return (p - 1.0) * m->alpha_us + transfer_us(m, bytes);
    case EMU_ALLGATHER:
    case EMU_REDUCESCATTER:
        return (p - 1.0) * m->alpha_us + transfer_us(m, (p - 1.0) / p * (p * bytes));
    case EMU_SEND:
    case EMU_RECV:
        break;
    }
    return 0.0;
}

double emu_model_p2p_us(const struct emu_model *m, size_t sent_bytes, size_t recv_bytes, int with_peer)
{
    if (!with_peer)
        return 0.0;
    double larger = sent_bytes > recv_bytes ? (double)sent_bytes : (double)recv_bytes;
    return m->alpha_us + transfer_us(m, larger);
}
