/* Online iteration detection (see usbyte/iteration.h for the definition and the algorithm). */
#include "usbyte/iteration.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "usbyte/signature.h"

#define INITIAL_CAP 64u
#define DEFAULT_MAX_CHAIN 256u

enum { SEARCHING, LOCKED, GAVE_UP };

struct ub_iterdet {
    ub_iterdet_config cfg; /* resolved: no zeros */
    uint64_t n;            /* calls fed */
    uint64_t floor;        /* local index of the last deviation (search_limit counts from it) */
    uint64_t searched;     /* 1 + local index of the last call that went through search_step */
    int state;
    uint32_t period;
    uint64_t start;        /* local */
    char gave_up[64];

    /* The last min(n, cap) calls: value and distance to the previous call with the same value
     * (0: none within max_period).  cap grows by doubling up to cap_max >= 2 * max_period. */
    uint64_t *hist;
    uint32_t *prev;
    uint64_t cap, cap_max;

    /* value -> 1 + local index of its latest call; open addressing, linear probing. */
    uint64_t *tkey;
    uint64_t *tpos;
    uint64_t tcap, tused;

    /* Per period p (1..rcap-1): stamp = 1 + local index of the last call where s[i] == s[i-p]
     * while searching, run = m_p at that call. */
    uint64_t *stamp;
    uint32_t *run;
    uint64_t rcap;

    /* The iteration of the last lock, by position (old[k] at position k), saved when it deviated
     * so that a relock with the same period can keep the same phase. */
    uint64_t *old;
    uint32_t old_period;
};

static uint64_t pow2_at_least(uint64_t x)
{
    uint64_t p = 1;
    while (p < x)
        p <<= 1;
    return p;
}

static void give_up(ub_iterdet *d, const char *why)
{
    d->state = GAVE_UP;
    snprintf(d->gave_up, sizeof d->gave_up, "%s", why);
}

static void free_arrays(ub_iterdet *d)
{
    free(d->old);
    d->old = NULL;
    d->old_period = 0;
    free(d->hist);
    free(d->prev);
    free(d->tkey);
    free(d->tpos);
    free(d->stamp);
    free(d->run);
    d->hist = NULL, d->prev = NULL, d->tkey = NULL, d->tpos = NULL, d->stamp = NULL, d->run = NULL;
    d->cap = d->tcap = d->tused = d->rcap = 0;
}

static uint64_t table_slot(const ub_iterdet *d, uint64_t key)
{
    uint64_t mask = d->tcap - 1;
    uint64_t i = ub_hash_mix64(key) & mask;
    while (d->tpos[i] && d->tkey[i] != key)
        i = (i + 1) & mask;
    return i;
}

/* Rebuilds the table (capacity tcap) from the calls still in the history, dropping values whose
 * latest call is older: keeps the table's load bounded whatever the number of distinct values. */
static int table_rebuild(ub_iterdet *d, uint64_t tcap)
{
    uint64_t *key = calloc(tcap, sizeof *key), *pos = calloc(tcap, sizeof *pos);
    if (!key || !pos) {
        free(key);
        free(pos);
        return -1;
    }
    free(d->tkey);
    free(d->tpos);
    d->tkey = key, d->tpos = pos, d->tcap = tcap, d->tused = 0;
    uint64_t kept = d->n < d->cap ? d->n : d->cap;
    for (uint64_t i = d->n - kept; i < d->n; i++) {
        uint64_t v = d->hist[i & (d->cap - 1)];
        uint64_t s = table_slot(d, v);
        if (!d->tpos[s]) {
            d->tkey[s] = v;
            d->tused++;
        }
        d->tpos[s] = i + 1;
    }
    return 0;
}

static int alloc_arrays(ub_iterdet *d)
{
    d->cap = INITIAL_CAP < d->cap_max ? INITIAL_CAP : d->cap_max;
    d->rcap = (d->cap < d->cfg.max_period ? d->cap : d->cfg.max_period) + 1;
    d->hist = malloc(d->cap * sizeof *d->hist);
    d->prev = malloc(d->cap * sizeof *d->prev);
    d->stamp = calloc(d->rcap, sizeof *d->stamp);
    d->run = calloc(d->rcap, sizeof *d->run);
    if (!d->hist || !d->prev || !d->stamp || !d->run || table_rebuild(d, 2 * d->cap) < 0) {
        free_arrays(d);
        return -1;
    }
    return 0;
}

