#include "model.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
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

static uint64_t env_u64(const char *name, uint64_t def, FILE *warn)
{
    const char *s = getenv(name);
    if (s == NULL)
        return def;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end != s && *end == '\0' && errno == 0 && s[0] != '-')
        return (uint64_t)v;
    if (warn != NULL)
        fprintf(warn, "usbyte-emu: warning: %s='%s' is not an unsigned integer; using the default %llu\n", name, s,
                (unsigned long long)def);
    return def;
}

void emu_model_from_env(struct emu_model *m, FILE *warn)
{
    memset(m, 0, sizeof *m);
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
    m->jitter_pct = env_double("USBYTE_EMU_JITTER_PCT", 0.0, 99.0, 0.0, warn);
    m->jitter_seed = env_u64("USBYTE_EMU_JITTER_SEED", 0, warn);
    m->tree_below = env_u64("USBYTE_EMU_TREE_BELOW", 65536, warn);
    s = getenv("USBYTE_EMU_NET");
    if (s != NULL && *s != '\0') {
        if (strlen(s) >= sizeof m->net_file) {
            if (warn != NULL)
                fprintf(warn, "usbyte-emu: warning: USBYTE_EMU_NET='%s' is longer than %zu characters; using the "
                        "alpha-beta formula\n", s, sizeof m->net_file - 1);
        } else if (emu_net_load(s, warn) != NULL) {
            strcpy(m->net_file, s);
        }
    }
}

int emu_model_same(const struct emu_model *a, const struct emu_model *b)
{
    return a->alpha_us == b->alpha_us && a->gbps == b->gbps && a->payload == b->payload && a->check == b->check &&
           a->jitter_pct == b->jitter_pct && a->jitter_seed == b->jitter_seed && a->tree_below == b->tree_below &&
           strcmp(a->net_file, b->net_file) == 0;
}

enum emu_algo emu_model_algorithm(const struct emu_model *m, enum emu_kind kind, uint64_t bytes)
{
    return kind == EMU_ALLREDUCE && bytes < m->tree_below ? EMU_ALGO_TREE : EMU_ALGO_RING;
}

/* bytes / (gbps * 1e9 B/s), in microseconds */
static double transfer_us(const struct emu_model *m, double bytes)
{
    return bytes / (m->gbps * 1e3);
}

double emu_model_collective_us(const struct emu_model *m, enum emu_kind kind, size_t count,
                               size_t elem_size, int nranks)
{
    return emu_model_collective_inplace_us(m, kind, count, elem_size, nranks, 0);
}

double emu_model_collective_inplace_us(const struct emu_model *m, enum emu_kind kind, size_t count,
                                       size_t elem_size, int nranks, int in_place)
{
    if (nranks <= 1)
        return 0.0;
    double p = nranks;
    double bytes = (double)count * (double)elem_size;
    switch (kind) {
    case EMU_ALLREDUCE:
        /* The table is the cluster it was measured on, whatever this job's rank count. */
        if (m->net_file[0] != '\0') {
            const ub_net_table *t = emu_net_load(m->net_file, NULL);
            if (t != NULL)
                return emu_net_us(t, bytes, in_place);
        }
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

/* splitmix64's finaliser: a well-mixed 64-bit function of its input. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

double emu_model_jitter(const struct emu_model *m, int rank, uint64_t index)
{
    if (m->jitter_pct <= 0.0)
        return 1.0;
    uint64_t h = mix64(mix64(mix64(m->jitter_seed) ^ (uint64_t)(uint32_t)rank) ^ index);
    double u = (double)(h >> 11) * 0x1.0p-53;   /* uniform in [0, 1) */
    return 1.0 + m->jitter_pct / 100.0 * (2.0 * u - 1.0);
}

/* ---- net tables ---- */

double emu_net_us(const ub_net_table *t, double bytes, int in_place)
{
    const ub_net_row *r = t->rows;
    int n = t->n;
#define ROW_US(i) (in_place ? r[i].in_place_us : r[i].us)
    if (bytes <= r[0].bytes)
        return ROW_US(0);
    if (bytes >= r[n - 1].bytes)
        return ROW_US(n - 1) * (bytes / r[n - 1].bytes);
    int lo = 0, hi = n - 1;   /* r[lo].bytes < bytes < r[hi].bytes */
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (r[mid].bytes <= bytes)
            lo = mid;
        else
            hi = mid;
    }
    double f = (bytes - r[lo].bytes) / (r[hi].bytes - r[lo].bytes);
    return ROW_US(lo) + f * (ROW_US(hi) - ROW_US(lo));
#undef ROW_US
}

/* Every file named in this process, parsed once: the table, or none for a bad file. */
struct net_entry {
    struct net_entry *next;
    int ok, warned;
    char err[768];
    ub_net_table table;
    char path[];
};

static pthread_mutex_t net_mu = PTHREAD_MUTEX_INITIALIZER;
static struct net_entry *net_entries;

const ub_net_table *emu_net_load(const char *path, FILE *warn)
{
    pthread_mutex_lock(&net_mu);
    struct net_entry *e;
    for (e = net_entries; e != NULL; e = e->next)
        if (strcmp(e->path, path) == 0)
            break;
    if (e == NULL && (e = calloc(1, sizeof *e + strlen(path) + 1)) != NULL) {
        strcpy(e->path, path);
        e->ok = ub_net_table_read(path, &e->table, e->err, sizeof e->err) == 0;
        e->next = net_entries;
        net_entries = e;
    }
    if (e != NULL && !e->ok && !e->warned && warn != NULL) {
        fprintf(warn, "usbyte-emu: warning: USBYTE_EMU_NET=%s; using the alpha-beta formula\n", e->err);
        e->warned = 1;
    }
    pthread_mutex_unlock(&net_mu);
    return e != NULL && e->ok ? &e->table : NULL;
}
