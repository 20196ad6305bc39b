/* Call signatures: 64-bit hashes of an intercepted NCCL call, used to find iterations in the call
 * sequence (usbyte/iteration.h) and to check across ranks that everyone saw the same sequence.
 *
 * Two signatures exist because of the first law (docs/design.md section 2):
 *  - the PORTABLE signature hashes only what NCCL itself requires to be identical on every rank
 *    of a communicator: the kind of call, the element count, the dtype, the reduction op and the
 *    root/peer.  Every rank of a correct program computes the same portable sequence, so anything
 *    derived from it alone (the iteration lock, the agreement call index, the sequence hash sent
 *    in the agreement collective) is the same on every rank.
 *  - the FULL signature adds what is local to a rank: the stream and the send/recv buffer
 *    addresses (docs/design.md section 5: buffer addresses stay local).  Two ranks differ there,
 *    so the full signature must never decide anything that changes what is issued; use it to
 *    notice that a rank's own calls changed buffers (e.g. compare it at each position once the
 *    iteration is locked on the portable sequence).
 *
 * Hashing works on the numeric values (never on bytes in memory), so it does not depend on the
 * host's endianness; it is deterministic across processes and builds (no random seed).  The mix
 * is the splitmix64 finaliser, applied per field with a per-field constant, so permuting field
 * values (count <-> op) gives different hashes. */
#ifndef USBYTE_SIGNATURE_H
#define USBYTE_SIGNATURE_H

#include <stddef.h>
#include <stdint.h>

typedef struct ub_call_sig {
    /* portable: identical on every rank in a correct program */
    int kind;            /* which operation (the caller's enum, e.g. its X-macro index), canonical:
                            entry points NCCL treats as one operation must get one kind
                            (the runtime gives ncclBcast the kind of ncclBroadcast) */
    uint64_t count;      /* element count as passed to NCCL (bytes = count * dtype size) */
    int dtype;           /* ncclDataType_t value (or ub_dtype: be consistent per process) */
    int op;              /* ncclRedOp_t value, -1 for calls without a reduction */
    int peer;            /* root (broadcast/reduce) or peer (send/recv), -1 when none */
    /* local: differ between ranks; only in the full signature */
    uintptr_t stream;
    uintptr_t sendbuf;
    uintptr_t recvbuf;
} ub_call_sig;

/* splitmix64's finaliser: a bijective 64-bit mix (good avalanche). */
uint64_t ub_hash_mix64(uint64_t x);
/* Order-sensitive combination of a running hash with one value. */
uint64_t ub_hash_combine(uint64_t h, uint64_t value);

/* kind, count, dtype, op, peer. */
uint64_t ub_sig_portable(const ub_call_sig *c);
/* The portable signature combined with stream, sendbuf and recvbuf. */
uint64_t ub_sig_full(const ub_call_sig *c);

/* Order-sensitive hash of a sequence of signatures (portable ones for the cross-rank check); the
 * length is part of the hash, so [] , [0] and [0, 0] all differ.  Equal to feeding the same values
 * to a ub_seqhash one by one. */
uint64_t ub_sequence_hash(const uint64_t *sigs, size_t n);

/* The same, incrementally (no allocation): init, add each signature, value. */
typedef struct ub_seqhash {
    uint64_t state;
    uint64_t n;
} ub_seqhash;
void ub_seqhash_init(ub_seqhash *s);
void ub_seqhash_add(ub_seqhash *s, uint64_t sig);
uint64_t ub_seqhash_value(const ub_seqhash *s);

#endif