/* Doubles the history (only while it has never wrapped, so the copy is in index order). */
static int grow_history(ub_iterdet *d)
{
    uint64_t cap = d->cap * 2;
    uint64_t *hist = malloc(cap * sizeof *hist);
    uint32_t *prev = malloc(cap * sizeof *prev);
    uint64_t rcap = (cap < d->cfg.max_period ? cap : d->cfg.max_period) + 1; /* never shrinks */
    uint64_t *stamp = realloc(d->stamp, rcap * sizeof *stamp);
    if (stamp)
        d->stamp = stamp;
    uint32_t *run = realloc(d->run, rcap * sizeof *run);
    if (run)
        d->run = run;
    if (!hist || !prev || !stamp || !run) {
        free(hist);
        free(prev);
        return -1;
    }
    memcpy(hist, d->hist, d->n * sizeof *hist);
    memcpy(prev, d->prev, d->n * sizeof *prev);
    memset(stamp + d->rcap, 0, (rcap - d->rcap) * sizeof *stamp);
    memset(run + d->rcap, 0, (rcap - d->rcap) * sizeof *run);
    free(d->hist);
    free(d->prev);
    d->hist = hist, d->prev = prev, d->cap = cap, d->rcap = rcap;
    return table_rebuild(d, 2 * cap);
}

/* Appends call n with value v: history, link to its previous occurrence, table. */
static int store(ub_iterdet *d, uint64_t v)
{
    if (d->n == d->cap && d->cap < d->cap_max && grow_history(d) < 0)
        return -1;
    if (4 * (d->tused + 1) > 3 * d->tcap && table_rebuild(d, d->tcap) < 0)
        return -1;
    uint64_t i = d->n, s = table_slot(d, v);
    uint64_t dist = d->tpos[s] ? i + 1 - d->tpos[s] : 0;
    if (!d->tpos[s]) {
        d->tkey[s] = v;
        d->tused++;
    }
    d->tpos[s] = i + 1;
    d->hist[i & (d->cap - 1)] = v;
    d->prev[i & (d->cap - 1)] = dist <= d->cfg.max_period ? (uint32_t)dist : 0;
    d->n++;
    return 0;
}

/* Oldest local index the history still holds at call i: runs never reach before it. */
static uint64_t oldest(const ub_iterdet *d, uint64_t i)
{
    return i + 1 > d->cap_max ? i + 1 - d->cap_max : 0;
}

/* Run of period p ending at call j, counted backwards through the history: used for the first
 * call searched after a lock, whose runs were not tracked while locked. */
static uint32_t backscan(const ub_iterdet *d, uint64_t j, uint64_t p, uint64_t lo)
{
    uint64_t mask = d->cap - 1;
    uint32_t m = 0;
    for (; j >= p + lo && d->hist[j & mask] == d->hist[(j - p) & mask]; j--) {
        m++;
        if (j == 0)
            break;
    }
    return m;
}

/* One search step on the call just stored (local index i): extends the runs of every period at
 * which an earlier call has the same value, nearest first; locks on the first that qualifies. */
static int search_step(ub_iterdet *d, uint64_t i)
{
    uint64_t mask = d->cap - 1, total = 0, lo = oldest(d, i);
    int fresh = d->searched != i; /* call i-1 was not searched: stamps say nothing about it */
    d->searched = i + 1;
    for (uint32_t examined = 0; examined < d->cfg.max_chain; examined++) {
        uint32_t step = d->prev[(i - total) & mask];
        if (!step)
            break;
        total += step;
        if (total > d->cfg.max_period)
            break;
        uint64_t p = total;
        uint64_t m;
        if (fresh)
            m = i > 0 ? 1 + (uint64_t)backscan(d, i - 1, p, lo) : 1;
        else
            m = d->stamp[p] == i ? (uint64_t)d->run[p] + 1 : 1;
        if (m > i + 1 - p - lo)
            m = i + 1 - p - lo;
        d->stamp[p] = i + 1;
        d->run[p] = (uint32_t)m;
        if (m >= p && m + p >= d->cfg.min_span && p >= d->cfg.min_period) {
            d->state = LOCKED;
            d->period = (uint32_t)p;
            d->start = i + 1 - m - p;
            d->searched = 0; /* the runs of longer periods were not updated on this call */
            return 1;
        }
    }
    return 0;
}

/* Called at a deviation on call i, still locked: keeps the last full iteration by position. */
static void save_pattern(ub_iterdet *d, uint64_t i)
{
    uint32_t p = d->period;
    uint64_t *old = realloc(d->old, p * sizeof *old);
    if (!old) { /* only the phase continuity is lost */
        free(d->old);
        d->old = NULL;
        d->old_period = 0;
        return;
    }
    d->old = old;
    d->old_period = p;
    for (uint64_t j = i - p; j < i; j++)
        old[(j - d->start) % p] = d->hist[j & (d->cap - 1)];
}

/* After a lock on call i: when the new iteration is a rotation of the one that deviated (same
 * period), moves `start` to the first index of the region at which the old position 0 falls, so
 * that iteration boundaries stay at the same call of the iteration across a transient deviation.
 * The rotation is found by KMP search of the last p calls in the old iteration taken twice: O(p). */
