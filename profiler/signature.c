/* Call signatures and sequence hashes (see usbyte/signature.h). */
#include "usbyte/signature.h"

/* Distinct odd constants per field, so that equal values in different fields hash differently. */
#define GOLDEN 0x9e3779b97f4a7c15ull

uint64_t ub_hash_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

uint64_t ub_hash_combine(uint64_t h, uint64_t value)
{
    /* Mixing the running hash before adding the value makes the result depend on the order. */
    return ub_hash_mix64(ub_hash_mix64(h + GOLDEN) ^ value);
}

/* Signed fields (op, peer = -1) go through int64 so that -1 is the same value on every ABI. */
static uint64_t from_int(int v)
{
    return (uint64_t)(int64_t)v;
}

uint64_t ub_sig_portable(const ub_call_sig *c)
{
    uint64_t h = 0x75627974652d7031ull; /* "ubyte-p1": a version of the field list */
    h = ub_hash_combine(h, from_int(c->kind));
    h = ub_hash_combine(h, c->count);
    h = ub_hash_combine(h, from_int(c->dtype));
    h = ub_hash_combine(h, from_int(c->op));
    h = ub_hash_combine(h, from_int(c->peer));
    return h;
}

uint64_t ub_sig_full(const ub_call_sig *c)
{
    uint64_t h = ub_sig_portable(c);
    h = ub_hash_combine(h, (uint64_t)c->stream);
    h = ub_hash_combine(h, (uint64_t)c->sendbuf);
    h = ub_hash_combine(h, (uint64_t)c->recvbuf);
    return h;
}

void ub_seqhash_init(ub_seqhash *s)
{
    s->state = 0x75627974652d7331ull; /* "ubyte-s1" */
    s->n = 0;
}

void ub_seqhash_add(ub_seqhash *s, uint64_t sig)
{
    s->state = ub_hash_combine(s->state, sig);
    s->n++;
}

uint64_t ub_seqhash_value(const ub_seqhash *s)
{
    /* The length closes the hash, so a prefix never hashes like the whole sequence. */
    return ub_hash_combine(s->state, s->n);
}

uint64_t ub_sequence_hash(const uint64_t *sigs, size_t n)
{
    ub_seqhash s;
    ub_seqhash_init(&s);
    for (size_t i = 0; i < n; i++)
        ub_seqhash_add(&s, sigs[i]);
    return ub_seqhash_value(&s);
}
