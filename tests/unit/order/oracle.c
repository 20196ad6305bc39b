/* Exhaustive search for the optimum plan on small profiles (see oracle.h). */
#include <float.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "usbyte/model.h"

typedef struct {
    int call;
    uint64_t offset, length;
} atom;

typedef struct {
    double e, tp;     /* link free time; max over sent blocks of end + forward suffix */
    uint32_t from;    /* previous set */
    int from_entry;   /* entry in the previous set's front */
    uint32_t block;   /* atoms of the last block */
} entry;

typedef struct {
    entry *v;
    int n, cap;
} front;

/* Inserts (e, tp) unless an entry dominates it; drops the entries it dominates. */
static void front_insert(front *f, entry x)
{
    for (int i = 0; i < f->n; i++)
        if (f->v[i].e <= x.e && f->v[i].tp <= x.tp)
            return;
    int w = 0;
    for (int i = 0; i < f->n; i++)
        if (!(x.e <= f->v[i].e && x.tp <= f->v[i].tp))
            f->v[w++] = f->v[i];
    f->n = w;
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 4;
        f->v = realloc(f->v, sizeof(entry) * (size_t)f->cap);
        if (!f->v)
            abort();
    }
    f->v[f->n++] = x;
}

/* The search's input: the atoms (each call cut into `pieces` at whole elements), each call's
 * merge group, and per set of atoms X taken as one block: valid, ready time r, cost and the
 * forward time W that waits for it. */
typedef struct {
    const ub_profile *prof;
    atom atoms[ORACLE_MAX_ATOMS];
    int A;
    int group[ORACLE_MAX_ATOMS];
    double suffix[256]; /* forward time from segment s to the end */
    uint32_t full;
    bool *valid;
    double *r, *cost, *W;
} oracle;

static void cut_atoms(oracle *o, int pieces)
{
    const ub_profile *prof = o->prof;
    o->A = 0;
    for (int k = 0; k < prof->n_calls; k++) {
        uint64_t bytes = prof->calls[k].bytes, prev = 0;
        for (int j = 1; j <= pieces; j++) {
            uint64_t cut = j == pieces ? bytes : bytes * (uint64_t)j / (uint64_t)pieces;
            if (j < pieces)
                cut = ub_cut_floor(prof, k, cut); /* whole elements, and the profile's align */
            if (cut > prev) {
                o->atoms[o->A++] = (atom){k, prev, cut - prev};
                prev = cut;
            }
        }
    }
}

/* Every possible block: validity, ready, cost and forward gate. */
static void block_table(oracle *o)
{
    const ub_profile *prof = o->prof;
    o->valid = calloc(o->full + 1, sizeof(bool));
    o->r = calloc(o->full + 1, sizeof(double));
    o->cost = calloc(o->full + 1, sizeof(double));
    o->W = calloc(o->full + 1, sizeof(double));
    if (!o->valid || !o->r || !o->cost || !o->W)
        abort();
    for (uint32_t X = 1; X <= o->full; X++) {
        int first = -1;
        bool ok = true, staged = false;
        double bytes = 0.0, ready = 0.0, w = -DBL_MAX;
        for (int a = 0; a < o->A && ok; a++) {
            if (!(X >> a & 1))
                continue;
            int k = o->atoms[a].call;
            const ub_call *c = &prof->calls[k];
            if (first < 0) {
                first = k;
            } else if (k != first) {
                staged = true;
                const ub_call *c0 = &prof->calls[first];
                ok = c->dtype == c0->dtype && c->op == c0->op && o->group[k] == o->group[first];
            }
            bytes += (double)o->atoms[a].length;
            if (c->ready > ready)
                ready = c->ready;
            if (o->suffix[c->need] > w)
                w = o->suffix[c->need];
        }
        o->valid[X] = ok && (!staged || ub_staging_fits(prof, bytes));
        o->r[X] = ready;
        o->cost[X] = ub_block_cost(prof, bytes, staged);
        o->W[X] = w;
    }
}