static void realign(ub_iterdet *d, uint64_t i)
{
    uint32_t p = d->period;
    if (!d->old || d->old_period != p)
        return;
    uint64_t mask = d->cap - 1, w0 = i + 1 - p;
    uint32_t *fail = malloc((size_t)p * sizeof *fail);
    if (!fail)
        return;
#define W(k) d->hist[(w0 + (k)) & mask]
    fail[0] = 0;
    for (uint32_t k = 1, f = 0; k < p; k++) {
        while (f && W(k) != W(f))
            f = fail[f - 1];
        if (W(k) == W(f))
            f++;
        fail[k] = f;
    }
    uint64_t found = UINT64_MAX;
    for (uint64_t t = 0, f = 0; t + 1 < 2ull * p; t++) {
        uint64_t v = d->old[t % p];
        while (f && v != W(f))
            f = fail[f - 1];
        if (v == W(f))
            f++;
        if (f == p) {
            found = t + 1 - p; /* the old position of call w0 */
            break;
        }
    }
#undef W
    free(fail);
    if (found == UINT64_MAX)
        return;
    /* start' = w0 - found (mod p), the first such index not before the region's start. */
    uint64_t phase = (w0 + p - found) % p;
    d->start += (phase + p - d->start % p) % p;
}

static void fill_phase(const ub_iterdet *d, uint64_t i, ub_iter_result *r)
{
    r->period = d->period;
    r->start = d->start;
    r->iteration = (i - d->start) / d->period;
    r->position = (uint32_t)((i - d->start) % d->period);
}

ub_iter_event ub_iterdet_feed(ub_iterdet *d, uint64_t sig, ub_iter_result *out)
{
    ub_iter_result r;
    memset(&r, 0, sizeof r);
    uint64_t i = d->n;
    r.index = i;
    if (d->state == GAVE_UP) {
        d->n++; /* counts only: nothing is stored any more */
        r.event = UB_ITER_GAVE_UP;
        goto done;
    }
    int was_locked = d->state == LOCKED;
    uint64_t expected = was_locked ? d->hist[(i - d->period) & (d->cap - 1)] : 0;
    if (store(d, sig) < 0) {
        d->n++; /* keeps the indices counting */
        give_up(d, "out of memory");
        r.event = UB_ITER_GAVE_UP;
        goto done;
    }
    if (was_locked) {
        if (sig == expected) {
            r.event = UB_ITER_IN_PHASE;
            fill_phase(d, i, &r);
            goto done;
        }
        r.deviated = 1;
        r.expected = expected;
        save_pattern(d, i);
        d->state = SEARCHING;
        d->floor = i;
    }
    if (search_step(d, i)) {
        realign(d, i);
        r.event = UB_ITER_LOCKED;
        fill_phase(d, i, &r);
    } else if (i + 1 - d->floor >= d->cfg.search_limit) {
        char why[64];
        snprintf(why, sizeof why, "no period within %llu calls", (unsigned long long)d->cfg.search_limit);
        give_up(d, why);
        r.event = UB_ITER_GAVE_UP;
    } else {
        r.event = r.deviated ? UB_ITER_DEVIATION : UB_ITER_SEARCHING;
    }
done:
    if (out)
        *out = r;
    return r.event;
}

ub_iterdet *ub_iterdet_new(const ub_iterdet_config *cfg)
{
    ub_iterdet *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    if (cfg)
        d->cfg = *cfg;
    if (d->cfg.max_period == 0 || d->cfg.max_period > UB_ITER_MAX_PERIOD)
        d->cfg.max_period = UB_ITER_MAX_PERIOD;
    if (d->cfg.max_chain == 0)
        d->cfg.max_chain = DEFAULT_MAX_CHAIN;
    if (d->cfg.search_limit == 0)
        d->cfg.search_limit = 4ull * d->cfg.max_period;
    d->cap_max = pow2_at_least(2ull * d->cfg.max_period);
    if (d->cfg.min_span > d->cap_max)
        d->cfg.min_span = (uint32_t)d->cap_max;
    if (alloc_arrays(d) < 0) {
        free(d);
        return NULL;
    }
    return d;
}

void ub_iterdet_free(ub_iterdet *d)
{
    if (!d)
        return;
    free_arrays(d);
    free(d);
}

int ub_iterdet_locked(const ub_iterdet *d, uint32_t *period, uint64_t *start)
{
    if (d->state != LOCKED)
        return 0;
    if (period)
        *period = d->period;
    if (start)
        *start = d->start;
    return 1;
}

const char *ub_iterdet_gave_up_reason(const ub_iterdet *d)
{
    return d->state == GAVE_UP ? d->gave_up : NULL;
}