/* The Pareto fronts of (link free, forward end) over every set of atoms sent, F[0] to F[full]. */
static front *search(const oracle *o)
{
    int n = o->prof->n_calls;
    /* Blocks go in merge-group order (docs/model.md): a block of group g may follow only when
     * every atom of the groups before g has been sent and none of the groups after it. */
    uint32_t before[ORACLE_MAX_ATOMS + 1] = {0}, after[ORACLE_MAX_ATOMS + 1] = {0};
    for (int a = 0; a < o->A; a++)
        for (int h = 0; h <= o->group[n - 1]; h++) {
            if (o->group[o->atoms[a].call] < h)
                before[h] |= 1u << a;
            if (o->group[o->atoms[a].call] > h)
                after[h] |= 1u << a;
        }
    front *F = calloc(o->full + 1, sizeof(front));
    if (!F)
        abort();
    front_insert(&F[0], (entry){0.0, -DBL_MAX, 0, -1, 0});
    /* A transition adds atoms, so sets only grow: numeric order visits every set after all
     * of its subsets. */
    for (uint32_t S0 = 0; S0 < o->full; S0++) {
        if (F[S0].n == 0)
            continue;
        uint32_t comp = o->full & ~S0;
        for (uint32_t X = comp; X; X = (X - 1) & comp) {
            if (!o->valid[X])
                continue;
            int gx = o->group[o->atoms[__builtin_ctz(X)].call]; /* a valid block is one group */
            if ((S0 & before[gx]) != before[gx] || (S0 & after[gx]))
                continue;
            for (int i = 0; i < F[S0].n; i++) {
                const entry *p = &F[S0].v[i];
                double e = (o->r[X] > p->e ? o->r[X] : p->e) + o->cost[X];
                double tp = e + o->W[X] > p->tp ? e + o->W[X] : p->tp;
                front_insert(&F[S0 | X], (entry){e, tp, S0, i, X});
            }
        }
        /* Entries of S0 are still needed for reconstruction; keep them. */
    }
    return F;
}

/* The plan of entry `best` of the full set's front: walks back to recover the blocks, then
 * emits them in order. */
static void emit_plan(const oracle *o, const front *F, int best, ub_plan *out)
{
    uint32_t blocks[ORACLE_MAX_ATOMS];
    int nb = 0;
    uint32_t set = o->full;
    int idx = best;
    while (set) {
        const entry *p = &F[set].v[idx];
        blocks[nb++] = p->block;
        idx = p->from_entry;
        set = p->from;
    }
    ub_plan_clear(out);
    for (int b = nb - 1; b >= 0; b--) {
        ub_plan_begin_block(out);
        for (int a = 0; a < o->A; a++)
            if (blocks[b] >> a & 1) {
                const atom *t = &o->atoms[a];
                /* atoms of one call are consecutive: extend the previous segment when adjacent */
                ub_segment *last = out->blocks[out->n_blocks - 1].n_segments
                                       ? &out->segments[out->n_segments - 1]
                                       : NULL;
                if (last && last->call == t->call && last->offset + last->length == t->offset)
                    last->length += t->length;
                else
                    ub_plan_add_segment(out, t->call, t->offset, t->length);
            }
    }
}

double oracle_optimum(const ub_profile *prof, int pieces, ub_plan *out)
{
    int n = prof->n_calls;
    if (n < 1 || pieces < 1 || n * pieces > ORACLE_MAX_ATOMS)
        return -1.0;
    oracle o = {.prof = prof};
    cut_atoms(&o, pieces);
    /* forward suffix per call, merge groups */
    int S = prof->n_forward;
    if (S > 255)
        return -1.0;
    o.suffix[S] = 0.0;
    for (int s = S - 1; s >= 0; s--)
        o.suffix[s] = o.suffix[s + 1] + prof->forward[s];
    double BgF = prof->backward_end + prof->gap + o.suffix[0];
    for (int k = 0, g = 0; k < n; k++) {
        o.group[k] = g;
        if (!prof->calls[k].merge)
            g++;
    }
    o.full = (1u << o.A) - 1;
    block_table(&o);
    front *F = search(&o);
    int best = -1;
    double best_t = DBL_MAX;
    for (int i = 0; i < F[o.full].n; i++) {
        double t = F[o.full].v[i].tp > BgF ? F[o.full].v[i].tp : BgF;
        if (t < best_t) {
            best_t = t;
            best = i;
        }
    }
    emit_plan(&o, F, best, out);
    for (uint32_t X = 0; X <= o.full; X++)
        free(F[X].v);
    free(F);
    free(o.valid);
    free(o.r);
    free(o.cost);
    free(o.W);
    return ub_evaluate_const(prof, out, NULL);
}
